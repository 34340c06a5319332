#!/usr/bin/env python3
"""hlobridge's Session against TensorFlow's, and on inference against ONNX Runtime's, on whole
models: the corpus's training graphs and cnn_infer_bn, and the models of bench-models/ (ResNet-50
training, Keras MobileNetV2 and ResNet50 inference, a 2-layer BERT), back to back in one run.

    python benchmarks/models.py                                   # every model; TF from .tfvenv/bin/python
    python benchmarks/models.py --models mlp_adam keras_mobilenetv2/batch5 --quick
    python benchmarks/models.py --markdown --json-out models.json  # the README's table
    python benchmarks/models.py --no-tf --no-ort                  # hlobridge alone
    python benchmarks/models.py --no-tf --no-ort --backend xla    # + XLA (PJRT) beside IREE

A row times one workload: a training case's step (init feeding TF's initial values, then step
0's feeds again and again, as the corpus protocol says), or one inference run (CASE/RUN). Per row:
- cold start: a new Session (jit="auto", --device) with an empty disk and memory compile cache,
  from reading graph.pb to the first run's results: parsing, init, clustering, compiles;
- warm start: the same again with every cluster in the disk cache and the memory cache cleared,
  as a second process would start;
- check: the cold start's results against TensorFlow's recorded ones (the first loss of a
  training case, every output of an inference run): the largest difference relative to the
  output's largest magnitude, which must be at most 1e-3; TensorFlow's own first run here is
  checked the same way;
- steady state: hlobridge's Session and TensorFlow's default tf.compat.v1.Session (oneDNN as
  built, default thread pools, no XLA; benchmarks/tf_baseline.py --serve under TensorFlow's own
  Python, which is a development tool and never a dependency) time blocks in turn, alternating
  which goes first, `--repeat` blocks each. A block is `--steps` runs (default: as many as
  last about `--block-s` seconds for the slower of the two); ms/step is a block's wall time /
  runs, reported as the median and the best block. The ratio hlobridge/TF is of the medians:
  below 1, hlobridge is faster. The geometric mean of the ratios closes the table;
- ONNX Runtime (inference rows only): benchmarks/ort_baseline.py --serve under the same Python
  as TensorFlow's (with tf2onnx and onnxruntime installed there, never hlobridge dependencies)
  converts the frozen graph.pb with tf2onnx (opset 17, cached in bench-models/onnx/) and runs
  it in an InferenceSession with default options. Its first run's outputs are checked against
  TensorFlow's recorded ones as hlobridge's are, and only a model that passes is timed: its
  blocks take turns with the others', and hlobridge/ORT is the ratio of the medians.

With --backend xla (the xla extra installed), a second Session with backend="xla" (XLA through
PJRT, docs/backends.md) starts from a cold cache, is checked the same way, and times its blocks
interleaved with IREE's: the columns "XLA ms/step" and "XLA/IREE" (below 1, XLA is faster).

Models of bench-models/ that have not been written are skipped with the command that writes them.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import (SHARED, Workload, add_timing_arguments, cold_and_warm_start, markdown_table,  # noqa: E402
                               report, start, text_table, time_block)
from hlobridge.compile.options import CompileOptions  # noqa: E402
from tests.corpus import Case  # noqa: E402

CORPUS = ["seed_linreg_resource", "seed_linreg_ref", "seed_mnist_softmax", "mlp_adam", "cnn_train", "cnn_infer_bn"]
BENCH = ["resnet50_train", "keras_mobilenetv2", "keras_resnet50", "bert2_infer", "bert2_train"]
BENCH_MODELS = ROOT / "bench-models"
MAKE_BENCH = ".tfvenv/bin/python tools/make_bench_models.py"
CHECK_TOLERANCE = 1e-3
QUICK = {"repeat": 3, "warmup": 1, "block_s": 0.05}


def case_dir(name: str) -> Path | None:
    """The corpus's case folder of that name, else bench-models/'s; None where neither has it."""
    for d in (SHARED / name, BENCH_MODELS / name):
        if (d / "case.json").is_file():
            return d
    return None


def check_error(outputs: list, expected: list) -> float:
    """The largest difference to TensorFlow's recorded values, each output's relative to its
    largest magnitude (so that near-zero elements of a large output do not dominate); inf for
    a wrong shape or a NaN."""
    worst = 0.0
    for got, want in zip(outputs, expected):
        if want is None:
            continue
        got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
        if got.shape != want.shape:
            return math.inf
        err = np.abs(got - want).max(initial=0.0) / max(np.abs(want).max(initial=0.0), 1e-30)
        worst = max(worst, err if np.isfinite(err) else math.inf)
    return worst


class BaselineServer:
    """A baseline's SERVING process under TensorFlow's Python (benchmarks/tf_baseline.py or
    ort_baseline.py --serve): one process for the whole run (TensorFlow's import takes
    seconds), one case loaded at a time."""

    def __init__(self, python: str, script: str = "tf_baseline.py", label: str = "TensorFlow"):
        self.script, self.label = script, label
        self.proc = subprocess.Popen([python, str(ROOT / "benchmarks" / script), "--serve"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def ask(self, **command) -> dict:
        try:
            self.proc.stdin.write(json.dumps(command) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except OSError:
            line = ""
        if not line:
            raise RuntimeError(f"{self.script} --serve exited (its stderr above says why)")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"{self.label}: {reply['error']}")
        return reply

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.wait()


def TFServer(python: str) -> BaselineServer:  # noqa: N802 - the name callers and tests know
    return BaselineServer(python)


def ORTServer(python: str) -> BaselineServer:  # noqa: N802
    return BaselineServer(python, "ort_baseline.py", "ONNX Runtime")


def interleaved(timers: dict, args) -> tuple[int, dict]:
    """Warm-up runs, then `repeat` blocks per timer in turn (who goes first alternates);
    (runs per block, {timer: [ms/step of each block]})."""
    probe = {k: min(t(1) for _ in range(max(1, args.warmup))) for k, t in timers.items()}
    steps = args.steps or max(1, math.ceil(args.block_s * 1e3 / max(probe.values())))
    order = list(timers)
    blocks = {k: [] for k in order}
    for r in range(args.repeat):
        for k in order if r % 2 == 0 else order[::-1]:
            blocks[k].append(timers[k](steps))
    return steps, blocks


def bench_workload(w: Workload, folder: Path, run: str | None, args, tf: BaselineServer | None,
                   ort: BaselineServer | None = None) -> dict:
    row = {"model": w.name, "kind": "train" if run is None else "inference", "device": args.device}
    sess, row["cold_start_s"], row["warm_start_s"], out = cold_and_warm_start(w, "auto", args.device)
    row["check_error"], row["clusters"] = check_error(out, w.expected), len({e.cluster for e in sess.compile_events})
    timers = {"hlobridge": lambda steps: time_block(sess, w, steps)}
    if args.backend == "xla":
        options = CompileOptions(target="cuda" if args.device == "cuda" else "llvm-cpu", backend="xla")
        with tempfile.TemporaryDirectory(prefix="hlobridge-bench-xla-") as cache:
            xla, row["xla_cold_start_s"], xla_out = start(w, "auto", args.device, cache, options)
        row["xla_check_error"] = check_error(xla_out, w.expected)
        timers["xla"] = lambda steps: time_block(xla, w, steps)
    if tf is not None:
        try:
            reply = tf.ask(load=str(folder), run=run)
        except RuntimeError as exc:  # hlobridge's numbers still stand
            row["tf_error"] = str(exc)
        else:
            row.update(tf_start_s=reply["start_s"], tf_check_error=check_error(reply["outputs"], w.expected),
                       tf_version=reply["tf_version"], onednn=reply["onednn"])
            timers["tf"] = lambda steps: tf.ask(steps=steps)["ms_per_step"]
    if ort is not None and run is not None:
        try:
            reply = ort.ask(load=str(folder), run=run)
        except RuntimeError as exc:
            row["ort_error"] = str(exc)
        else:
            row.update(ort_start_s=reply["start_s"], ort_convert_s=reply["convert_s"],
                       ort_check_error=check_error(reply["outputs"], w.expected),
                       ort_version=reply["ort_version"], tf2onnx_version=reply["tf2onnx_version"])
            if row["ort_check_error"] <= CHECK_TOLERANCE:  # a wrong conversion's time means nothing
                timers["ort"] = lambda steps: ort.ask(steps=steps)["ms_per_step"]
    row["steps"], blocks = interleaved(timers, args)
    row["repeat"] = args.repeat
    for k, b in blocks.items():
        row[f"{k}_ms"], row[f"{k}_ms_best"] = statistics.median(b), min(b)
    if "tf_ms" in row:
        row["ratio"] = row["hlobridge_ms"] / row["tf_ms"]
    if "xla_ms" in row:
        row["xla_ratio"] = row["xla_ms"] / row["hlobridge_ms"]
    if "ort_ms" in row:
        row["ort_ratio"] = row["hlobridge_ms"] / row["ort_ms"]
    worst = max(row["check_error"], row.get("tf_check_error", 0.0), row.get("ort_check_error", 0.0),
                row.get("xla_check_error", 0.0))
    row["check"] = "ok" if worst <= CHECK_TOLERANCE else "MISMATCH"
    return row


def workloads(names: list[str]) -> list[tuple[Workload, Path, str | None]]:
    """(workload, case folder, inference run name or None) of each name: a case (all its
    runs) or CASE/RUN; bench models not yet written are skipped, saying how to write them."""
    chosen = []
    for name in names:
        case_name, _, run = name.partition("/")
        folder = case_dir(case_name)
        if folder is None:
            if case_name not in BENCH:
                raise SystemExit(f"models.py: no case {case_name!r} in {SHARED} or {BENCH_MODELS}")
            print(f"skipping {case_name}: not in bench-models/; write it with: {MAKE_BENCH} {case_name}",
                  file=sys.stderr)
            continue
        case = Case.load(folder)
        for w in Workload.of_case(case, case.graph_pb_path):
            w_run = None if case.meta["kind"] == "train" else w.name.partition("/")[2]
            if not run or run == w_run:
                chosen.append((w, folder, w_run))
    return chosen


def _ms(row: dict, k: str) -> str:
    return f"{row[f'{k}_ms']:.3g} ({row[f'{k}_ms_best']:.3g})" if f"{k}_ms" in row else "-"


def _geomean(rows: list[dict], key: str) -> str:
    ratios = [r[key] for r in rows if key in r]
    return f"{math.exp(statistics.fmean(map(math.log, ratios))):.2f}" if ratios else ""


def _check(r: dict) -> str:
    if r["check"] == "ok":
        check = "ok"
    else:
        check = (f"{r['check']}: {r['check_error']:.1e} (TF {r.get('tf_check_error', math.nan):.1e}"
                 + (f", ORT {r['ort_check_error']:.1e}" if "ort_check_error" in r else "") + ")")
    check += f"; TF failed: {r['tf_error'][:80]}" if "tf_error" in r else ""
    return check + (f"; ORT failed: {r['ort_error'][:80]}" if "ort_error" in r else "")


def table(rows: list[dict], args, render) -> str:
    xla = args.backend == "xla"
    head = ["model", "hlobridge ms/step", "TF ms/step", "ORT ms/step", "hlobridge/TF", "hlobridge/ORT",
            "cold start s", "warm start s", "TF start s", "check"]
    if xla:
        head[2:2] = ["XLA ms/step", "XLA/IREE", "XLA cold start s"]
    cells = []
    for r in rows:
        if "error" in r:
            cells.append([r["model"], *"-" * (len(head) - 2), f"error: {r['error'].splitlines()[0][:120]}"])
            continue
        cells.append([r["model"], _ms(r, "hlobridge"), _ms(r, "tf"), _ms(r, "ort"),
                      f"{r['ratio']:.2f}" if "ratio" in r else "-",
                      f"{r['ort_ratio']:.2f}" if "ort_ratio" in r else "-",
                      f"{r['cold_start_s']:.2f}", f"{r['warm_start_s']:.2f}",
                      f"{r['tf_start_s']:.2f}" if "tf_start_s" in r else "-", _check(r)])
        if xla:
            cells[-1][2:2] = [_ms(r, "xla"), f"{r['xla_ratio']:.2f}" if "xla_ratio" in r else "-",
                              f"{r['xla_cold_start_s']:.2f}" if "xla_cold_start_s" in r else "-"]
    if any("ratio" in r or "ort_ratio" in r or "xla_ratio" in r for r in rows):
        cells.append(["geometric mean", "", "", "", _geomean(rows, "ratio"), _geomean(rows, "ort_ratio"),
                      "", "", "", ""])
        if xla:
            cells[-1][2:2] = ["", _geomean(rows, "xla_ratio"), ""]
    tf = next((r for r in rows if "tf_version" in r), None)
    ort = next((r for r in rows if "ort_version" in r), None)
    caption = (f"{datetime.date.today()}, {os.cpu_count()} CPUs ({platform.machine()}), device {args.device}; "
               f"ms/step: median (best) of {args.repeat} interleaved blocks"
               + (f" of {args.steps} runs" if args.steps else f" of >= {args.block_s:g} s")
               + (f"; TensorFlow {tf['tf_version']} (oneDNN {tf['onednn']})" if tf else "; TensorFlow not run")
               + (f"; ONNX Runtime {ort['ort_version']} (tf2onnx {ort['tf2onnx_version']}, opset 17, default options)"
                  if ort else "; ONNX Runtime not run"))
    return render(head, cells) + "\n\n" + caption


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="+", default=CORPUS + BENCH, metavar="NAME",
                   help="cases or CASE/RUN (commas or spaces between them); default: every model")
    add_timing_arguments(p, None, steps=None, repeat=7, warmup=3)
    p.add_argument("--block-s", type=float, default=1.0, help="seconds a block lasts, where --steps is not given")
    p.add_argument("--quick", action="store_true",
                   help=f"a smoke run: --repeat {QUICK['repeat']} --warmup {QUICK['warmup']} --block-s {QUICK['block_s']}")
    p.add_argument("--tf-python", default=os.environ.get("HLOBRIDGE_TF_PYTHON", str(ROOT / ".tfvenv" / "bin" / "python")),
                   help="a Python with TensorFlow (default: $HLOBRIDGE_TF_PYTHON, else .tfvenv/bin/python)")
    p.add_argument("--no-tf", action="store_true", help="no TensorFlow columns")
    p.add_argument("--no-ort", action="store_true",
                   help="no ONNX Runtime columns (they need tf2onnx and onnxruntime in --tf-python's environment)")
    p.add_argument("--backend", default="iree", choices=("iree", "xla"),
                   help="xla: also time a Session with backend='xla' (XLA through PJRT) beside IREE's")
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown (the README's)")
    p.add_argument("--json-out", default=None, help="also write every row as JSON")
    args = p.parse_args(argv)
    if args.quick:
        vars(args).update(QUICK)
    names = [n for arg in args.models for n in arg.split(",") if n]
    chosen = workloads(names)
    tf = ort = None
    if not (args.no_tf and args.no_ort) and not Path(args.tf_python).exists():
        p.error(f"no TensorFlow Python at {args.tf_python} (--tf-python PATH, or --no-tf --no-ort)")
    if not args.no_tf:
        tf = TFServer(args.tf_python)
    if not args.no_ort and any(run is not None for _, _, run in chosen):
        ort = ORTServer(args.tf_python)
    rows = []
    try:
        for w, folder, run in chosen:
            try:
                rows.append(bench_workload(w, folder, run, args, tf, ort))
            except Exception as exc:  # noqa: BLE001 - report it in the table, go on with the others
                traceback.print_exc(file=sys.stderr)
                rows.append({"model": w.name, "error": f"{type(exc).__name__}: {exc}"})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
            gc.collect()
    finally:
        for server in (tf, ort):
            if server is not None:
                server.close()
    report(rows, table(rows, args, markdown_table if args.markdown else text_table), args.json_out)
    return 0 if all(r.get("check") == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
