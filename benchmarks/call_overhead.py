#!/usr/bin/env python3
"""The cost of a call: what a warm call of a cluster that computes (next to) nothing costs
through each API, against IREE's own `iree-benchmark-module` on the same binary.

    python benchmarks/call_overhead.py                      # both graphs, every path
    python benchmarks/call_overhead.py --repeat 15 --markdown --json-out calls.json
    python benchmarks/call_overhead.py --profile            # Python function calls per call

Two graphs, built here, each one cluster (min_cluster_size 1):
- empty: y = x + 0 over float32[1] (the simplifier leaves a function that returns its input);
- tiny: y = tanh(x * 2 + 1) over float32[4, 4] (one dispatch).
A Session on --device (default cpu-task: a cluster this small runs on the calling thread,
local-sync) runs it once; its binary is then timed, per call, through
- Session.run: `sess.run("y:0", {"x:0": x})`;
- Session.run pool: the same on a Session whose clusters all run on the thread pool
  (HLOBRIDGE_FLAGS --small-cluster-flops=0, local-task), the hand-off the default spares them;
- runtime.run: `hlobridge.runtime.load(vmfb, device).run({"x": x})` (dict in, dict out);
- runtime.main: `m.main(x)` (arrays in and out);
- invoke: the IREE Python binding's own call of the function (`m.main.invoke(x)`), with the
  result left on the device: the floor for anything written in Python on top of it;
- iree-benchmark-module: IREE's C benchmark of the same .vmfb and input (--device, its own
  repetitions; no Python at all).
Python paths are timed in interleaved blocks (benchmarks/models.py's `interleaved`): median
and best of `--repeat` blocks, in microseconds per call. `--profile` runs each Python path
under cProfile and reports the Python function calls per call, a count a loaded machine does
not disturb.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import report, table_of  # noqa: E402
from benchmarks.models import interleaved  # noqa: E402
import hlobridge  # noqa: E402
from hlobridge import flags  # noqa: E402
from hlobridge.frontend.graph_builder import GraphBuilder  # noqa: E402

IREE_DRIVERS = {"cpu": "local-sync", "cpu-task": "local-task", "cuda": "cuda"}


def empty_graph():
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (1,))
    b.op("AddV2", [x, b.const("zero", np.float32(0))], name="y", T=np.float32)
    return b.graph(), np.ones(1, np.float32)


def tiny_graph():
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (4, 4))
    f32 = {"T": np.float32}
    y = b.op("AddV2", [b.op("Mul", [x, b.const("two", np.float32(2))], **f32), b.const("one", np.float32(1))], **f32)
    b.op("Tanh", [y], name="y", **f32)
    return b.graph(), np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4)


GRAPHS = {"empty": empty_graph, "tiny": tiny_graph}


def the_executable(sess):
    """The Session's one compiled signature."""
    (exe,) = [e for plan in sess._plans.values() for u in plan.units for e in getattr(u, "executables", {}).values()]
    return exe


def paths(name: str, device: str, tmp: Path) -> tuple[dict, dict]:
    """({path: one call}, what the iree-benchmark-module run needs) for graph `name`."""
    graph, x = GRAPHS[name]()
    sess = hlobridge.Session(graph, device=device, min_cluster_size=1, cache_dir=False)
    want = sess.run("y:0", {"x:0": x})
    exe = the_executable(sess)
    vmfb = tmp / f"{name}.vmfb"
    vmfb.write_bytes(exe.vmfb)
    m = hlobridge.runtime.load(vmfb, exe.device)
    for got in (m.run({"x": x})["y:0"], m.main(x)):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    with flags.environment(f"{os.environ.get(flags.ENV_VAR, '')} --small-cluster-flops=0"):
        pool = hlobridge.Session(graph, device=device, min_cluster_size=1, cache_dir=False)
        pool.run("y:0", {"x:0": x})
    calls = {"Session.run": lambda: sess.run("y:0", {"x:0": x}), "Session.run pool": lambda: pool.run("y:0", {"x:0": x}),
             "runtime.run": lambda: m.run({"x": x}),
             "runtime.main": lambda: m.main(x), "invoke": partial(m.main.invoke, x)}
    np.save(tmp / f"{name}.npy", x)
    return calls, {"vmfb": vmfb, "npy": tmp / f"{name}.npy", "device": exe.device}


