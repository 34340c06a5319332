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


def _train(case_dir, tmp_path, jit):
    done = launch([WORKER, str(case_dir), str(tmp_path), jit])
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return [pickle.loads((tmp_path / f"rank{r}.pkl").read_bytes()) for r in range(2)]


# mlp_adam compiled (its all-reduce splits the plan into two clusters), cnn_train on the
# reference kernels (its conv clusters take ~40 s to compile twice on a 2-core machine)
@pytest.mark.parametrize("name,jit", [("mlp_adam", "auto"), ("cnn_train", "off")])
def test_two_ranks_follow_the_full_batch_run(shared_graphs, tmp_path, name, jit):
    case = Case.load(shared_graphs / name)
    ranks = _train(case.path, tmp_path, jit)
    for v, value in ranks[0]["variables"].items():
        assert np.array_equal(value, ranks[1]["variables"][v]), f"{v}: the ranks' values differ"
    result = dict(ranks[0])
    # each rank's loss is its half's mean: the full batch's is their mean (equal halves)
    result["losses"] = (ranks[0]["losses"] + ranks[1]["losses"]) / 2
    judge_training(case, result)


def test_a_dead_rank_is_a_clear_error_within_the_timeout(shared_graphs, tmp_path):
    """Rank 1 exits before step 2 (a crash); the launcher keeps rank 0 alive
    (-disable-auto-cleanup), which must stop with a CollectiveError after the 5 s timeout."""
    start = time.monotonic()
    done = launch([WORKER, str(shared_graphs / "mlp_adam"), str(tmp_path), "off", "exit@2"],
                  launcher_args=["-disable-auto-cleanup"], env={"HLOBRIDGE_COLLECTIVE_TIMEOUT": "5"}, timeout=120)
    took = time.monotonic() - start
    assert done.returncode != 0
    message = (tmp_path / "rank0.error").read_text()
    assert "rank 0 of 2 waited 5 s" in message and "a rank died, hung" in message, message
    assert took < 60, f"rank 0 took {took:.0f} s to give up"


def test_a_killed_rank_ends_the_job_under_the_default_launcher(shared_graphs, tmp_path):
    """SIGKILL (the OOM killer's way): MPICH's launcher ends every rank at once, no hang."""
    start = time.monotonic()
    done = launch([WORKER, str(shared_graphs / "mlp_adam"), str(tmp_path), "off", "kill@2"], timeout=120)
    assert done.returncode != 0
    assert "Killed (signal 9)" in done.stdout + done.stderr
    assert time.monotonic() - start < 60
