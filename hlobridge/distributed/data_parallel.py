"""Data parallelism on a graph as it was written (the Horovod model): `Session(graph,
data_parallel=True)` on every rank, each rank feeding its shard of the batch.

The graph is rewritten once, when the Session is made:
- the gradient input of every optimizer op (`ApplyGradientDescent`'s `delta`, the `grad` of
  `ResourceApplyAdam`, `ApplyMomentum` and every other `[Resource]Apply*` of ops/control/state.py's
  OPTIMIZERS table) is routed through a `_HlobridgeAllReduce` node (ops/collective/allreduce.py)
  that averages it over the ranks. Gradients are grouped in buckets (one dtype, at most
  `bucket_bytes`, in backward-pass order: the last layer's first), one all-reduce per bucket.
  Graphs whose optimizer is plain arithmetic (Keras 3 optimizers write AssignSubVariableOp)
  name their gradient tensors instead: `data_parallel=["grad_w:0", ...]`;
- on ranks other than 0, the ops that write checkpoints (SaveV2, MergeV2Checkpoints) become
  NoOps with the same dependencies: one writer, rank 0, as Horovod scripts arrange by hand.

The all-reduce nodes never compile (clustering reason `collective`): each is a unit of the
plan between compiled clusters, and a cluster that would span one splits there; `explain`
and `Session.clustering` show them. Each run of a plan with collectives first checks that
every rank runs the same collectives in the same order (one small all-reduce of the plan's
fingerprint; a mismatch is refused before anything is reduced), and variables are broadcast
from rank 0 before the first such run and after any run that changed them without a
collective (the initializer, a restore): ranks start equal and stay equal.
"""

from __future__ import annotations

import hashlib
from contextlib import contextmanager
from dataclasses import replace

import numpy as np

from .. import dtypes
from ..errors import GraphError, HlobridgeError
from ..frontend.graph import Graph, Node, TensorRef, node_from_def
from ..frontend.graph_builder import encode_attr
from ..frontend.proto import schema
from ..ops.collective.allreduce import OP as ALLREDUCE
from ..ops.kinds import COLLECTIVES
from ..ops.signatures import signatures
from ..ops.control.state import OPTIMIZERS, RESOURCE_ONLY, VariableHandle
from ..runtime.host import to_host
from . import world as worlds

BUCKET_BYTES = 64 << 20  # per all-reduce: large enough to amortise latency, small enough to pipeline
GRADIENT_ARGS = ("grad", "delta")  # what TF's optimizer ops call their gradient input
CHECKPOINT_WRITERS = frozenset({"SaveV2", "MergeV2Checkpoints", "Save", "SaveSlices"})
SCOPE = "hlobridge_data_parallel"


def _optimizer_ops() -> dict[str, int]:
    """{optimizer op: index of its gradient input}, from TF's op signatures."""
    sigs = signatures()
    out = {}
    for suffix in OPTIMIZERS:
        for op in ([f"Apply{suffix}"] if suffix not in RESOURCE_ONLY else []) + [f"ResourceApply{suffix}"]:
            names = [name for name, _ in sigs[op]["inputs"]]
            out[op] = next(i for i, n in enumerate(names) if n in GRADIENT_ARGS)
    return out


OPTIMIZER_GRADIENT = _optimizer_ops()


def _var_bytes(graph: Graph, node: Node) -> int:
    """Bytes of the variable an optimizer op updates (its input 0), 0 when unknown."""
    ref = node.inputs[0]
    seen = 0
    while graph.nodes[ref.node].op == "Identity" and seen < 8:
        ref, seen = graph.nodes[ref.node].inputs[0], seen + 1
    var = graph.nodes[ref.node]
    shape = var.attrs.get("shape")
    dims = getattr(shape, "dims", shape)
    dtype = var.attrs.get("dtype")
    if dims is None or dtype is None or not isinstance(dtype, np.dtype) or any(d is None or d < 0 for d in dims):
        return 0
    return int(np.prod(dims, dtype=np.int64)) * np.dtype(dtype).itemsize


def _gradients(graph: Graph) -> list[tuple[TensorRef, object, int]]:
    """(gradient, dtype, bytes) per optimizer op's gradient, in backward-pass order, each once."""
    sparse = [n for n in graph.order if "SparseApply" in graph.nodes[n].op]
    if sparse:
        raise HlobridgeError(f"data_parallel: sparse optimizer op(s) {', '.join(sparse[:5])} are not "
                             f"averaged (their gradients' rows differ per rank); use a dense optimizer")
    grads, seen = [], set()
    for name in reversed(graph.order):
        node = graph.nodes[name]
        index = OPTIMIZER_GRADIENT.get(node.op)
        if index is None or node.inputs[index] in seen:
            continue
        seen.add(node.inputs[index])
        grads.append((node.inputs[index], node.attrs.get("T"), _var_bytes(graph, node)))
    return grads


