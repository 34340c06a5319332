"""One rank of a data-parallel training run, launched by tests/distributed/test_data_parallel.py:

    mpiexec -n 2 python -m tests.distributed.train_worker CASE_DIR OUT_DIR JIT [FAULT@STEP]

Runs the corpus training protocol (tests/corpus.py) on a data-parallel Session, each rank
fed its slice of every step's batch, and pickles the rank's losses, variables and evals to
OUT_DIR/rank<r>.pkl. With a fault, rank 1 fails before training step STEP: `exit` (the
process ends, as a crash does), `kill` (SIGKILL, as the OOM killer does) or `hang` (it sleeps);
a rank that meets a CollectiveError writes its message to OUT_DIR/rank<r>.error.
"""

import os
import pickle
import signal
import sys
import time
from pathlib import Path

import numpy as np

import hlobridge
import hlobridge.distributed as dist

from tests.corpus import Case, run_training


class Shard:
    """A Session whose training steps get this rank's rows of every step feed."""

    def __init__(self, session, case, rank, size, fault=None):
        self.session, self.rank, self.size = session, rank, size
        self.fault, self.fault_step = fault.split("@") if fault else (None, -1)
        self.train_op = case.meta["train_op"]
        self.step_feeds = set(case.meta["train"]["step_feeds"])
        self.steps = 0

    def run(self, fetches, feeds=None):
        if isinstance(fetches, list) and self.train_op in fetches:
            if self.steps == int(self.fault_step) and self.rank == 1:
                if self.fault == "exit":
                    os._exit(1)
                if self.fault == "kill":
                    os.kill(os.getpid(), signal.SIGKILL)
                time.sleep(3600)  # hang
            self.steps += 1
            feeds = {k: np.array_split(v, self.size)[self.rank] if k in self.step_feeds else v
                     for k, v in feeds.items()}
        return self.session.run(fetches, feeds)


def main(case_dir, out_dir, jit, fault=None):
    rank, size = dist.init()
    case = Case.load(case_dir)
    out = Path(out_dir)
    session = hlobridge.Session(case.graph_path, jit=jit, device="cpu", cache_dir=out / "cache",
                                data_parallel=True)
    try:
        result = run_training(case, Shard(session, case, rank, size, fault))
    except dist.CollectiveError as e:
        (out / f"rank{rank}.error").write_text(str(e))
        raise SystemExit(3)
    with open(out / f"rank{rank}.pkl", "wb") as f:
        pickle.dump(result, f)


if __name__ == "__main__":
    main(*sys.argv[1:])
