#!/usr/bin/env python3
"""Step time under each fusion mode, in one process: hlobridge's fusion pass, IREE's own
dispatch formation, and one dispatch per op (CompileOptions.fusion, passes/ir/fusion.py).

    python benchmarks/fusion.py                       # every compilable case of ../shared/graphs
    python benchmarks/fusion.py cnn_train mlp_adam --device cpu --repeat 7
    python benchmarks/fusion.py --json-out fusion.json

Per case, one Session per mode (jit="auto", memory-only compile cache), each warmed up with
the corpus protocol (training: init feeding TF's initial values, then step 0's feeds
repeatedly; inference: the first run's feeds). The modes are then timed in rotation,
`--repeat` blocks of `--steps` runs each, so machine noise hits them alike; ms/step is a
block's wall time / steps, and the median and minimum over blocks are reported. Training
steps keep updating the variables: every mode runs the same number of steps.

Ratios are what to compare across machines: hlobridge/iree and none/iree, measured back to
back here. Dispatch counts per mode come from IREE's statistics (`--counts`, which compiles
each cluster once more through explain(..., dispatches=...)).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import SHARED, Workload, add_timing_arguments, markdown_table, report, time_block  # noqa: E402
from hlobridge.compile.driver import CompileOptions  # noqa: E402
from hlobridge.debug.explain import explain  # noqa: E402
from hlobridge.runtime.session import Session  # noqa: E402
from tests.corpus import Case  # noqa: E402

CASES = ["seed_linreg_resource", "seed_linreg_ref", "seed_mnist_softmax", "mlp_adam", "cnn_train",
         "cnn_infer_bn"]
MODES = ("iree", "hlobridge", "none")


def session(case: Case, mode: str, device: str) -> Session:
    target = "cuda" if device == "cuda" else "llvm-cpu"
    sess = Session(case.graph_path, jit="auto", device=device, cache_dir=False,
                   compile_options=CompileOptions(target=target, fusion=mode))
    init, init_feeds, fetches, feeds = case.first_run()
    if init:
        sess.run(init, init_feeds)
    sess.run(fetches, feeds)  # compiles
    return sess


def dispatch_counts(case: Case) -> dict:
    _, _, fetches, feeds = case.first_run()
    result = explain(case.graph_path, fetches=fetches, feeds=list(feeds),
                     input_shapes={n: v.shape for n, v in feeds.items()}, dispatches=MODES)
    counts = {m: 0 for m in MODES}
    for per_mode in result.dispatches.values():
        for m in MODES:
            counts[m] += per_mode[m]["dispatches"]
    return counts


def bench_case(name: str, args) -> dict:
    case = Case.load(SHARED / name)
    _, _, fetches, feeds = case.first_run()
    sessions = {m: session(case, m, args.device) for m in MODES}
    for sess in sessions.values():
        for _ in range(args.warmup):
            sess.run(fetches, feeds)
    blocks = {m: [] for m in MODES}
    w = Workload.of_case(case)[0]
    for _ in range(args.repeat):
        for m, sess in sessions.items():
            blocks[m].append(time_block(sess, w, args.steps))
    row = {"case": name, "device": args.device}
    for m in MODES:
        row[f"{m}_ms"], row[f"{m}_ms_min"] = statistics.median(blocks[m]), min(blocks[m])
    row["hlobridge_vs_iree"] = row["hlobridge_ms"] / row["iree_ms"]
    row["none_vs_iree"] = row["none_ms"] / row["iree_ms"]
    if args.counts:
        row["dispatches"] = dispatch_counts(case)
    return row


def table(rows: list[dict]) -> str:
    head = ["case", "iree ms/step", "hlobridge ms/step", "none ms/step", "hlobridge/iree", "none/iree"]
    has_counts = any("dispatches" in r for r in rows)
    head += ["dispatches (iree/hlobridge/none)"] if has_counts else []
    table_rows = []
    for r in rows:
        cells = [r["case"], f"{r['iree_ms']:.3g}", f"{r['hlobridge_ms']:.3g}", f"{r['none_ms']:.3g}",
                 f"{r['hlobridge_vs_iree']:.2f}", f"{r['none_vs_iree']:.2f}"]
        if has_counts:
            d = r.get("dispatches", {})
            cells.append("/".join(str(d.get(m, "-")) for m in MODES))
        table_rows.append(cells)
    return markdown_table(head, table_rows)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_timing_arguments(p, CASES)
    p.add_argument("--counts", action="store_true", help="also report IREE's dispatch counts per mode")
    p.add_argument("--json-out", default=None)
    args = p.parse_args(argv)
    rows = []
    for name in args.cases:
        rows.append(bench_case(name, args))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    report(rows, table(rows), args.json_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
