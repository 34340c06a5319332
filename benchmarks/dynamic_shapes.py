#!/usr/bin/env python3
"""Static, dynamic and bucketed modules against each other on whole models (docs/dynamic_shapes.md).

    python benchmarks/dynamic_shapes.py                               # bert2_infer, keras_mobilenetv2 at 1, 8
    python benchmarks/dynamic_shapes.py --models bert2_infer --batches 1 8 32
    python benchmarks/dynamic_shapes.py --no-static                   # skip the separate static modules
    python benchmarks/dynamic_shapes.py --models bert2_dynseq --seq-lens 16 32 64 128 --batches 8

Per model, "dynamic" is the module `hlobridge-compile` writes without --batch-sizes (its `main`
takes any batch); "bucketed" is one module compiled with `--batch-sizes` of the batches
(compile/buckets.py), whose `main` picks `main_b<N>` (the runtime's choice included in the time);
"static" is a separate module compiled for that one batch (`--input-shape`). Per batch the three
take turns in blocks of `--calls` calls, alternating which goes first, `--repeat` blocks each;
ms/call is a block's time / calls, the median over blocks. Feeds are the model's recorded ones
(bench-models/<model>/data.npz), rows repeated to the batch. The machine may be shared: a table
says its load average.

With --seq-lens (a model whose inputs are [batch, length] with both unknown: bert2_dynseq), one
module with both dimensions `?` runs every (batch, length), against a static module per pair;
buckets are for the batch only, so there is no bucketed column.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hlobridge.compile.driver import CompileOptions, compile_graph  # noqa: E402

ROOT = Path(__file__).resolve().parents[1] / "bench-models"


def feeds_for(model: str, batch: int, length: int | None = None) -> dict:
    """The model's first recorded feeds, rows repeated (or cut) to `batch` (and, with `length`,
    each [batch, length]: the recorded values repeated)."""
    data = np.load(ROOT / model / "data.npz")
    run = data.files[0].split("/")[0]
    feeds = {k.split("/feed/")[1]: data[k] for k in data.files if k.startswith(f"{run}/feed/")}
    shape = lambda v: (batch, length) if length else (batch, *v.shape[1:])  # noqa: E731
    return {k: np.resize(v, shape(v)).astype(v.dtype) for k, v in feeds.items()}


def timed(ways: dict, args_: list, repeat: int, calls: int) -> dict:
    """Median ms/call of each way, in interleaved blocks, alternating which goes first."""
    times = {w: [] for w in ways}
    for rep in range(repeat):
        for w in (list(ways) if rep % 2 == 0 else list(reversed(ways))):
            times[w].append(block(ways[w], args_, calls))
    return {w: statistics.median(t) for w, t in times.items()}


def agree(ways: dict, args_: list, outputs: int) -> None:
    """The ways' first outputs agree before they are timed."""
    first = lambda out: np.asarray(out if outputs == 1 else out[0])  # noqa: E731
    ref = first(next(iter(ways.values()))(*args_))
    for w, fn in ways.items():
        got = first(fn(*args_))
        assert np.allclose(got, ref, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(ref).max()))), w


def bench_lengths(model: str, batches: list[int], lengths: list[int], args) -> list[dict]:
    """One module with `?` batch and length against a static module per (batch, length)."""
    graph = ROOT / model / "graph.pb"
    names = [f["name"] for f in json.loads((ROOT / model / "case.json").read_text())["feeds"]]
    dynamic = compiled(f"{model}, `?` batch and length", graph, inputs=names)
    rows = []
    for batch in batches:
        for length in lengths:
            feeds = feeds_for(model, batch, length)
            args_ = [feeds[n] for n in dynamic.input_names]
            static = compiled(f"{model}, {batch}x{length}", graph, inputs=names,
                              input_shapes={n: feeds[n].shape for n in names})
            ways = {"dynamic": dynamic.main, "static": static.main}
            agree(ways, args_, len(dynamic.output_names))
            rows.append({"model": model, "batch": batch, "length": length,
                         **timed(ways, args_, args.repeat, args.calls)})
            print(json.dumps(rows[-1]), file=sys.stderr)
    return rows


def block(fn, feeds: list, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn(*feeds)
    return (time.perf_counter() - start) / calls * 1e3


def compiled(what: str, graph, **kwargs):
    """compile_graph(graph, **kwargs), loaded; how long it took and any flags IREE's compile
    had to drop (compile/iree.py) go to stderr."""
    start = time.perf_counter()
    model = compile_graph(graph, **kwargs)
    dropped = model.stats.get("dropped_flags")
    print(f"{what}: compiled in {time.perf_counter() - start:.0f} s"
          + (f", without {' '.join(dropped)}" if dropped else ""), file=sys.stderr)
    return model.load()


def bench(model: str, batches: list[int], args) -> list[dict]:
    graph = ROOT / model / "graph.pb"
    names = [f["name"] for f in json.loads((ROOT / model / "case.json").read_text())["feeds"]]
    dynamic = compiled(f"{model}, `?` batch", graph, inputs=names)
    bucketed = compiled(f"{model}, buckets {batches}", graph, inputs=names,
                        options=CompileOptions(batch_sizes=tuple(batches)))
    rows = []
    for batch in batches:
        feeds = feeds_for(model, batch)
        args_ = [feeds[n] for n in bucketed.input_names]
        ways = {"dynamic": dynamic.main, "bucketed": bucketed.main}
        assert bucketed.main.pick(args_)[0].name == f"main_b{batch}"
        if not args.no_static:
            ways["static"] = compiled(f"{model}, batch {batch}", graph, inputs=names,
                                      input_shapes={n: feeds[n].shape for n in names}).main
        agree(ways, args_, len(bucketed.output_names))
        rows.append({"model": model, "batch": batch, **timed(ways, args_, args.repeat, args.calls)})
        print(json.dumps(rows[-1]), file=sys.stderr)
    return rows


def length_table(rows: list[dict]) -> str:
    lines = ["| model | batch | length | dynamic ms | static ms | dynamic / static |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['batch']} | {r['length']} | {r['dynamic']:.2f} | {r['static']:.2f} "
                     f"| {r['dynamic'] / r['static']:.2f}x |")
    return "\n".join(lines)


def table(rows: list[dict]) -> str:
    static = any("static" in r for r in rows)
    head = "| model | batch | dynamic ms | bucketed ms |" + (" static ms | bucketed / static |" if static else "") \
        + " dynamic / bucketed |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        cells = [r["model"], str(r["batch"]), f"{r['dynamic']:.2f}", f"{r['bucketed']:.2f}"]
        if static:
            cells += [f"{r['static']:.2f}", f"{r['bucketed'] / r['static']:.2f}x"]
        cells.append(f"{r['dynamic'] / r['bucketed']:.2f}x")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=["bert2_infer", "keras_mobilenetv2"])
    p.add_argument("--batches", nargs="+", type=int, default=[1, 8])
    p.add_argument("--calls", type=int, default=10)
    p.add_argument("--repeat", type=int, default=9)
    p.add_argument("--no-static", action="store_true")
    p.add_argument("--seq-lens", nargs="+", type=int, help="sequence lengths (models with a `?` length)")
    args = p.parse_args()
    rows = []
    for model in args.models:
        rows += bench_lengths(model, args.batches, args.seq_lens, args) if args.seq_lens else \
            bench(model, args.batches, args)
    print(length_table(rows) if args.seq_lens else table(rows))
    print(f"\n{datetime.date.today()}, {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}; `python benchmarks/dynamic_shapes.py "
          f"{' '.join(sys.argv[1:])}`")


if __name__ == "__main__":
    main()
