"""One rank of data-parallel training runs, launched by tests/distributed/test_data_parallel.py:

    mpiexec -n 2 python -m tests.distributed.train_worker OUT_DIR FAULT CASE_DIR:JIT[:STEPS] ...

Runs the corpus training protocol (tests/corpus.py) of each case in turn on a data-parallel
Session, each rank fed its slice of every step's batch, and pickles the rank's losses and
variables (and, on rank 0, the evals: the ranks' variables are compared bit for bit, so
rank 1's evals would be the same numbers) to OUT_DIR/rank<r>.<case>.pkl. One launch serves
every case: MPI's start and hlobridge's import are paid once.

With STEPS, only the first STEPS training steps run and there are no evals (TF's final
variables and evals are for every step); the last rank then also runs those steps on a plain
Session fed the whole batch, the single-process run to compare with, into
OUT_DIR/single.<case>.pkl.

FAULT is "-" (none) or KIND@STEP: rank 1 fails before training step STEP of the first case,
`exit` (the process ends, as a crash does), `kill` (SIGKILL, as the OOM killer does) or `hang`
(it sleeps). From that step on, rank 0 waits at most FAULT_TIMEOUT seconds per collective
(the ranks were in step until then, so the test need not wait out a timeout sized for ranks
that start or compile at different speeds). A rank that meets a CollectiveError writes its
message to OUT_DIR/rank<r>.error.
"""

import dataclasses
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

FAULT_TIMEOUT = 2.0


class Shard:
    """A Session whose training steps get this rank's rows of every step feed; on rank 1 the
    evals' runs are skipped (None)."""

    def __init__(self, session, case, rank, size, fault=None):
        self.session, self.rank, self.size = session, rank, size
        self.fault, self.fault_step = fault.split("@") if fault else (None, -1)
        self.train_op = case.meta["train_op"]
        self.step_feeds = set(case.meta["train"]["step_feeds"])
        self.evals = {name for ev in case.meta.get("evals", []) for name in ev["expected"]}
        self.steps = 0

    def run(self, fetches, feeds=None):
        if isinstance(fetches, list) and self.train_op in fetches:
            if self.steps == int(self.fault_step):
                self.fail()
            self.steps += 1
            feeds = {k: np.array_split(v, self.size)[self.rank] if k in self.step_feeds else v
                     for k, v in feeds.items()}
        elif self.rank != 0 and isinstance(fetches, list) and set(fetches) <= self.evals:
            return [None] * len(fetches)
        return self.session.run(fetches, feeds)

    def fail(self) -> None:
        if self.rank != 1:
            dist.current().timeout = FAULT_TIMEOUT
            return
        if self.fault == "exit":
            os._exit(1)
        if self.fault == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(3600)  # hang


def main(out_dir, fault, *cases):
    rank, size = dist.init()
    out = Path(out_dir)
    for i, spec in enumerate(cases):
        case_dir, jit, *steps = spec.split(":")
        case = Case.load(case_dir)
        if steps:  # the first STEPS steps, no evals
            case = dataclasses.replace(case, meta={**case.meta, "steps": int(steps[0]), "evals": []})
        session = hlobridge.Session(case.graph_path, jit=jit, device="cpu", cache_dir=out / "cache",
                                    data_parallel=True)
        try:
            result = run_training(case, Shard(session, case, rank, size, fault if fault != "-" and i == 0 else None))
        except dist.CollectiveError as e:
            (out / f"rank{rank}.error").write_text(str(e))
            raise SystemExit(3)
        with open(out / f"rank{rank}.{case.path.name}.pkl", "wb") as f:
            pickle.dump(result, f)
        if steps and rank == size - 1:
            single = hlobridge.Session(case.graph_path, jit=jit, device="cpu", cache_dir=out / "cache")
            with open(out / f"single.{case.path.name}.pkl", "wb") as f:
                pickle.dump(run_training(case, single), f)


if __name__ == "__main__":
    main(*sys.argv[1:])
