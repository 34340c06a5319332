"""Data-parallel training on two local ranks (mpiexec -n 2), each fed half of every step's
batch: the corpus's mlp_adam and cnn_train follow TensorFlow's single-process full-batch run
within the corpus's training tolerance, and the ranks end with bit-identical variables; a rank
that dies or hangs gives the other a clear error within the collective timeout."""

import pickle
import time

import numpy as np
import pytest

from tests.corpus import Case, judge_training
from tests.distributed.mpi import launch

WORKER = "tests.distributed.train_worker"


# mlp_adam compiled (its all-reduce splits the plan into two clusters), all 50 steps and the
# evals against TensorFlow's; cnn_train on the reference kernels (its conv clusters take ~40 s
# to compile twice on a 2-core machine), its first CNN_STEPS steps against TF's losses and a
# single-process full-batch run of those steps (each of its 20 reference steps costs ~0.7 s
# of CPU, its evals 3 s). Both in one launch (MPI's start and the imports paid once), one
# test, so that pytest-xdist does not launch it twice. cnn_train first: rank 1's single-process
# run then overlaps rank 0's compiles of mlp_adam's clusters (on disk for rank 1 after).
CNN_STEPS = 5
CASES = [("cnn_train", "off", CNN_STEPS), ("mlp_adam", "auto", None)]


def _ranks(tmp_path, name) -> list[dict]:
    ranks = [pickle.loads((tmp_path / f"rank{r}.{name}.pkl").read_bytes()) for r in range(2)]
    for v, value in ranks[0]["variables"].items():
        assert np.array_equal(value, ranks[1]["variables"][v]), f"{name} {v}: the ranks' values differ"
    result = dict(ranks[0])  # (rank 0's evals: rank 1 skips them, its variables being the same bits)
    # each rank's loss is its half's mean: the full batch's is their mean (equal halves)
    result["losses"] = (ranks[0]["losses"] + ranks[1]["losses"]) / 2
    return result


def test_two_ranks_follow_the_full_batch_run(shared_graphs, tmp_path):
    specs = [f"{shared_graphs / name}:{jit}" + (f":{steps}" if steps else "") for name, jit, steps in CASES]
    done = launch([WORKER, str(tmp_path), "-", *specs])
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    for name, _, steps in CASES:
        case = Case.load(shared_graphs / name)
        result = _ranks(tmp_path, name)
        if steps is None:
            judge_training(case, result)
            continue
        tol = case.tolerance
        np.testing.assert_allclose(result["losses"], case.array(case.meta["train"]["loss_per_step"])[:steps],
                                   rtol=tol["rtol"], atol=tol["atol"], err_msg=f"{name}: TF's loss per step")
        single = pickle.loads((tmp_path / f"single.{name}.pkl").read_bytes())
        np.testing.assert_allclose(result["losses"], single["losses"], rtol=tol["rtol"], atol=tol["atol"],
                                   err_msg=f"{name}: the single-process run's loss per step")
        for v, value in single["variables"].items():
            np.testing.assert_allclose(result["variables"][v], value, rtol=tol["rtol"], atol=tol["atol"],
                                       err_msg=f"{name}: variable {v} after {steps} steps")


def test_a_dead_rank_is_a_clear_error_within_the_timeout(shared_graphs, tmp_path):
    """Rank 1 exits before step 2 (a crash); the launcher keeps rank 0 alive
    (-disable-auto-cleanup), which must stop with a CollectiveError after its timeout (2 s
    from step 2 on: train_worker.FAULT_TIMEOUT)."""
    start = time.monotonic()
    done = launch([WORKER, str(tmp_path), "exit@2", f"{shared_graphs / 'mlp_adam'}:off"],
                  launcher_args=["-disable-auto-cleanup"], timeout=120)
    took = time.monotonic() - start
    assert done.returncode != 0
    message = (tmp_path / "rank0.error").read_text()
    assert "rank 0 of 2 waited 2 s" in message and "a rank died, hung" in message, message
    assert took < 60, f"rank 0 took {took:.0f} s to give up"


def test_a_killed_rank_ends_the_job_under_the_default_launcher(shared_graphs, tmp_path):
    """SIGKILL (the OOM killer's way): MPICH's launcher ends every rank at once, no hang."""
    start = time.monotonic()
    done = launch([WORKER, str(tmp_path), "kill@2", f"{shared_graphs / 'mlp_adam'}:off"], timeout=120)
    assert done.returncode != 0
    assert "Killed (signal 9)" in done.stdout + done.stderr
    assert time.monotonic() - start < 60