def block(call, steps: int) -> float:
    """ms per call of `steps` calls in a row (the unit `interleaved` takes)."""
    import time
    t = time.perf_counter()
    for _ in range(steps):
        call()
    return (time.perf_counter() - t) / steps * 1e3


def iree_benchmark(run: dict, repeat: int) -> tuple[float, float]:
    """(median, best) microseconds of iree-benchmark-module's repetitions on the binary."""
    tool = Path(sys.executable).parent / "iree-benchmark-module"
    cmd = [str(tool if tool.exists() else "iree-benchmark-module"), f"--module={run['vmfb']}", "--function=main",
           f"--device={IREE_DRIVERS.get(run['device'], run['device'])}", f"--input=@{run['npy']}",
           f"--benchmark_repetitions={repeat}", "--benchmark_format=json", "--benchmark_min_time=0.2s"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    times = [b["real_time"] * {"ns": 1e-3, "us": 1.0, "ms": 1e3}[b["time_unit"]]
             for b in json.loads(out[out.index("{"):])["benchmarks"] if b.get("run_type") == "iteration"]
    return statistics.median(times), min(times)


def calls_per_call(call, n: int = 2000) -> float:
    """Python function calls (cProfile's count, C functions included) per call, warm."""
    call()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        call()
    prof.disable()
    return pstats.Stats(prof).total_calls / n


def measure(name: str, args, tmp: Path) -> list[dict]:
    calls, run = paths(name, args.device, tmp)
    timing = argparse.Namespace(repeat=args.repeat, block_s=args.block_s, warmup=3, steps=None)
    _, ms = interleaved({k: partial(block, c) for k, c in calls.items()}, timing)
    rows = [{"graph": name, "path": k, "device": "cpu-task" if k.endswith("pool") else run["device"], "us_median": statistics.median(b) * 1e3,
             "us_best": min(b) * 1e3} for k, b in ms.items()]
    if not args.no_iree_benchmark:
        med, best = iree_benchmark(run, args.repeat)
        rows.append({"graph": name, "path": "iree-benchmark-module", "device": run["device"], "us_median": med,
                     "us_best": best})
    if args.profile:
        for row in rows:
            if row["path"] in calls:
                row["python_calls"] = calls_per_call(calls[row["path"]])
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("graphs", nargs="*", default=list(GRAPHS), help=f"of {sorted(GRAPHS)} (default: both)")
    p.add_argument("--device", default="cpu-task", help="the Session's device (cpu-task, cpu, cuda)")
    p.add_argument("--repeat", type=int, default=9)
    p.add_argument("--block-s", type=float, default=0.2)
    p.add_argument("--profile", action="store_true", help="also count Python function calls per call (cProfile)")
    p.add_argument("--no-iree-benchmark", action="store_true", help="skip iree-benchmark-module")
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--json-out", default=None)
    args = p.parse_args(argv)
    if unknown := [g for g in args.graphs if g not in GRAPHS]:
        p.error(f"no graph {', '.join(unknown)}; choose from {', '.join(GRAPHS)}")
    with tempfile.TemporaryDirectory(prefix="hlobridge-calls-") as tmp:
        rows = [r for g in args.graphs for r in measure(g, args, Path(tmp))]
    cells = [{"graph": r["graph"], "path": r["path"], "device": r["device"],
              "us/call median (best)": f"{r['us_median']:.1f} ({r['us_best']:.1f})",
              **({"Python calls/call": f"{r['python_calls']:.0f}" if "python_calls" in r else "-"}
                 if args.profile else {})} for r in rows]
    report(rows, table_of(cells, args.markdown), args.json_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
