"""A training step written by TensorFlow's MultiWorkerMirroredStrategy with two workers
(tests/graphs/mwms_two_workers, tools/make_mwms_graph.py) runs on two hlobridge ranks and
follows TF's two-worker run: each rank's loss per step and the final variables."""

import pickle

import numpy as np

from tests.conftest import TESTS
from tests.distributed.mpi import launch


def test_two_ranks_follow_tensorflows_two_workers(tmp_path):
    done = launch(["tests.distributed.mwms_worker", str(tmp_path)], timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    ref = np.load(TESTS / "graphs" / "mwms_two_workers" / "reference.npz")
    ranks = [pickle.loads((tmp_path / f"rank{r}.pkl").read_bytes()) for r in range(2)]
    for r, got in enumerate(ranks):
        np.testing.assert_allclose(got["losses"], ref["losses"][r], rtol=1e-5, err_msg=f"rank {r}: loss per step")
        np.testing.assert_allclose(got["variables"][0], ref["w"], rtol=1e-5, atol=1e-7, err_msg=f"rank {r}: w")
        np.testing.assert_allclose(got["variables"][1], ref["b"], rtol=1e-5, atol=1e-7, err_msg=f"rank {r}: b")
    for a, b in zip(*(r["variables"] for r in ranks)):
        np.testing.assert_array_equal(a, b)  # the ranks agree to the bit
