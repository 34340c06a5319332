#!/usr/bin/env python3
"""Loading a large text GraphDef: parsed cold, from the parsed-graph cache (warm), and its `.pb`.

    python benchmarks/text_graph_start.py model.pbtxt model.pb            # 3 rounds
    python benchmarks/text_graph_start.py model.pbtxt model.pb --repeat 5 --markdown

Each load is a new process timing `load_graph` alone (the interpreter and hlobridge's import
are not counted): "cold" with an empty cache directory (it parses the text and writes the
entry), "warm" with that entry present (frontend/text_cache.py: hash the text, parse the kept
binary), ".pb" the binary file itself. The three alternate in each round; the table has their
medians. A frozen model makes a realistic file: docs/text-graph-cache.md says how one was made.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_TIME_ONE_LOAD = """
import sys, time
from hlobridge import load_graph
t = time.perf_counter()
graph = load_graph(sys.argv[1])
print(time.perf_counter() - t, len(graph.nodes))
"""


def timed_load(path: Path, cache: Path) -> tuple[float, int]:
    """(seconds, nodes) of one load_graph in a new process with HLOBRIDGE_CACHE_DIR=cache."""
    run = subprocess.run([sys.executable, "-c", _TIME_ONE_LOAD, str(path)], capture_output=True, text=True,
                         cwd=ROOT, env={**os.environ, "HLOBRIDGE_CACHE_DIR": str(cache)}, check=True)
    seconds, nodes = run.stdout.split()
    return float(seconds), int(nodes)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("pbtxt", type=Path)
    p.add_argument("pb", type=Path, nargs="?", help="the same graph in binary (optional)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args(argv)
    times: dict[str, list[float]] = {"cold (.pbtxt parsed)": [], "warm (.pbtxt, cached parse)": [], ".pb": []}
    nodes = set()
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeat):
            cache = Path(tmp) / f"round{r}"
            for label, path in zip(times, (args.pbtxt, args.pbtxt, args.pb)):
                if path is not None:
                    seconds, n = timed_load(path, cache)
                    times[label].append(seconds)
                    nodes.add(n)
                    print(f"round {r}: {label}: {seconds:.2f} s", file=sys.stderr)
    assert len(nodes) == 1, f"the loads disagree on the node count: {nodes}"
    size = args.pbtxt.stat().st_size / 1e6
    rows = [(label, statistics.median(ts)) for label, ts in times.items() if ts]
    if args.markdown:
        print(f"| load of {args.pbtxt.name} ({size:.0f} MB, {nodes.pop()} nodes) | median s |\n|---|---|")
        for label, t in rows:
            print(f"| {label} | {t:.2f} |")
    else:
        for label, t in rows:
            print(f"{label:32s} {t:8.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
