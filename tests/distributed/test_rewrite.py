"""The data-parallel rewrite (hlobridge/distributed/data_parallel.py) in one process: where
the all-reduces go, how gradients are bucketed, what explain shows, and rank 0's checkpoints."""

import numpy as np
import pytest

import hlobridge
from hlobridge.distributed import data_parallel as dp
from hlobridge.distributed.world import CollectiveError
from hlobridge.errors import HlobridgeError
from hlobridge.frontend.graph import TensorRef
from hlobridge.ops.collective.allreduce import OP, flat_mean


class TwoRanks:
    """A stand-in world of two ranks whose other rank holds `other` times this rank's arrays."""

    rank, size = 0, 2

    def __init__(self, other=1.0, lists=None):
        self.other, self.lists, self.calls = other, lists, []

    def allreduce(self, array, what, op="sum"):
        self.calls.append((what, op))
        if op == "max":  # the fingerprint check: the other rank's digest is `other` x ours
            return np.maximum(array, (array * self.other).astype(array.dtype))
        return array + array * self.other

    def allgather_bytes(self, data, what):
        return [data, self.lists]


def test_every_optimizer_gradient_goes_through_one_bucket(shared_graphs):
    graph = hlobridge.load_graph(shared_graphs / "mlp_adam" / "graph.pb")
    new = dp.rewrite(graph, rank=0)
    reduce_nodes = [n for n in new.nodes.values() if n.op == OP]
    assert [n.name for n in reduce_nodes] == ["hlobridge_data_parallel/allreduce_0"]
    applies = [n for n in new.nodes.values() if n.op == "ResourceApplyAdam"]
    assert len(applies) == 6
    for node in applies:
        grad = node.inputs[dp.OPTIMIZER_GRADIENT["ResourceApplyAdam"]]
        assert grad.node == "hlobridge_data_parallel/allreduce_0"
        original = graph.nodes[node.name].inputs[9]
        assert reduce_nodes[0].inputs[grad.index] == original  # the gradient it replaces


def test_buckets_hold_one_dtype_and_at_most_bucket_bytes():
    grads = [(TensorRef("a"), np.dtype("float32"), 60), (TensorRef("b"), np.dtype("float32"), 60),
             (TensorRef("c"), np.dtype("float64"), 8), (TensorRef("d"), np.dtype("float32"), 10),
             (TensorRef("e"), np.dtype("float32"), 500)]
    got = [[r.node for r in b] for b in dp.buckets(grads, 100)]
    assert got == [["a"], ["b", "d"], ["c"], ["e"]]


def test_explain_shows_the_all_reduce_between_two_clusters(shared_graphs):
    e = hlobridge.explain(shared_graphs / "mlp_adam" / "graph.pb", fetches=["train", "loss:0"], data_parallel=True)
    assert e.clustering.reasons["hlobridge_data_parallel/allreduce_0"] == "collective"
    clusters = e.clustering.clusters
    assert len(clusters) == 2
    reduced = [r for c in clusters for r in c.inputs if r.node == "hlobridge_data_parallel/allreduce_0"]
    assert sorted(r.index for r in reduced) == list(range(6))  # the optimizer's cluster reads all six
    assert all(r in clusters[1].inputs for r in reduced)
    producers = {r.node for r in e.graph.nodes["hlobridge_data_parallel/allreduce_0"].inputs}
    assert producers <= set(clusters[0].nodes)  # the backward pass's cluster computes them
    assert "allreduce_0 (_HlobridgeAllReduce)  collective:" in str(e)


