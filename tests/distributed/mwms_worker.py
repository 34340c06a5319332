"""One of two hlobridge ranks running the training step TF's MultiWorkerMirroredStrategy wrote
(tests/graphs/mwms_two_workers, tools/make_mwms_graph.py), launched by test_mwms.py:

    mpiexec -n 2 python -m tests.distributed.mwms_worker OUT_DIR

Rank r loads worker r's graph, runs `init`, then the steps on its half of the batch, feeding
the instance key TF captures at call time (the `Placeholder` of the CollectiveReduceV2: a
fresh key per call, the same on both workers), and pickles its losses and variables.
"""

import json
import pickle
import sys
from pathlib import Path

import numpy as np

import hlobridge
import hlobridge.distributed as dist

from tests.conftest import TESTS

CASE = TESTS / "graphs" / "mwms_two_workers"
INSTANCE_KEY = "Placeholder:0"


def main(out_dir):
    rank, size = dist.init()
    meta = json.loads((CASE / "mwms.json").read_text())
    ref = np.load(CASE / "reference.npz")
    half = slice(rank * 32, (rank + 1) * 32)
    session = hlobridge.Session(CASE / f"graph_worker{rank}.pbtxt", cache_dir=False)
    session.run(meta["init_op"])
    losses = [session.run(meta["loss"], {"xs:0": ref["x"][half], "ys:0": ref["y"][half],
                                         INSTANCE_KEY: np.int32(1000 + step)})
              for step in range(meta["steps"])]
    variables = session.run(meta["variables"])
    Path(out_dir, f"rank{rank}.pkl").write_bytes(pickle.dumps({"losses": losses, "variables": variables}))


if __name__ == "__main__":
    main(*sys.argv[1:])