def buckets(grads, bucket_bytes: int) -> list[list[TensorRef]]:
    """Consecutive gradients of one dtype, at most `bucket_bytes` each (a larger one alone)."""
    out, open_by_dtype = [], {}
    for ref, dtype, size in grads:
        key = str(dtype)
        bucket = open_by_dtype.get(key)
        if bucket is None or (bucket[1] + size > bucket_bytes and bucket[0]):
            bucket = open_by_dtype[key] = [[], 0]
            out.append(bucket)
        bucket[0].append(ref)
        bucket[1] += size
    return [refs for refs, _ in out]


def _make_node(name: str, op: str, inputs: list[str], controls=(), **attrs) -> Node:
    nd = schema.NodeDef(name=name, op=op)
    nd.input.extend(list(inputs) + [f"^{c}" for c in controls])
    for k, v in attrs.items():
        nd.attr[k].CopyFrom(encode_attr(v))
    return node_from_def(nd)


def _with_inputs(node: Node, inputs: list[TensorRef]) -> Node:
    nd = None
    if node.node_def is not None:
        nd = schema.NodeDef()
        nd.CopyFrom(node.node_def)
        del nd.input[:]
        nd.input.extend([str(r) for r in inputs] + [f"^{c}" for c in node.control_inputs])
    return replace(node, inputs=list(inputs), node_def=nd)


def _rewritten(graph: Graph, groups: list[list[TensorRef]], dtype_of: dict, rank: int) -> Graph:
    """`graph` with one all-reduce per group before its consumers, and rank 0's writers only."""
    averaged, inserted = {}, {}
    for k, refs in enumerate(groups):
        name = f"{SCOPE}/allreduce_{k}"
        inserted[name] = _make_node(name, ALLREDUCE, [str(r) for r in refs],
                                    T=[dtype_of[r] for r in refs], bucket=k)
        averaged.update({r: TensorRef(name, j) for j, r in enumerate(refs)})
    nodes, placed = [], set()
    for name in graph.nodes:  # GraphDef order; each all-reduce just before its first reader
        node = graph.nodes[name]
        new_inputs = [averaged.get(r, r) for r in node.inputs]
        for r in new_inputs:
            if r.node in inserted and r.node not in placed:
                nodes.append(inserted[r.node])
                placed.add(r.node)
        if rank != 0 and node.op in CHECKPOINT_WRITERS:
            controls = sorted({r.node for r in node.inputs} | set(node.control_inputs))
            nodes.append(_make_node(name, "NoOp", [], controls))
            continue
        nodes.append(_with_inputs(node, new_inputs) if new_inputs != node.inputs else node)
    return Graph(nodes, library=graph.library, source=graph.source, function_library=graph.function_library)


def rewrite(graph: Graph, rank: int, gradients=None, bucket_bytes: int = BUCKET_BYTES) -> Graph:
    """The data-parallel graph (module docstring). `gradients`: tensor names to average instead
    of the optimizer ops' gradient inputs."""
    if gradients is not None:
        refs = [graph.tensor(g) for g in gradients]
        grads = [(r, _dtype_of(graph, r), 0) for r in refs]
    else:
        grads = _gradients(graph)
        if not grads:
            raise HlobridgeError(
                f"data_parallel: {graph.source} has no optimizer op ({', '.join(sorted(OPTIMIZER_GRADIENT)[:3])}, "
                f"...): name the gradient tensors to average, data_parallel=['grad:0', ...]")
    dtype_of = {r: d for r, d, _ in grads}
    try:
        return _rewritten(graph, buckets(grads, bucket_bytes), dtype_of, rank)
    except GraphError:  # a bucket joined a gradient with one that waits for an update: one each
        return _rewritten(graph, [[r] for r, _, _ in grads], dtype_of, rank)


def _dtype_of(graph: Graph, ref: TensorRef):
    node = graph.nodes[ref.node]
    dtype = node.attrs.get("T", node.attrs.get("dtype"))
    if not isinstance(dtype, np.dtype):
        raise HlobridgeError(f"data_parallel: cannot tell the dtype of gradient '{ref}' ({node.op}); "
                             f"name a tensor whose op has a T or dtype attribute")
    return dtype


def collectives_of(plan) -> list[str]:
    """'name op (specs)' per collective unit of `plan`, in the order the plan issues them."""
    out = []
    for unit in plan.units:
        node = getattr(unit, "node", None)
        if node is not None and node.op in COLLECTIVES:
            where = " on the device" if getattr(unit, "where", "host") == "device" else ""
            out.append(f"{unit.name} {node.op} ({', '.join(map(str, unit.in_specs))}){where}")
    return out


