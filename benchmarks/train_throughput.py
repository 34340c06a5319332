#!/usr/bin/env python3
"""Training throughput (images/s) of one training graph at a chosen batch, per precision:
what a GPU gives on ResNet-50 training at 224x224, batch 64.

    .tfvenv/bin/python tools/make_bench_models.py --resnet50-train-graph 224   # the graph, once
    python benchmarks/train_throughput.py --device cuda --cuda-arch sm_80 --precision f32 bf16
    python benchmarks/train_throughput.py ../shared/graphs/cnn_train --device cpu-task

The folder is a corpus training case (case.json: its step 0, TF's initial values fed to init,
its own batch) or holds graph.pb and graph.json (case.json's feeds, init_op, train_op and
loss) as the ResNet-50 graph's does. Per precision, a new Session (jit="auto",
`--device`, compiled with `--precision`) runs the init op (hlobridge's random kernels draw
TensorFlow's numbers from the graph's seeds, so every precision starts from the same weights),
then the train op on one fixed batch (a graph.json folder's: `--batch` examples, float feeds
standard normal, integer feeds (labels) in {0, 1}, from a fixed seed). Reported per precision:
- cold start: Session() to the first step's loss, compiles included (empty caches);
- first loss, and its difference from the first precision's (f32 unless told otherwise): the
  same weights and batch, so the difference is what the precision costs;
- steady state: `--repeat` blocks of `--steps` steps after `--warmup`; ms/step of the median and
  the best block, and images/s (batch / ms/step) of the median.
TensorFlow is not run: on a GPU machine it is not installed, and on this project's CPU the
model benchmark (models.py) is the comparison.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import Workload, markdown_table, report, start, steady, text_table  # noqa: E402
from hlobridge.compile.cache import clear_memory_cache  # noqa: E402
from hlobridge.compile.options import DEFAULT_CUDA_ARCH, CompileOptions  # noqa: E402
from hlobridge.passes.ir import pipeline  # noqa: E402
from tests.corpus import Case  # noqa: E402

DEFAULT_GRAPH = ROOT / "bench-models" / "resnet50_train_224"
MAKE_GRAPH = ".tfvenv/bin/python tools/make_bench_models.py --resnet50-train-graph 224"


def load_workload(folder: Path, batch: int, seed: int = 0) -> Workload:
    """A corpus training case's first step (its own feeds and batch, TF's initial values fed to
    init), or the step of a graph.json folder on one fixed batch of `batch` examples: training
    (train_op and loss) or inference (outputs, after the init that fills the weights)."""
    if (folder / "case.json").is_file():
        (w,) = Workload.of_case(Case.load(folder))
        return w
    if not (folder / "graph.json").is_file():
        raise SystemExit(f"{folder}: no graph.json or case.json (the ResNet-50 graph: {MAKE_GRAPH})")
    meta = json.loads((folder / "graph.json").read_text())
    rng = np.random.default_rng(seed)
    feeds = {}
    for f in meta["feeds"]:
        shape = [batch if d is None else d for d in f["shape"]]
        if np.issubdtype(np.dtype(f["dtype"]), np.floating):
            feeds[f["name"]] = rng.standard_normal(shape).astype(f["dtype"])
        else:
            feeds[f["name"]] = rng.integers(0, 2, shape).astype(f["dtype"])
    if "outputs" in meta:  # an inference graph whose init fills its weights (--keras-resnet50-graph)
        return Workload(f"{meta['name']}/b{batch}", folder / "graph.pb", meta["init_op"], {}, list(meta["outputs"]),
                        feeds, [None] * len(meta["outputs"]))
    return Workload(meta["name"], folder / "graph.pb", meta["init_op"], {}, [meta["train_op"], meta["loss"]],
                    feeds, [None, None])


def options_for(device: str, precision: str, cuda_arch: str) -> CompileOptions:
    return CompileOptions(target="cuda" if device == "cuda" else "llvm-cpu", precision=precision, cuda_arch=cuda_arch)


def bench_precision(w: Workload, precision: str, batch: int, args) -> dict:
    clear_memory_cache()
    with tempfile.TemporaryDirectory(prefix="hlobridge-throughput-") as cache:
        sess, cold_s, (_, loss) = start(w, "auto", args.device, cache,
                                        options_for(args.device, precision, args.cuda_arch))
        blocks = steady(sess, w, args.steps, args.repeat, args.warmup)
    ms = statistics.median(blocks)
    return {"precision": precision, "cold_start_s": cold_s, "first_loss": float(loss), "ms_per_step": ms,
            "ms_per_step_best": min(blocks), "images_per_s": batch / ms * 1e3, "device": args.device,
            "batch": batch, "graph": w.name}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folder", nargs="?", type=Path, default=DEFAULT_GRAPH,
                   help="a folder with graph.pb and graph.json or case.json (default bench-models/resnet50_train_224)")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--device", default="cuda", help="cuda (default), cpu-task or cpu")
    p.add_argument("--cuda-arch", default=DEFAULT_CUDA_ARCH)
    p.add_argument("--precision", nargs="+", default=["f32", "bf16"], choices=pipeline.PRECISIONS)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--json-out")
    args = p.parse_args(argv)
    w = load_workload(args.folder, args.batch)
    batch = len(next(iter(w.feeds.values())))
    rows = [bench_precision(w, precision, batch, args) for precision in args.precision]
    head = ["precision", "cold start (s)", "first loss", "vs first", "ms/step median", "ms/step best", "images/s"]
    cells = [[r["precision"], f"{r['cold_start_s']:.1f}", f"{r['first_loss']:.5f}",
              f"{abs(r['first_loss'] - rows[0]['first_loss']) / max(abs(rows[0]['first_loss']), 1e-30):.1e}",
              f"{r['ms_per_step']:.2f}", f"{r['ms_per_step_best']:.2f}", f"{r['images_per_s']:.0f}"] for r in rows]
    caption = f"{w.name}, batch {batch}, device {args.device}; medians of {args.repeat} blocks of {args.steps} steps"
    report(rows, caption + "\n\n" + (markdown_table if args.markdown else text_table)(head, cells), args.json_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
