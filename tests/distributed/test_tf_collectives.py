"""TensorFlow's collective ops on two ranks, against NumPy (TF's semantics are plain: merge
then final_op, rank-ordered concatenation, chunk i to rank i; integer Div truncates, as
tf.raw_ops.Div does: [-9, 15, 21] / 2 -> [-4, 7, 10])."""

import pickle

import numpy as np
import pytest

import hlobridge
from hlobridge.errors import HlobridgeError
from hlobridge.frontend.graph_builder import GraphBuilder

from tests.distributed.mpi import launch

WORKER = "tests.distributed.collective_worker"


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    out = tmp_path_factory.mktemp("collectives")
    done = launch([WORKER, str(out), "ops"], timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert not list(out.glob("*.error")), [p.read_text() for p in out.glob("*.error")]
    return [pickle.loads((out / f"rank{r}.pkl").read_bytes()) for r in range(2)]


def test_every_collective_follows_tensorflows_semantics(ranks):
    x = [np.arange(12, dtype=np.float32).reshape(4, 3) + 100 * r for r in range(2)]
    n = [np.array([-3, 5, 7], np.int32) * (r + 1) for r in range(2)]
    total = x[0] + x[1]
    for r, got in enumerate(ranks):
        np.testing.assert_array_equal(got["mean:0"], total / 2)
        np.testing.assert_array_equal(got["max:0"], np.maximum(x[0], x[1]))
        np.testing.assert_array_equal(got["int_mean:0"], np.array([-4, 7, 10], np.int32))
        assert got["int_mean:0"].dtype == np.int32
        np.testing.assert_array_equal(got["v1_product:0"], x[0] * x[1])
        np.testing.assert_array_equal(got["gather:0"], np.concatenate(x))
        np.testing.assert_array_equal(got["v1_gather:0"], np.concatenate(x))
        np.testing.assert_array_equal(got["scatter:0"], np.split(total, 2)[r])
        np.testing.assert_array_equal(got["all_to_all:0"], np.concatenate([np.split(x[s], 2)[r] for s in range(2)]))
        np.testing.assert_array_equal(got["bcast:0"], x[0])
        np.testing.assert_array_equal(got["v1_bcast:0"], x[0])
        # CollectiveAssignGroupV2([[0, 2], [1, 3]], device_index=rank, base_key=100): TF gives
        # (row length, base_key + row): (2, 100) for device 0, (2, 101) for device 1
        assert (int(got["assign:0"]), int(got["assign:1"])) == (2, 100 + r)


def test_ranks_at_different_collectives_are_an_error_naming_both(tmp_path):
    done = launch([WORKER, str(tmp_path), "mismatch"], timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    message = (tmp_path / "rank0.error").read_text()
    assert message.startswith("node 'c' (CollectiveReduceV2, group_key 7, instance_key 1): rank 1 is at node 'c' "
                              "(gather group_key=7 instance_key=1 float32)"), message
    assert "the ranks run different collectives" in (tmp_path / "rank1.error").read_text()


def test_timeout_seconds_is_a_clear_error_naming_the_op(tmp_path):
    launch([WORKER, str(tmp_path), "timeout"], timeout=120)  # rank 0 aborts the job after its error
    message = (tmp_path / "rank0.error").read_text()
    assert message.startswith("node 'c' (CollectiveReduceV2, group_key 7, instance_key 1): "
                              "matching the ranks: rank 0 of 2"), message
    assert "waited 2 s (the op's timeout_seconds)" in message, message
    assert float((tmp_path / "rank0.seconds").read_text()) < 10


def test_group_size_must_be_the_world():
    pytest.importorskip("mpi4py")
    import hlobridge.distributed as dist
    dist.init()  # a singleton world: size 1
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (2,))
    keys = [b.const("s", np.int32(4)), b.const("g", np.int32(1)), b.const("i", np.int32(1))]
    b.op("CollectiveReduceV2", [x, *keys], name="c", T=np.float32, merge_op="Add", final_op="Id")
    with pytest.raises(HlobridgeError, match="group_size 4, but the MPI world has 1 rank"):
        hlobridge.Session(b.graph(), cache_dir=False).run("c:0", {"x:0": np.ones(2, np.float32)})


def test_nccl_all_reduce_is_refused_with_its_reason_before_running():
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (2,))
    b.op("NcclAllReduce", [x], name="nccl", T=np.float32, reduction="sum", num_devices=2, shared_name="c0")
    with pytest.raises(HlobridgeError, match=r"node 'nccl' \(NcclAllReduce\): NcclAllReduce is MirroredStrategy's "
                                             r"all-reduce between the GPUs of one process"):
        hlobridge.Session(b.graph(), cache_dir=False).run("nccl:0", {"x:0": np.ones(2, np.float32)})