class DataParallel:
    """What a data-parallel Session adds around its runs (see the module docstring)."""

    def __init__(self, world, gradients=None, bucket_bytes: int = BUCKET_BYTES):
        self.world = world
        self.gradients = gradients
        self.bucket_bytes = bucket_bytes
        self.in_sync = False  # whether the ranks' variables are known to be equal
        self._issued: dict[int, list[str]] = {}  # id(plan) -> its collectives (plans live as long as the Session)
        self.placements: dict = {}  # all-reduce node -> device_unit.Placement, as the last plan chose

    @classmethod
    def for_session(cls, data_parallel) -> "DataParallel":
        """From Session's `data_parallel` argument: True, or the gradient tensors' names."""
        if not worlds.is_initialized():
            raise HlobridgeError("Session(data_parallel=...) needs hlobridge.distributed.init() first "
                                 "(launch with mpiexec -n N python script.py)")
        gradients = None if data_parallel is True else list(data_parallel)
        return cls(worlds.current(), gradients)

    def rewrite(self, graph: Graph) -> Graph:
        """The graph this rank runs."""
        return rewrite(graph, self.world.rank, self.gradients, self.bucket_bytes)

    def place(self, steps: dict, jit: str, config, cache) -> None:
        """Replace, in a plan's `steps` (node -> NodeStep), each gradient all-reduce that runs
        on the device (device_unit.placement: a `cuda` Session on IREE's NCCL channel) by a
        DeviceAllReduce unit; the others keep their host kernel. `config`: the Session's
        JitConfig (device, compile options), `cache`: its CompileCache."""
        from .device_unit import DeviceAllReduce, placement

        for name, step in steps.items():
            if step.node.op != ALLREDUCE:
                continue
            where = self.placements[name] = placement(config.device, config.options.backend, jit, self.world,
                                                      step.in_specs)
            if where.where == "device":
                steps[name] = DeviceAllReduce(step, self.world.size, config.options, config.device, cache)

    @contextmanager
    def step(self, plan, variables):
        """Around one run of `plan`: agree on its collectives and sync variables before it;
        after it, note whether it changed variables without the ranks' agreement."""
        issued = self._issued.get(id(plan))
        if issued is None:
            issued = self._issued[id(plan)] = collectives_of(plan)
        if issued:
            self.agree(issued)
            if not self.in_sync:
                self.broadcast_variables(variables)
                self.in_sync = True
            yield
            return
        before = dict(variables.values)
        yield
        if variables.values.keys() != before.keys() or any(variables.values[k] is not v for k, v in before.items()):
            self.in_sync = False  # e.g. the initializer ran: broadcast before the next training step

    def agree(self, issued: list[str]) -> None:
        """Refuse to run when the ranks would issue different collectives, naming the first
        difference: one all-reduce of the fingerprint (max and -min) per run."""
        digest = int.from_bytes(hashlib.sha1("\n".join(issued).encode()).digest()[:7], "little")
        both = self.world.allreduce(np.array([digest, -digest], np.int64), "data_parallel: the plans' "
                                    "collective order", op="max")
        if both[0] == -both[1]:
            return
        everyone = [b.decode().split("\n") for b in
                    self.world.allgather_bytes("\n".join(issued).encode(), "data_parallel: collective lists")]
        raise worlds.CollectiveError(_first_difference(everyone))

    def broadcast_variables(self, variables) -> None:
        """Every variable takes rank 0's value: one broadcast per dtype."""
        names = sorted(variables.values)
        listed = self.world.allgather_bytes("\n".join(names).encode(), "data_parallel: variable names")
        if len(set(listed)) != 1:
            raise worlds.CollectiveError("data_parallel: the ranks hold different variables: "
                                         + _first_difference([b.decode().split("\n") for b in listed]))
        by_dtype: dict = {}
        for name in names:
            value = np.asarray(to_host(variables.values[name]))
            by_dtype.setdefault(value.dtype.str, []).append((name, value))
        for key in sorted(by_dtype):
            items = by_dtype[key]
            if np.dtype(key).kind not in "biufc":
                continue  # strings and handles stay per rank
            flat = np.concatenate([v.reshape(-1) for _, v in items])
            flat = self.world.broadcast(flat, f"data_parallel: broadcast of {len(items)} {dtypes.name(flat.dtype)} "
                                               f"variable(s) from rank 0")
            at = 0
            for name, v in items:
                variables.write(VariableHandle(name, v.dtype, v.shape), flat[at: at + v.size].reshape(v.shape))
                at += v.size


def _first_difference(lists: list[list[str]]) -> str:
    """'rank r issues X where rank 0 issues Y (collective #i)' for the first difference."""
    base = lists[0]
    for r, other in enumerate(lists[1:], 1):
        for i in range(max(len(base), len(other))):
            a = base[i] if i < len(base) else "nothing"
            b = other[i] if i < len(other) else "nothing"
            if a != b:
                return (f"refused before running: ranks would issue collectives in different orders: "
                        f"collective #{i + 1} is '{a}' on rank 0 but '{b}' on rank {r}")
    return "refused before running: ranks would issue different collectives"
