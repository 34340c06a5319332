#!/usr/bin/env python3
"""Depthwise 3x3 convolutions (SAME, stride 1, then ReLU6, as MobileNetV2's blocks have them):
hlobridge's lowering (a grouped `stablehlo.convolution`, ops/nn/conv.py) against a per-channel
multiply-add over the nine taps, the alternative issue 34 proposed, at MobileNetV2's shapes.

    python benchmarks/depthwise_taps.py                       # MobileNetV2 96x96's five shapes
    python benchmarks/depthwise_taps.py --shapes 5x12x12x192 --repeat 21 --markdown

Both are TensorFlow graphs built here and compiled by a Session (one cluster each,
min_cluster_size 1): `DepthwiseConv2dNative` + `Relu6`, and the same as `Pad`, nine `Slice`s each
times its row of the filter (a [C] constant), `AddN`, `Relu6`. Their results are compared (the
largest difference is a column) and they are timed in interleaved blocks (benchmarks/models.py's
`interleaved`): microseconds per run, median (best).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import Workload, measured_rows, table_of, time_block  # noqa: E402
from benchmarks.models import interleaved  # noqa: E402
from hlobridge.frontend.graph_builder import GraphBuilder  # noqa: E402
from hlobridge.runtime.session import Session  # noqa: E402

SHAPES = ["5x48x48x96", "5x24x24x144", "5x12x12x192", "5x6x6x576", "5x3x3x960"]  # NHWC, stride-1 blocks
F32 = {"T": np.float32}


def grouped(shape: tuple, w: np.ndarray):
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, shape)
    conv = b.op("DepthwiseConv2dNative", [x, b.const("w", w)], strides=[1, 1, 1, 1], padding="SAME",
                data_format="NHWC", dilations=[1, 1, 1, 1], **F32)
    b.op("Relu6", [conv], name="y", **F32)
    return b.graph()


def taps(shape: tuple, w: np.ndarray):
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, shape)
    pads = b.const("pads", np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32))
    xp = b.op("Pad", [x, pads], Tpaddings=np.int32, **F32)
    size = b.const("size", np.array(shape, np.int32))
    terms = [b.op("Mul", [b.op("Slice", [xp, b.const(f"at{i}{j}", np.array([0, i, j, 0], np.int32)), size],
                                Index=np.int32, **F32), b.const(f"w{i}{j}", w[i, j, :, 0].copy())], **F32)
             for i in range(3) for j in range(3)]
    b.op("Relu6", [b.op("AddN", terms, N=9, **F32)], name="y", **F32)
    return b.graph()


def measure(shape_text: str, repeat: int, block_s: float) -> dict:
    shape = tuple(int(d) for d in shape_text.split("x"))
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 3, shape[-1], 1)).astype(np.float32)
    x = rng.standard_normal(shape).astype(np.float32)
    sessions = {k: Session(build(shape, w), cache_dir=False, min_cluster_size=1)
                for k, build in (("grouped", grouped), ("taps", taps))}
    out = {k: s.run("y:0", {"x:0": x}) for k, s in sessions.items()}
    run = Workload(shape_text, None, None, {}, "y:0", {"x:0": x}, [])
    _, ms = interleaved({k: partial(time_block, s, run) for k, s in sessions.items()},
                        argparse.Namespace(repeat=repeat, block_s=block_s, warmup=3, steps=None))
    med = {k: statistics.median(v) for k, v in ms.items()}
    return {"NHWC": shape_text,
            **{f"{k} us": f"{med[k] * 1e3:.0f} ({min(ms[k]) * 1e3:.0f})" for k in sessions},
            "taps/grouped": f"{med['taps'] / med['grouped']:.2f}",
            "largest difference": f"{float(np.abs(out['taps'] - out['grouped']).max()):.1e}"}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", nargs="+", default=SHAPES, metavar="NxHxWxC")
    p.add_argument("--repeat", type=int, default=11)
    p.add_argument("--block-s", type=float, default=0.2)
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args(argv)
    rows = measured_rows(lambda s: measure(s, args.repeat, args.block_s), [(s,) for s in args.shapes])
    print(table_of(rows, args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
