"""TensorFlow's collective ops, as `tf.distribute` (MultiWorkerMirroredStrategy) writes them,
run over the MPI world of hlobridge.distributed.

What TF does: each op names its group and instance by integer keys (`group_key`,
`instance_key`; attributes in V1, input tensors in V2); the runtime matches the ops of one
instance across workers, and the group's members are ordered by device name (task index).
hlobridge's mapping: the group is the MPI world (its `group_size` must equal the world's size:
a subgroup is refused), a worker is an MPI rank (launch rank r as TF task r), and instances are
matched by order, as every rank runs the same plan: the k-th run of an instance key on one rank
meets the k-th on the others (TF's "one instance per loop iteration"). Before its data moves,
each op checks that every rank is at the same op: one small gather of "op, group key, instance
key, dtype" (which also tells a broadcast's receivers who sends). A mismatch is an error
naming the node on both sides. `timeout_seconds` > 0 is that collective's deadline.

Semantics (TF's kernels in core/kernels/collective_ops.cc): reduce merges with `merge_op`
(Add, Mul, Min, Max) and then applies `final_op` (Id, or Div by the group size); gather
concatenates the ranks' tensors on axis 0 in rank order; reduce-scatter reduces, then gives
rank i the i-th of `group_size` equal chunks of axis 0; all-to-all sends the j-th chunk of
axis 0 to rank j; broadcast gives every rank the sender's tensor. `CollectiveAssignGroupV2`
is arithmetic on its inputs (no communication). `NcclAllReduce` (MirroredStrategy's
in-process all-reduce between the GPUs of one process) is refused when the plan is made:
hlobridge runs one device per process.
"""

from __future__ import annotations

import numpy as np

from ...distributed import world as worlds
from ...errors import HlobridgeError
from ...spec import TensorSpec
from ..registry import register

MERGE = {"Add": "sum", "Mul": "prod", "Min": "min", "Max": "max"}
COMMON = ("T", "communication_hint", "timeout_seconds")
V1_KEYS = ("group_size", "group_key", "instance_key")
V2_ORDERED = ("is_stateless", "Nordering_token")


