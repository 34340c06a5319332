#!/usr/bin/env python3
"""Depthwise 3x3 convolutions + ReLU6 at MobileNetV2 96x96's shapes, each compiled twice by
iree-compile with hlobridge's CPU flags for constant-weight modules: with the convolution's zero
padding as a copy dispatch of its own (IREE's default) and fused into the convolution's dispatch
(`--iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops`, compile/options.py's
PAD_FUSION_FLAG). Both are timed by iree-benchmark-module on `local-sync`, in interleaved runs,
as the CPU time of its one thread (the median of 3 repetitions: on a shared machine the time spent
waiting for a core is left out); their results are compared first.

    python benchmarks/depthwise_padding.py                  # every shape class, 7 runs each
    python benchmarks/depthwise_padding.py --shapes s1:5x24x24x144 --runs 3 --markdown

A shape is `s1:NxHxWxC` (stride 1, SAME: TensorFlow's DepthwiseConv2dNative padding 1) or
`s2:NxHxWxC` (stride 2 after Keras' ZeroPadding2D((0, 1), (0, 1)), VALID: an explicit pad).
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hlobridge.compile.options import PAD_FUSION_FLAG, CompileOptions  # noqa: E402

SHAPES = ["s1:5x48x48x32", "s1:5x24x24x144", "s1:5x12x12x192", "s1:5x6x6x384", "s1:5x6x6x576", "s1:5x3x3x960",
          "s2:5x48x48x96", "s2:5x24x24x144", "s2:5x12x12x192", "s2:5x6x6x576"]
TOOLS = Path(sys.executable).parent


def module(kind: str, n: int, h: int, w: int, c: int) -> str:
    """The StableHLO of one depthwise convolution + ReLU6, as hlobridge lowers it (ops/nn/conv.py)."""
    t = lambda *d: "tensor<" + "x".join(map(str, d)) + "xf32>"  # noqa: E731
    if kind == "s1":
        oh, ow, pad, x, xt, stride = h, w, "[[1, 1], [1, 1]]", "%x", t(n, h, w, c), 1
        pre = ""
    else:
        oh, ow, pad, x, xt, stride = h // 2, w // 2, "[[0, 0], [0, 0]]", "%p", t(n, h + 1, w + 1, c), 2
        pre = (f"    %p = stablehlo.pad %x, %z, low = [0, 0, 0, 0], high = [0, 1, 1, 0], interior = [0, 0, 0, 0]"
               f" : ({t(n, h, w, c)}, tensor<f32>) -> {xt}\n")
    out = t(n, oh, ow, c)
    return (f"func.func @main(%x: {t(n, h, w, c)}, %k: {t(3, 3, 1, c)}) -> {out} {{\n"
            f"    %z = stablehlo.constant dense<0.0> : tensor<f32>\n    %six = stablehlo.constant dense<6.0> : tensor<f32>\n"
            f"{pre}    %y = stablehlo.convolution({x}, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], "
            f"window = {{stride = [{stride}, {stride}], pad = {pad}, lhs_dilate = [1, 1], rhs_dilate = [1, 1]}} "
            f"{{batch_group_count = 1 : i64, feature_group_count = {c} : i64}} : ({xt}, {t(3, 3, 1, c)}) -> {out}\n"
            f"    %r = stablehlo.clamp %z, %y, %six : (tensor<f32>, {out}, tensor<f32>) -> {out}\n"
            f"    return %r : {out}\n}}\n")


def run(tool: str, *args: str) -> str:
    return subprocess.run([str(TOOLS / tool), *args], check=True, capture_output=True, text=True).stdout


def measure(shape: str, runs: int, tmp: Path) -> dict:
    kind, dims = shape.split(":")
    n, h, w, c = map(int, dims.split("x"))
    src = tmp / f"{kind}_{dims}.mlir"
    src.write_text(module(kind, n, h, w, c))
    flags = [f for f in CompileOptions().for_module(reads_variables=False).iree_flags() if f != PAD_FUSION_FLAG]
    rng = np.random.default_rng(0)
    np.save(tmp / "x.npy", rng.standard_normal((n, h, w, c), dtype=np.float32))
    np.save(tmp / "k.npy", rng.standard_normal((3, 3, 1, c), dtype=np.float32))
    variants = {"copy": flags, "fused": flags + [PAD_FUSION_FLAG]}
    outs, times = {}, {v: [] for v in variants}
    for v, fl in variants.items():
        run("iree-compile", "--iree-input-type=stablehlo", "--iree-hal-target-backends=llvm-cpu", *fl, str(src),
            "-o", str(tmp / f"{v}.vmfb"))
        run("iree-run-module", f"--module={tmp / v}.vmfb", "--device=local-sync", "--function=main",
            f"--input=@{tmp / 'x.npy'}",
            f"--input=@{tmp / 'k.npy'}", f"--output=@{tmp / v}.npy")
        outs[v] = np.load(tmp / f"{v}.npy")
    for i in range(runs):
        for v in (list(variants) if i % 2 == 0 else list(variants)[::-1]):
            text = run("iree-benchmark-module", f"--module={tmp / v}.vmfb", "--device=local-sync", "--function=main",
                       f"--input=@{tmp / 'x.npy'}", f"--input=@{tmp / 'k.npy'}", "--benchmark_repetitions=3",
                       "--benchmark_min_time=0.2")
            # the CPU time of the one thread: on a shared machine, waiting for a core is not counted
            value, unit = re.search(r"real_time_median\s+[\d.]+ \w+\s+([\d.]+) (\w+)", text).groups()
            times[v].append(float(value) * {"ns": 1e-3, "us": 1.0, "ms": 1e3}[unit])
    med = {v: statistics.median(t) for v, t in times.items()}
    return {"shape": shape, "copy_us": med["copy"], "fused_us": med["fused"], "ratio": med["fused"] / med["copy"],
            "best": {v: min(t) for v, t in times.items()}, "max_diff": float(np.abs(outs["copy"] - outs["fused"]).max())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", nargs="+", default=SHAPES)
    ap.add_argument("--runs", type=int, default=7, help="interleaved iree-benchmark-module runs per variant")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    bad = [s for s in args.shapes if not re.fullmatch(r"s[12]:\d+x\d+x\d+x\d+", s)]
    if bad:
        ap.error(f"--shapes {bad[0]}: expected s1:NxHxWxC or s2:NxHxWxC")
    with tempfile.TemporaryDirectory() as tmp:
        rows = [measure(s, args.runs, Path(tmp)) for s in args.shapes]
    head = ["shape", "pad copy us", "pad fused us", "fused/copy", "max diff"]
    cells = [[r["shape"], f"{r['copy_us']:.1f} ({r['best']['copy']:.1f})", f"{r['fused_us']:.1f} ({r['best']['fused']:.1f})",
              f"{r['ratio']:.2f}", f"{r['max_diff']:.1e}"] for r in rows]
    if args.markdown:
        print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
        print("\n".join("| " + " | ".join(c) + " |" for c in cells))
    else:
        print("\n".join("  ".join(f"{x:>16}" for x in c) for c in [head] + cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
