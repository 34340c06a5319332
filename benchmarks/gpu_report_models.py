#!/usr/bin/env python3
"""The static GPU report (docs/gpu.md) of a whole model's step, per lowering and precision,
without a GPU: each cluster the Session would compile, lowered for a target, compiled for
CUDA, its dispatches read (FLOPs, bytes, pipeline, tensor cores) and estimated on a card.

    python benchmarks/gpu_report_models.py bench-models/resnet50_train_224 --batch 64 \\
        --precision f32 bf16 --lowering cuda llvm-cpu --json out.json
    python benchmarks/gpu_report_models.py ../shared/graphs/cnn_train --lowering cuda llvm-cpu

`--lowering llvm-cpu` lowers as for the CPU (im2col, row taps, MatMul in TF's blocks of 256)
and compiles that for CUDA: what every CUDA build was before the lowering chose per target.
The folder is a corpus case (case.json: its train op and loss, or its fetches, at its own
batch) or holds graph.pb and graph.json (feeds, train_op, loss), as ResNet-50's does
(`.tfvenv/bin/python tools/make_bench_models.py --resnet50-train-graph 224`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hlobridge.compile.gpu_cards import CARDS, DEFAULT_CARD, card as gpu_card  # noqa: E402
from hlobridge.compile.iree import compile_mlir  # noqa: E402
from hlobridge.compile.options import CompileOptions  # noqa: E402
from hlobridge.debug import gpu_report  # noqa: E402
from hlobridge.debug.cluster_dispatches import cluster_launches  # noqa: E402
from hlobridge.frontend.corpus_case import Case  # noqa: E402
from hlobridge.frontend.load import load_graph  # noqa: E402
from hlobridge.passes.graph.mark_for_compilation import ClusterOptions, mark_for_compilation  # noqa: E402


def step_of(folder: Path, batch: int | None, fetch: list | None = None):
    """(graph, fetched names, {feed: shape}) of a graph.json folder or a corpus case (its first
    train step or inference run); `fetch` names other fetches (e.g. ResNet-50's logits:0: its
    forward pass)."""
    if (folder / "graph.json").is_file():
        meta = json.loads((folder / "graph.json").read_text())
        graph = load_graph(folder / "graph.pb")
        fetches = [meta["train_op"], meta["loss"]]
        shapes = {f["name"]: tuple(batch if d is None else d for d in f["shape"]) for f in meta["feeds"]}
    else:
        case = Case.load(folder)
        _, _, fetches, feeds = case.first_run()
        graph = load_graph(case.graph_path)
        shapes = {name: value.shape for name, value in feeds.items()}
    return graph, fetch or fetches, shapes


def report(folder: Path, batch, precision: str, lowering: str, card, fetch=None, fusion="iree",
           iree_flags=()) -> dict:
    """The report of each cluster of the step, and their totals."""
    graph, fetches, shapes = step_of(folder, batch, fetch)
    shapes = {k: v for k, v in shapes.items() if fetch is None or graph.tensor(k).node in
              graph.prune([graph.tensor(f).node if ":" in f else f for f in fetches], ())}
    cut = {graph.tensor(f) for f in shapes}
    fetched = [graph.tensor(f) for f in fetches if ":" in f]
    nodes = graph.prune([graph.node(f).name for f in fetches if ":" not in f] + [r.node for r in fetched], cut)
    clustering = mark_for_compilation(graph, nodes, cut=cut, fetched=fetched, options=ClusterOptions("auto", 4, None))
    options = CompileOptions(target="cuda", lowering_target=lowering, precision=precision, data_tiling="off",
                             fusion=fusion, extra_flags=list(iree_flags))
    clusters = {}
    for name, launch, feeds in cluster_launches(graph, clustering, nodes, cut=list(cut), input_shapes=shapes,
                                                options=options):
        if launch is None:
            clusters[name] = {"error": feeds}
            continue
        start = time.perf_counter()
        opts = launch.compile_options()
        located = launch.lower(feeds, opts.stages()).text(debug_info=True)
        kernels, stats = {}, {}
        compile_mlir(located, opts, stats=stats, kernels=kernels)
        clusters[name] = {**stats, **gpu_report.report(located, opts, kernels, card),
                          "compile_s": round(time.perf_counter() - start, 1)}
    done = [c["gpu"] for c in clusters.values() if "gpu" in c]
    flops, tc = sum(g["flops"] for g in done), sum(g["tensor_core_flops"] for g in done)
    total = {"card": card.name, "flops": flops, "tensor_core_flops": tc,
             "tensor_core_share": round(tc / flops, 4) if flops else 0.0,
             "bytes": sum(g["bytes"] for g in done), "dispatches": sum(g["dispatches"] for g in done),
             "estimated_ms": round(sum(g["estimated_ms"] for g in done), 3)}
    return {"model": folder.name + ("" if fetch is None else f" ({', '.join(fetch)})"),
            "fusion": fusion, "iree_flags": list(iree_flags), "batch": shapes, "precision": precision,
            "lowering": lowering, "gpu": total, "clusters": clusters}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folder", type=Path)
    p.add_argument("--batch", type=int, default=64, help="batch of a graph.json folder (a case has its own)")
    p.add_argument("--precision", nargs="+", default=["f32", "bf16"], help="f32, bf16, f16, bf16x3")
    p.add_argument("--lowering", nargs="+", default=["cuda", "llvm-cpu"], choices=["cuda", "llvm-cpu"])
    p.add_argument("--fetch", action="append", default=None,
                   help="fetch this instead of the train op and loss (repeatable): logits:0 is the forward pass")
    p.add_argument("--fusion", default="iree", choices=["iree", "hlobridge", "none"])
    p.add_argument("--iree-flag", action="append", default=[], help="extra iree-compile flag (repeatable)")
    p.add_argument("--card", default=DEFAULT_CARD, choices=sorted(CARDS))
    p.add_argument("--json", type=Path, default=None, help="write every report here")
    args = p.parse_args(argv)
    reports = []
    print("| model | precision | lowering | dispatches | GFLOP | tensor-core share | GB moved | roofline ms |")
    print("|---|---|---|---|---|---|---|---|")
    for precision in args.precision:
        for lowering in args.lowering:
            r = report(args.folder, args.batch, precision, lowering, gpu_card(args.card), args.fetch, args.fusion,
                       args.iree_flag)
            reports.append(r)
            g = r["gpu"]
            print(f"| {r['model']} | {precision} | {lowering} | {g['dispatches']} | {g['flops'] / 1e9:.1f} | "
                  f"{100 * g['tensor_core_share']:.1f}% | {g['bytes'] / 1e9:.2f} | {g['estimated_ms']:.2f} |",
                  flush=True)
            if args.json:
                args.json.write_text(json.dumps(reports, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
