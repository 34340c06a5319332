#!/usr/bin/env python3
"""Where a cluster should run: on the calling thread (IREE's local-sync, `device="cpu"`) or on
the thread pool (local-task, `"cpu-task"`), by its estimated work (passes/ir/work_estimate.py).

    python benchmarks/small_clusters.py                   # the sweep below, about a minute
    python benchmarks/small_clusters.py --repeat 9 --markdown

Each row is one Session step of a graph built here: an MLP's inference, relu(x W1 + b1) W2,
at a batch and width chosen to sweep the work from 0.1 to 400 Mflop, plus an elementwise chain
over a wide tensor (memory, not arithmetic). Both executors run the same compiled binary, in
alternating blocks (`--repeat` each, as benchmarks/models.py times them); the table has the
median ms/step of each and their ratio.
HLOBRIDGE_FLAGS --small-cluster-flops (default 3e7) is the work at or below which a Session on
"cpu-task" runs a cluster on the calling thread: this sweep is where that number comes from.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from functools import partial
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import Workload, measured_rows, table_of, time_block  # noqa: E402
from benchmarks.models import interleaved  # noqa: E402
from hlobridge import flags  # noqa: E402
from hlobridge.frontend.graph_builder import GraphBuilder  # noqa: E402
from hlobridge.runtime.session import Session  # noqa: E402
from passes.ir.work_estimate import WORK_KEY  # noqa: E402

# (batch, input width, hidden width, output width) of the MLPs
MLPS = [(4, 64, 64, 10), (16, 256, 128, 10), (32, 512, 256, 10), (64, 784, 256, 10), (100, 784, 512, 10),
        (128, 1024, 1024, 10), (256, 1024, 1024, 100)]
WIDE = [2**14, 2**17, 2**20]  # elements of the elementwise chains


def mlp(batch: int, width: int, hidden: int, out: int):
    """relu(x W1 + b1) W2 + b2 with random constant weights; (graph, fetch, feeds)."""
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (batch, width))
    w1 = b.const("w1", rng.standard_normal((width, hidden)).astype(np.float32) * 0.05)
    b1 = b.const("b1", rng.standard_normal(hidden).astype(np.float32))
    w2 = b.const("w2", rng.standard_normal((hidden, out)).astype(np.float32) * 0.05)
    h = b.op("Relu", [b.op("BiasAdd", [b.op("MatMul", [x, w1], T=np.float32), b1], T=np.float32)], T=np.float32)
    b.op("MatMul", [h, w2], name="y", T=np.float32)
    return b.graph(), "y:0", {"x:0": rng.standard_normal((batch, width)).astype(np.float32)}


def elementwise(n: int):
    """tanh(x * 2 + 1) * x - x / 3: a chain over n elements; (graph, fetch, feeds)."""
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (n,))
    t = b.op("Tanh", [b.op("AddV2", [b.op("Mul", [x, b.const("two", np.float32(2))], T=np.float32),
                                     b.const("one", np.float32(1))], T=np.float32)], T=np.float32)
    b.op("Sub", [b.op("Mul", [t, x], T=np.float32),
                 b.op("RealDiv", [x, b.const("three", np.float32(3))], T=np.float32)], name="y", T=np.float32)
    return b.graph(), "y:0", {"x:0": np.random.default_rng(0).standard_normal(n).astype(np.float32)}


def every_cluster_on_the_pool():
    """HLOBRIDGE_FLAGS --small-cluster-flops=0 for the Sessions started inside (a cluster's
    executor is chosen when it is loaded): "cpu-task" then means the pool, however small."""
    return flags.environment(f"{os.environ.get(flags.ENV_VAR, '')} --small-cluster-flops=0")


def measure(name: str, graph, fetch: str, feeds: dict, repeat: int, block_s: float) -> dict:
    """One row: the graph's step on the calling thread and on the pool, alternating blocks."""
    with every_cluster_on_the_pool():
        sessions = {d: Session(graph, device=d, cache_dir=False) for d in ("cpu", "cpu-task")}
        for s in sessions.values():
            s.run(fetch, feeds)
    (exe,) = [e for launch in _launches(sessions["cpu-task"]) for e in launch.executables.values()]
    if exe.device != "cpu-task":
        raise SystemExit(f"{name}: the pool's Session runs on {exe.device}: HLOBRIDGE_FLAGS was not applied")
    step = Workload(name, graph, None, {}, fetch, feeds, [])
    timers = {d: partial(time_block, s, step) for d, s in sessions.items()}
    timing = argparse.Namespace(repeat=repeat, block_s=block_s, warmup=3, steps=None)
    _, ms = interleaved(timers, timing)
    sync, pool = statistics.median(ms["cpu"]), statistics.median(ms["cpu-task"])
    work = int(exe.module.functions["main"].reflection[WORK_KEY])
    return {"graph": name, "Mflop": f"{work / 1e6:.3g}", "calling thread ms": f"{sync:.3g}",
            "thread pool ms": f"{pool:.3g}", "thread/pool": f"{sync / pool:.2f}"}


def _launches(sess: Session):
    """The Session's cluster launches (every plan it made)."""
    for plan in sess._plans.values():
        for unit in plan.units:
            if hasattr(unit, "executables"):
                yield unit


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--block-s", type=float, default=0.2)
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args(argv)
    cases = [(f"mlp {b}x{w}x{h}x{o}", *mlp(b, w, h, o)) for b, w, h, o in MLPS]
    cases += [(f"elementwise {n}", *elementwise(n)) for n in WIDE]
    rows = measured_rows(lambda *case: measure(*case, args.repeat, args.block_s), cases)
    print(table_of(rows, args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
