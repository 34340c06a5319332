#!/usr/bin/env python3
"""Compile a corpus case (a folder with case.json, such as tests/conformance/dynamic_batch or
bench-models/keras_mobilenetv2) ONCE with its unknown dimensions left dynamic, and run that one
module at every run's sizes against TensorFlow's results (docs/dynamic_shapes.md). A check for
the big models, outside the test suite:

    .venv/bin/python tools/dynamic_shapes_check.py bench-models/keras_mobilenetv2 bench-models/bert2_infer
    .venv/bin/python tools/dynamic_shapes_check.py --time 200 tests/conformance/dynamic_bert

`--time N` also compiles a static module for each run's shapes and times N calls of each,
interleaved in blocks of 10, printing the medians (dynamic over static).
`--pad N` also compiles with a static batch-N function and padding allowed
(`--batch-sizes N --pad-to-batch-sizes`) and runs each run's first N//2+1 rows padded to N,
against the dynamic function at that batch:

    .venv/bin/python tools/dynamic_shapes_check.py --pad 8 bench-models/bert2_infer
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hlobridge.compile.driver import CompileOptions, compile_graph  # noqa: E402
from hlobridge.frontend.corpus_case import Case  # noqa: E402


def _timed(module, feeds, reps: int) -> list[float]:
    out = []
    for _ in range(reps):
        start = time.perf_counter()
        module.run(feeds)
        out.append(time.perf_counter() - start)
    return out


def speed(case, run, module, reps: int) -> None:
    """Median call time of the dynamic module and of a static one for this run's shapes."""
    feeds = {k: case.array(v) for k, v in run["feeds"].items()}
    static = compile_graph(case.graph_path, inputs=list(feeds), outputs=list(run["expected"]),
                           input_shapes={k: v.shape for k, v in feeds.items()}).load()
    dyn, sta = [], []
    for _ in range(max(1, reps // 10)):
        dyn += _timed(module, feeds, 10)
        sta += _timed(static, feeds, 10)
    d, s = np.median(dyn) * 1e3, np.median(sta) * 1e3
    print(f"  {run.get('name')}: dynamic {d:.3f} ms, static {s:.3f} ms, dynamic/static {d / s:.2f}x")


def padded(case, size: int) -> bool:
    """Each run's first size//2+1 rows through the padded main_b<size>, against the dynamic main."""
    run0 = case.meta["runs"][0]
    model = compile_graph(case.graph_path, inputs=list(run0["feeds"]), outputs=list(run0["expected"]),
                          options=CompileOptions(batch_sizes=(size,), pad_batches=True))
    print(f"  --pad {size}: padding {model.lowered.notes['batch_padding']}")
    main, ok = model.load().main, True
    for run in case.meta["runs"]:
        args = [case.array(run["feeds"][name])[:size // 2 + 1] for name in main.input_names]
        fn, to = main.pick(args)
        got, want = main(*args), main.dynamic(*args)
        for i, (g, w) in enumerate(zip(got if isinstance(got, tuple) else (got,),
                                       want if isinstance(want, tuple) else (want,))):
            good = to is not None and np.allclose(g, w, rtol=1e-6, atol=1e-6)
            ok &= bool(good)
            print(f"  {run.get('name')}: batch {len(args[0])} in {fn.name} padded to {to}, output {i} "
                  f"max abs difference to the dynamic main {float(np.abs(g - w).max()):.2e} "
                  f"{'ok' if good else 'NOT PADDED OR DIFFERENT'}")
    return ok


def check(path: str, reps: int = 0, pad: int = 0) -> bool:
    """Print one line per run (max abs error against TF, within the case's tolerance or not)."""
    case = Case.load(path)
    run0 = case.meta["runs"][0]
    start = time.perf_counter()
    model = compile_graph(case.graph_path, inputs=list(run0["feeds"]), outputs=list(run0["expected"]))
    inputs = ", ".join(f"{n}: {s}" for n, s in model.lowered.signature.inputs)
    print(f"{path}: one module ({inputs}) in {time.perf_counter() - start:.1f} s")
    module, tol, ok = model.load(), case.tolerance, True
    for run in case.meta["runs"]:
        feeds = {k: case.array(v) for k, v in run["feeds"].items()}
        got = module.run(feeds)
        for key, ref in run["expected"].items():
            want = case.array(ref)
            good = np.allclose(got[key], want, rtol=tol["rtol"], atol=tol["atol"])
            err = float(np.abs(got[key] - want).max()) if want.size else 0.0
            ok &= bool(good)
            print(f"  {run.get('name')}: {key} {list(got[key].shape)} max abs error {err:.2e} "
                  f"{'ok' if good else 'OUT OF TOLERANCE'}")
        if reps:
            speed(case, run, module, reps)
    return ok and (not pad or padded(case, pad))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="+")
    parser.add_argument("--time", type=int, default=0, metavar="N", help="time N calls, dynamic and static")
    parser.add_argument("--pad", type=int, default=0, metavar="N",
                        help="also run batch N//2+1 padded into a static batch-N function")
    args = parser.parse_args(argv)
    return 0 if all([check(c, args.time, args.pad) for c in args.cases]) else 1


if __name__ == "__main__":
    sys.exit(main())
