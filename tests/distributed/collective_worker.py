"""One rank running TensorFlow's collective ops in a graph, launched by
tests/distributed/test_tf_collectives.py:

    mpiexec -n 2 python -m tests.distributed.collective_worker OUT_DIR {ops|mismatch|timeout}

`ops`: every collective on this rank's input (`x` = arange + 100 * rank), results pickled to
OUT_DIR/rank<r>.pkl. `mismatch`: rank 0 reduces where rank 1 gathers under the same keys.
`timeout`: only rank 0 reduces, with timeout_seconds=2. Errors go to OUT_DIR/rank<r>.error.
"""

import pickle
import sys
import time
from pathlib import Path

import numpy as np

import hlobridge
import hlobridge.distributed as dist
from hlobridge.errors import HlobridgeError
from hlobridge.frontend.graph_builder import GraphBuilder, Shape

F32, I32 = np.dtype("float32"), np.dtype("int32")


def keys(b, instance):
    return [b.const(f"size{instance}", np.int32(2)), b.const(f"group{instance}", np.int32(7)),
            b.const(f"instance{instance}", np.int32(instance))]


class Chained(GraphBuilder):
    """Each collective after the previous one (a control edge), as tf.distribute orders its
    collectives: ranks whose graphs differ (the chief sends a broadcast, the others receive)
    then issue them in the same order."""

    last = None

    def op(self, op, inputs=(), **kw):
        if op.startswith("Collective") and self.last is not None:
            kw["control_inputs"] = [self.last]
        out = super().op(op, inputs, **kw)
        if op.startswith("Collective"):
            self.last = out if isinstance(out, str) else out[0]
        return out


def ops_graph(rank):
    b = Chained()
    x = b.placeholder("x", F32, (4, 3))
    n = b.placeholder("n", I32, (3,))
    b.op("CollectiveReduceV2", [x, *keys(b, 1)], name="mean", T=F32, merge_op="Add", final_op="Div")
    b.op("CollectiveReduceV2", [x, *keys(b, 2)], name="max", T=F32, merge_op="Max", final_op="Id",
         timeout_seconds=30.0)
    b.op("CollectiveReduceV2", [n, *keys(b, 3)], name="int_mean", T=I32, merge_op="Add", final_op="Div")
    b.op("CollectiveReduce", [x], name="v1_product", T=F32, group_size=2, group_key=7, instance_key=4,
         merge_op="Mul", final_op="Id", subdiv_offsets=[0])
    b.op("CollectiveGatherV2", [x, *keys(b, 5)], name="gather", T=F32)
    b.op("CollectiveGather", [x], name="v1_gather", T=F32, group_size=2, group_key=7, instance_key=6,
         shape=Shape((4, 3)))
    b.op("CollectiveReduceScatterV2", [x, *keys(b, 7)], name="scatter", T=F32, merge_op="Add", final_op="Id")
    b.op("CollectiveAllToAllV2", [x, *keys(b, 8)], name="all_to_all", T=F32)
    if rank == 0:  # the chief sends, as tf.distribute writes it
        b.op("CollectiveBcastSendV2", [x, *keys(b, 9)], name="bcast", T=F32)
        b.op("CollectiveBcastSend", [x], name="v1_bcast", T=F32, group_size=2, group_key=7, instance_key=10,
             shape=Shape((4, 3)))
    else:
        b.op("CollectiveBcastRecvV2", [*keys(b, 9), b.const("shape", np.array([4, 3], np.int32))],
             name="bcast", T=F32, Tshape=I32)
        b.op("CollectiveBcastRecv", [], name="v1_bcast", T=F32, group_size=2, group_key=7, instance_key=10,
             shape=Shape((4, 3)))
    b.op("CollectiveAssignGroupV2", [b.const("assignment", np.array([[0, 2], [1, 3]], np.int32)),
                                     b.const("device", np.int32(rank)), b.const("base", np.int32(100))],
         name="assign", num_outputs=2)
    return b.graph()


FETCHES = ["mean:0", "max:0", "int_mean:0", "v1_product:0", "gather:0", "v1_gather:0", "scatter:0",
           "all_to_all:0", "bcast:0", "v1_bcast:0", "assign:0", "assign:1"]


def single(op, instance, **attrs):
    b = GraphBuilder()
    x = b.placeholder("x", F32, (4, 3))
    b.op(op, [x, *keys(b, instance)], name="c", T=F32, **attrs)
    return b.graph()


def main(out_dir, phase):
    rank, _ = dist.init()
    out = Path(out_dir)
    x = (np.arange(12, dtype=np.float32).reshape(4, 3) + 100 * rank)
    feeds = {"x:0": x}
    try:
        if phase == "ops":
            session = hlobridge.Session(ops_graph(rank), cache_dir=False)
            got = session.run(FETCHES, {**feeds, "n:0": np.array([-3, 5, 7], np.int32) * (rank + 1)})
            (out / f"rank{rank}.pkl").write_bytes(pickle.dumps(dict(zip(FETCHES, got))))
        elif phase == "mismatch":
            graph = single("CollectiveReduceV2", 1, merge_op="Add", final_op="Id") if rank == 0 else \
                single("CollectiveGatherV2", 1)
            hlobridge.Session(graph, cache_dir=False).run("c:0", feeds)
        elif phase == "timeout":
            if rank == 1:
                time.sleep(6)
                return
            graph = single("CollectiveReduceV2", 1, merge_op="Add", final_op="Id", timeout_seconds=2.0)
            start = time.monotonic()
            try:
                hlobridge.Session(graph, cache_dir=False).run("c:0", feeds)
            finally:
                (out / "rank0.seconds").write_text(f"{time.monotonic() - start:.1f}")
    except HlobridgeError as e:
        (out / f"rank{rank}.error").write_text(str(e))


if __name__ == "__main__":
    main(*sys.argv[1:])