class Call:
    """One run of a collective node: its world, keys and deadline, checked against the group."""

    def __init__(self, ctx, kind: str, keys: tuple, dtype):
        self.ctx, self.kind = ctx, kind
        self.world = worlds.current()
        self.group_size, self.group_key, self.instance_key = (int(np.asarray(k)) for k in keys)
        self.dtype = np.dtype(dtype)
        timeout = float(ctx.attr("timeout_seconds", 0.0) or 0.0)
        self.timeout = timeout if timeout > 0 else None
        self.what = (f"node '{ctx.name}' ({ctx.op}, group_key {self.group_key}, instance_key "
                     f"{self.instance_key})")
        if self.group_size != self.world.size:
            raise HlobridgeError(f"{self.what}: group_size {self.group_size}, but the MPI world has "
                                 f"{self.world.size} rank(s): hlobridge's collective groups are the whole world")

    def meet(self, role: str = "") -> list[str]:
        """Check every rank is at the same collective; each rank's role ("send"/"recv" or "")."""
        mine = f"{self.kind} group_key={self.group_key} instance_key={self.instance_key} {self.dtype}"
        everyone = [b.decode() for b in self.world.allgather_bytes(
            f"{mine}|{role}|{self.ctx.name}".encode(), f"{self.what}: matching the ranks", self.timeout)]
        for rank, entry in enumerate(everyone):
            theirs, _, node = entry.split("|")
            if theirs != mine:
                raise worlds.CollectiveError(
                    f"{self.what}: rank {rank} is at node '{node}' ({theirs}) where rank {self.world.rank} "
                    f"is at {mine}: the ranks run different collectives")
        return [e.split("|")[1] for e in everyone]

    def finish(self, reduced: np.ndarray) -> np.ndarray:
        """TF's final_op on a merged tensor: Id, or Div by the group size (truncating for integers)."""
        final = self.ctx.attr("final_op")
        if final == "Id":
            return reduced
        if final != "Div":
            raise HlobridgeError(f"{self.what}: final_op '{final}' (TF knows Id and Div)")
        if self.dtype.kind in "iu":
            return (np.sign(reduced) * (np.abs(reduced) // self.group_size)).astype(self.dtype)
        return (reduced / np.asarray(self.group_size, self.dtype)).astype(self.dtype)

    def merged(self, x) -> np.ndarray:
        """The merge_op of `x` over the ranks, final_op applied."""
        merge = self.ctx.attr("merge_op")
        if merge not in MERGE:
            raise HlobridgeError(f"{self.what}: merge_op '{merge}' (TF knows {', '.join(MERGE)})")
        self.meet()
        x = np.asarray(x, self.dtype)
        return self.finish(self.world.allreduce(x, self.what, MERGE[merge], self.timeout))

    def chunks(self, x) -> np.ndarray:
        """`x`, checked to split on axis 0 into group_size equal chunks."""
        x = np.asarray(x, self.dtype)
        if x.ndim == 0 or x.shape[0] % self.group_size:
            raise HlobridgeError(f"{self.what}: axis 0 of the input {x.shape} does not split into "
                                 f"{self.group_size} equal chunks")
        return x


def _keys(ctx, args, v2: bool) -> tuple:
    """(group_size, group_key, instance_key): inputs 1-3 (V2) or attributes (V1)."""
    return tuple(args[1:4]) if v2 else tuple(ctx.attr(k) for k in V1_KEYS)


def _gather(world, call: Call, x: np.ndarray) -> np.ndarray:
    """The ranks' tensors concatenated on axis 0 (their first dimensions may differ)."""
    rows = world.allgather(np.array([x.shape[0] if x.ndim else 1], np.int64), call.what, call.timeout)[:, 0]
    padded = np.zeros((int(rows.max()),) + x.shape[1:], x.dtype)
    padded[: x.shape[0]] = x
    every = world.allgather(padded, call.what, call.timeout)
    return np.concatenate([every[r, : rows[r]] for r in range(world.size)])


def _reduce_kernel(v2):
    def kernel(ctx, *args):
        return Call(ctx, "reduce", _keys(ctx, args, v2), ctx.attr("T")).merged(args[0])
    return kernel


def _gather_kernel(v2):
    def kernel(ctx, *args):
        call = Call(ctx, "gather", _keys(ctx, args, v2), ctx.attr("T"))
        x = np.asarray(args[0], call.dtype)
        if x.ndim == 0:
            raise HlobridgeError(f"{call.what}: a gather needs a tensor of rank 1 or more, got a scalar")
        call.meet()
        return _gather(call.world, call, x)
    return kernel


def _bcast(call: Call, role: str, value: np.ndarray) -> np.ndarray:
    roles = call.meet(role)
    senders = [r for r, x in enumerate(roles) if x == "send"]
    if len(senders) != 1:
        raise worlds.CollectiveError(f"{call.what}: {len(senders)} rank(s) send this broadcast "
                                     f"({', '.join(map(str, senders)) or 'none'}); exactly one must")
    return call.world.broadcast(value, call.what, root=senders[0], timeout=call.timeout)


def _send_kernel(v2):
    def kernel(ctx, *args):
        call = Call(ctx, "broadcast", _keys(ctx, args, v2), ctx.attr("T"))
        return _bcast(call, "send", np.asarray(args[0], call.dtype))
    return kernel


def _recv_kernel(v2):
    def kernel(ctx, *args):
        keys = tuple(args[0:3]) if v2 else tuple(ctx.attr(k) for k in V1_KEYS)
        call = Call(ctx, "broadcast", keys, ctx.attr("T"))
        shape = tuple(int(d) for d in (np.asarray(args[3]) if v2 else ctx.attr("shape")))
        return _bcast(call, "recv", np.zeros(shape, call.dtype))
    return kernel


def _reduce_scatter_kernel(ctx, *args):
    call = Call(ctx, "reduce_scatter", _keys(ctx, args, True), ctx.attr("T"))
    x = call.chunks(args[0])
    return np.split(call.merged(x), call.group_size)[call.world.rank]


def _all_to_all_kernel(ctx, *args):
    call = Call(ctx, "all_to_all", _keys(ctx, args, True), ctx.attr("T"))
    x = call.chunks(args[0])
    call.meet()
    return call.world.alltoall(x, call.what, call.timeout)


def _assign_group_kernel(ctx, assignment, device_index, base_key):
    """TF's CollectiveAssignGroupV2: the row of `assignment` holding `device_index` is the group:
    (its length, base_key + its row number)."""
    assignment = np.asarray(assignment)
    for row, members in enumerate(assignment):
        if int(device_index) in members.tolist():
            return [np.int32(len(members)), np.int32(int(base_key) + row)]
    raise HlobridgeError(f"node '{ctx.name}' (CollectiveAssignGroupV2): device_index {int(device_index)} "
                         f"is in no row of group_assignment {assignment.tolist()}")


def _refuse_nccl(ctx):
    raise ctx.error("NcclAllReduce is MirroredStrategy's all-reduce between the GPUs of one process; "
                    "hlobridge runs one device per process: write the graph with MultiWorkerMirroredStrategy "
                    "(CollectiveReduceV2), or train a single-device graph with Session(data_parallel=True)",
                    HlobridgeError)


def _same(ctx):
    return [TensorSpec(ctx.attr("T"), ctx.inputs[0].shape)]


def _const_int(ctx, i):
    value = ctx.inputs[i].value
    return None if value is None else int(np.asarray(value))


def _gathered(v2):
    def infer(ctx):
        shape = ctx.inputs[0].shape
        size = _const_int(ctx, 1) if v2 else ctx.attr("group_size")
        if shape is None or not shape:
            return [TensorSpec(ctx.attr("T"), None)]
        first = None if size is None or shape[0] is None else shape[0] * size
        return [TensorSpec(ctx.attr("T"), (first,) + tuple(shape[1:]))]
    return infer


def _scattered(ctx):
    shape, size = ctx.inputs[0].shape, _const_int(ctx, 1)
    if shape is None or not shape:
        return [TensorSpec(ctx.attr("T"), shape)]
    first = None if size is None or shape[0] is None else shape[0] // size
    return [TensorSpec(ctx.attr("T"), (first,) + tuple(shape[1:]))]


def _received(v2):
    def infer(ctx):
        if not v2:
            return [TensorSpec(ctx.attr("T"), tuple(ctx.attr("shape")))]
        value = ctx.inputs[3].value
        return [TensorSpec(ctx.attr("T"), None if value is None else tuple(int(d) for d in np.asarray(value)))]
    return infer


REDUCE = ("merge_op", "final_op")
V1 = V1_KEYS
register("CollectiveReduce", infer=_same, kernel=_reduce_kernel(False), stateful=True,
         attrs=COMMON + V1 + REDUCE + ("subdiv_offsets", "wait_for"))
register("CollectiveReduceV2", infer=_same, kernel=_reduce_kernel(True), stateful=True,
         attrs=COMMON + REDUCE + V2_ORDERED + ("max_subdivs_per_device",))
register("CollectiveGather", infer=_gathered(False), kernel=_gather_kernel(False), stateful=True,
         attrs=COMMON + V1 + ("shape",))
register("CollectiveGatherV2", infer=_gathered(True), kernel=_gather_kernel(True), stateful=True,
         attrs=COMMON + V2_ORDERED)
register("CollectiveBcastSend", infer=_same, kernel=_send_kernel(False), stateful=True, attrs=COMMON + V1 + ("shape",))
register("CollectiveBcastSendV2", infer=_same, kernel=_send_kernel(True), stateful=True, attrs=COMMON)
register("CollectiveBcastRecv", infer=_received(False), kernel=_recv_kernel(False), stateful=True,
         attrs=COMMON + V1 + ("shape",))
register("CollectiveBcastRecvV2", infer=_received(True), kernel=_recv_kernel(True), stateful=True,
         attrs=COMMON + ("Tshape",))
register("CollectiveReduceScatterV2", infer=_scattered, kernel=_reduce_scatter_kernel, stateful=True,
         attrs=COMMON + REDUCE + V2_ORDERED + ("max_subdivs_per_device",))
register("CollectiveAllToAllV2", infer=_same, kernel=_all_to_all_kernel, stateful=True, attrs=COMMON + V2_ORDERED)
register("CollectiveAssignGroupV2", infer=lambda ctx: [TensorSpec(np.dtype("int32"), ())] * 2,
         kernel=_assign_group_kernel, attrs=(), output_args=("group_size", "group_key"))
register("NcclAllReduce", infer=_refuse_nccl, attrs=("reduction", "T", "num_devices", "shared_name"), stateful=True)
