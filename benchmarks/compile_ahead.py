#!/usr/bin/env python3
"""Cold starts of graphs with several clusters: compiled side by side before the first run
(`compile_ahead`, the default) against one at a time as each first runs (HLOBRIDGE_FLAGS
--no-compile-ahead), and clusters alike but for names compiled once.

    python benchmarks/compile_ahead.py                    # the rows below, about two minutes
    python benchmarks/compile_ahead.py --repeat 7 --markdown

Each graph is a chain of towers (dense layers, ReLU) with a round trip through strings
(AsString, StringToNumber: host kernels) between towers, so each tower is a cluster of its
own whose signature planning knows. Towers with weights of their own compile one binary each;
"alike" towers have the same weights, and share one binary whichever way they compile. A cold
start is a new Session (no disk cache, the memory cache cleared) to its first result; the two
ways alternate, `--repeat` starts each, and the table has their medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import measured_rows, table_of  # noqa: E402
from hlobridge import flags  # noqa: E402
from hlobridge.compile.cache import clear_memory_cache  # noqa: E402
from hlobridge.frontend.graph_builder import GraphBuilder  # noqa: E402
from hlobridge.runtime.session import Session  # noqa: E402

# (towers, layers per tower, width, towers alike)
GRAPHS = [(2, 4, 256, False), (4, 4, 256, False), (4, 4, 256, True)]


def towers(count: int, depth: int, width: int, alike: bool):
    """x -> tower 0 -> strings and back -> tower 1 -> ...; (graph, fetch, feeds)."""
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (8, width))
    for t in range(count):
        rng = np.random.default_rng(0 if alike else t)
        for i in range(depth):
            w = b.const(f"t{t}/w{i}", (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32))
            x = b.op("Relu", [b.op("MatMul", [x, w], name=f"t{t}/mm{i}", T=np.float32)], name=f"t{t}/relu{i}",
                     T=np.float32)
        if t < count - 1:
            text = b.op("AsString", [x], name=f"t{t}/text", T=np.float32)
            x = b.op("StringToNumber", [text], name=f"t{t}/back", out_type=np.float32)
    feeds = {"x:0": np.random.default_rng(9).standard_normal((8, width)).astype(np.float32)}
    return b.graph(), x, feeds


def cold_start(graph, fetch: str, feeds: dict, ahead: bool) -> tuple[float, list]:
    """Seconds from a new Session to its first result, and its compile events."""
    clear_memory_cache()
    extra = "" if ahead else " --no-compile-ahead"
    with flags.environment(os.environ.get(flags.ENV_VAR, "") + extra):
        t = time.perf_counter()
        sess = Session(graph, cache_dir=False)
        sess.run(fetch, feeds)
        return time.perf_counter() - t, list(sess.compile_events)


def measure(count: int, depth: int, width: int, alike: bool, repeat: int) -> dict:
    """One row: the graph's cold start each way, alternating, `repeat` times each."""
    graph, fetch, feeds = towers(count, depth, width, alike)
    seconds = {True: [], False: []}
    compiled = set()
    for r in range(repeat):
        for ahead in ((True, False) if r % 2 else (False, True)):
            s, events = cold_start(graph, fetch, feeds, ahead)
            seconds[ahead].append(s)
            compiled.add(sum(e.source == "compiled" for e in events))
    lazy, ahead = statistics.median(seconds[False]), statistics.median(seconds[True])
    return {"graph": f"{count} towers x {depth} dense {width}{' alike' if alike else ''}", "clusters": str(count),
            "compiles": "/".join(map(str, sorted(compiled))), "one at a time s": f"{lazy:.2f}",
            "side by side s": f"{ahead:.2f}", "side by side / one at a time": f"{ahead / lazy:.2f}"}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args(argv)
    rows = measured_rows(lambda *graph: measure(*graph, repeat=args.repeat), GRAPHS)
    print(table_of(rows, args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
