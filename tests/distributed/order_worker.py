"""Two ranks whose data-parallel plans would issue different collectives, launched by
tests/distributed/test_collective_order.py:

    mpiexec -n 2 python -m tests.distributed.order_worker CASE_DIR OUT_DIR

Rank 0 averages every optimizer gradient; rank 1 names only the weight's gradient. Both must
refuse the training step before anything is reduced; each writes its error to OUT_DIR/rank<r>.error.
"""

import sys
from pathlib import Path

import hlobridge
import hlobridge.distributed as dist

from tests.corpus import Case

WEIGHT_GRADIENT = "gradients/mul_grad/tuple/control_dependency:0"


def main(case_dir, out_dir):
    rank, _ = dist.init()
    case = Case.load(case_dir)
    session = hlobridge.Session(case.graph_path, jit="off", cache_dir=False,
                                data_parallel=True if rank == 0 else [WEIGHT_GRADIENT])
    session.run(case.meta["init_op"], case.init_feeds())
    before = session.run("weights:0")
    try:
        session.run([case.meta["train_op"], case.meta["loss"]], case.step_feeds(0))
    except dist.CollectiveError as e:
        unchanged = (session.run("weights:0") == before).all()
        Path(out_dir, f"rank{rank}.error").write_text(f"{str(e)}\nunchanged={unchanged}")


if __name__ == "__main__":
    main(*sys.argv[1:])
