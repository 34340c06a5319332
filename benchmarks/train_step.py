#!/usr/bin/env python3
"""Time per training step: hlobridge's JIT (jit="auto") against its reference kernels
(jit="off") in the same process, and optionally TensorFlow's own Session.

    python benchmarks/train_step.py                          # every training case of ../shared/graphs
    python benchmarks/train_step.py mlp_adam cnn_train --device cpu-task
    python benchmarks/train_step.py --tf-python .tfvenv/bin/python --json-out bench.json

Per case, following the corpus protocol (init feeding TF's initial values, step 0's feeds):
- cold start: a new Session with an empty disk cache and an empty memory cache; init + first
  step, compiles included;
- warm start: a new Session whose clusters are all in the disk cache (memory cache cleared),
  as a second process would start; init + first step;
- steady state: median and minimum ms/step over `--repeat` blocks of `--steps` steps.
`jit="off"` runs fewer steps (`--off-steps`): its CNN step takes seconds.
With `--tf-python`, benchmarks/tf_baseline.py runs under that interpreter (TensorFlow is a
development tool, never a dependency) and its numbers join the table.

Ratios are what to compare across machines: auto/off and auto/TF measured here, back to back.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import (SHARED, Workload, add_timing_arguments, cold_and_warm_start, markdown_table,  # noqa: E402
                               report, start, steady)
from tests.corpus import Case  # noqa: E402

CASES = ["seed_linreg_resource", "seed_linreg_ref", "seed_mnist_softmax", "mlp_adam", "cnn_train"]


def bench_case(name: str, args) -> dict:
    (w,) = Workload.of_case(Case.load(SHARED / name))
    row = {"case": name, "device": args.device}
    sess, row["auto_cold_s"], row["auto_warm_s"], _ = cold_and_warm_start(w, "auto", args.device)
    blocks = steady(sess, w, args.steps, args.repeat, args.warmup)
    row["auto_ms"], row["auto_ms_min"] = statistics.median(blocks), min(blocks)
    row["clusters"] = len({e.cluster for e in sess.compile_events})
    sess, _, _ = start(w, "off", args.device, False)
    blocks = steady(sess, w, args.off_steps, max(1, args.repeat // 2), 1)
    row["off_ms"], row["off_ms_min"] = statistics.median(blocks), min(blocks)
    row["speedup_vs_off"] = row["off_ms"] / row["auto_ms"]
    return row


def tf_baseline(names: list[str], args) -> dict[str, dict]:
    cmd = [args.tf_python, str(ROOT / "benchmarks" / "tf_baseline.py"), *[str(SHARED / n) for n in names],
           "--steps", str(args.steps), "--repeat", str(args.repeat), "--warmup", str(args.warmup)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return {r["case"]: r for r in rows}


def table(rows: list[dict]) -> str:
    has_tf = any("tf_ms" in r for r in rows)
    head = ["case", "auto ms/step", "off ms/step", "auto vs off"]
    head += ["TF ms/step", "auto vs TF"] if has_tf else []
    head += ["cold start s", "warm start s"]
    table_rows = []
    for r in rows:
        cells = [r["case"], f"{r['auto_ms']:.3g}", f"{r['off_ms']:.3g}", f"{r['speedup_vs_off']:.1f}x"]
        if has_tf:
            cells += [f"{r['tf_ms']:.3g}", f"{r['tf_ms'] / r['auto_ms']:.2f}x"] if "tf_ms" in r else ["-", "-"]
        cells += [f"{r['auto_cold_s']:.2f}", f"{r['auto_warm_s']:.2f}"]
        table_rows.append(cells)
    return markdown_table(head, table_rows)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_timing_arguments(p, CASES)
    p.add_argument("--off-steps", type=int, default=3)
    p.add_argument("--tf-python", default=os.environ.get("HLOBRIDGE_TF_PYTHON"),
                   help="a Python with TensorFlow, to time tf.compat.v1.Session on the same cases")
    p.add_argument("--json-out", default=None)
    args = p.parse_args(argv)
    rows = [bench_case(name, args) for name in args.cases]
    if args.tf_python:
        tf = tf_baseline(args.cases, args)
        for r in rows:
            if r["case"] in tf and tf[r["case"]].get("ms_per_step_median") is not None:
                r["tf_ms"] = tf[r["case"]]["ms_per_step_median"]
    report(rows, table(rows), args.json_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
