"""Which ops in the corpus's lowered clusters still compute only from constants after the
upstream simplification, i.e. what a constant folder of our own would fold.

Runs every case of ../shared/graphs through a Session (training: init + 2 steps; inference:
its runs) with HLOBRIDGE_FLAGS dumping each cluster's lowered StableHLO, then runs passes
on the dumps and counts the ops whose operands are all `stablehlo.constant`:

    .venv/bin/python tools/constant_census.py [--graphs ../shared/graphs] [--passes NAMES]

--passes (repeatable; default: the simplify stage without constant-fold) names the
registered passes to run before counting; compare with `--passes simplify`. Measured
2026-11 (8 cases, 15 cluster compiles): without constant-fold 3 rsqrt (cnn_infer_bn's
batch-norm variances), 1 scalar compare (control_flow_v1) and 9 broadcast_in_dim of
non-splat vectors remain; with it, only broadcasts of non-splat vectors (12: the folded
rsqrt results are broadcast too), which it leaves on purpose.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "inline,canonicalize,stablehlo-canonicalize,algebraic-simplify,cse,symbol-dce"


def dump_corpus(graphs: Path, out: Path) -> None:
    os.environ["HLOBRIDGE_FLAGS"] = f"--dump-to={out} --dump-pass=^stablehlo$"
    sys.path.insert(0, str(ROOT))
    import hlobridge
    from tests.corpus import Case
    for path in sorted(p for p in graphs.iterdir() if (p / "case.json").exists()):
        case = Case.load(path)
        sess = hlobridge.Session(str(case.graph_path), cache_dir=False)
        try:
            if case.meta["kind"] == "train":
                sess.run(case.meta["init_op"], case.init_feeds())
                for step in range(2):
                    sess.run([case.meta["train_op"], case.meta["loss"]], case.step_feeds(step))
            else:
                for run in case.meta["runs"]:
                    sess.run(list(run["expected"]), {k: case.array(v) for k, v in run["feeds"].items()})
        except Exception as e:  # noqa: BLE001  (a census: report and go on)
            print(f"{path.name}: {type(e).__name__}: {e}".splitlines()[0], file=sys.stderr)
        for d in out.iterdir():
            if d.is_dir() and d.name[:1].isdigit():  # this case's clusters, NNN-<cluster>
                d.rename(out / f"{path.name}.{d.name}")


def census(out: Path, passes: str) -> None:
    import numpy as np
    from iree.compiler import ir

    from hlobridge.passes.ir import pipeline
    from hlobridge.passes.ir.ir_helpers import PURE_OPS, ops_named, producer_named
    COMPUTE_OPS = PURE_OPS - {"stablehlo.constant", "stablehlo.iota"}
    stages = [pipeline.lookup(n) for n in passes.split(",")]
    total, per_case = collections.Counter(), collections.Counter()
    for f in sorted(out.glob("*/*-stablehlo.mlir")):
        with ir.Context():
            module = ir.Module.parse(f.read_text())
            pipeline.run(module, stages)
            for op in ops_named(module, COMPUTE_OPS):
                if all(producer_named(v, "stablehlo.constant") for v in op.operands):
                    size = int(np.prod(ir.RankedTensorType(op.results[0].type).shape))
                    total[(op.name, f"{size} elements")] += 1
                    per_case[f.parent.name.split(".")[0]] += 1
    print(f"after {passes}:")
    for (name, size), n in total.most_common():
        print(f"  {n:5d}  {name} -> {size}")
    print("  per case:", dict(per_case))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graphs", default=str(ROOT.parent / "shared" / "graphs"))
    p.add_argument("--passes", action="append", default=None)
    p.add_argument("--dumps", default=None, help="reuse dumps from an earlier run")
    args = p.parse_args()
    out = Path(args.dumps) if args.dumps else Path(tempfile.mkdtemp(prefix="census-"))
    if not args.dumps:
        dump_corpus(Path(args.graphs), out)
        print(f"dumps in {out}")
    for passes in args.passes or [BASELINE]:
        census(out, passes)


if __name__ == "__main__":
    main()