def test_only_rank_0_writes_checkpoints(tmp_path):
    from hlobridge.frontend.graph_builder import GraphBuilder, Shape
    b = GraphBuilder()
    w = b.op("VarHandleOp", [], name="w", dtype=np.float32, shape=Shape(()), shared_name="w")
    g = b.const("g", np.float32(1.0))
    lr = b.const("lr", np.float32(0.1))
    b.op("ResourceApplyGradientDescent", [w, lr, g], name="train", T=np.float32)
    prefix = b.const("prefix", np.array(str(tmp_path / "ckpt"), dtype=object))
    names = b.const("names", np.array(["w"], dtype=object))
    slices = b.const("slices", np.array([""], dtype=object))
    b.op("SaveV2", [prefix, names, slices, g], name="save", dtypes=[np.float32])
    graph = b.graph()
    assert dp.rewrite(graph, rank=0).nodes["save"].op == "SaveV2"
    other = dp.rewrite(graph, rank=1).nodes["save"]
    assert other.op == "NoOp" and set(other.control_inputs) == {"prefix", "names", "slices", "g"}


def test_a_graph_without_optimizer_ops_asks_for_the_gradients(shared_graphs):
    graph = hlobridge.load_graph(shared_graphs / "cnn_infer_bn" / "graph.pb")
    with pytest.raises(HlobridgeError, match=r"no optimizer op .* data_parallel=\['grad:0'"):
        dp.rewrite(graph, rank=0)


def test_flat_mean_sums_over_ranks_and_divides_by_their_number():
    world = TwoRanks(other=3.0)
    a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.float32(2.0)
    got = flat_mean(world, [a, b], "bucket")
    np.testing.assert_array_equal(got[0], a * 2)  # (a + 3a) / 2
    assert got[1].shape == () and got[1] == 4 and got[1].dtype == np.float32
    assert world.calls == [("bucket", "sum")]


def test_agreeing_ranks_run_and_differing_ones_are_refused():
    dp.DataParallel(TwoRanks(other=1), None).agree(["a _HlobridgeAllReduce (float32[3])"])
    lists = "\n".join(["a _HlobridgeAllReduce (float32[4])"]).encode()
    world = TwoRanks(other=2, lists=lists)
    with pytest.raises(CollectiveError, match=r"collective #1 is 'a _HlobridgeAllReduce \(float32\[3\]\)' "
                                              r"on rank 0 but 'a _HlobridgeAllReduce \(float32\[4\]\)' on rank 1"):
        dp.DataParallel(world, None).agree(["a _HlobridgeAllReduce (float32[3])"])


@pytest.mark.parametrize("name", ["stateful_mix", "adam_ref"])
def test_one_rank_trains_ref_variable_optimizers_along_tensorflow(name):
    """ApplyMomentum/ApplyAdam on ref variables (VariableV2), with AssignAdd in the train op: a
    world of one rank (mpi4py's singleton) runs the rewritten graph along TF's trajectory."""
    pytest.importorskip("mpi4py")
    import hlobridge.distributed as dist
    from tests.conftest import TESTS
    from tests.corpus import Case, judge_training, run_training
    dist.init()
    case = Case.load(TESTS / "graphs" / name)
    session = hlobridge.Session(case.graph_path, jit="off", cache_dir=False, data_parallel=True)
    assert any(n.op == OP for n in session.graph.nodes.values())
    judge_training(case, run_training(case, session))


def test_named_gradients_are_averaged_for_every_reader(shared_graphs):
    """data_parallel=[names]: for optimizers written as arithmetic (Keras 3), every reader of a
    named gradient reads its average."""
    graph = hlobridge.load_graph(shared_graphs / "seed_linreg_resource" / "graph.pb")
    grad = "gradients/mul_grad/tuple/control_dependency:0"
    new = dp.rewrite(graph, rank=0, gradients=[grad])
    readers = [n for n in graph.nodes.values() if TensorRef.parse(grad) in n.inputs]
    assert readers
    for node in readers:
        assert TensorRef("hlobridge_data_parallel/allreduce_0", 0) in new.nodes[node.name].inputs
    assert [r for n in new.nodes.values() for r in n.inputs if r == TensorRef.parse(grad)] == \
        [TensorRef.parse(grad)]  # only the all-reduce reads the rank's own gradient
