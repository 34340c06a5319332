#!/usr/bin/env python3
"""How to sum a long float32 matmul in TensorFlow's blocks of K, timed as IREE compiles it.

TensorFlow's CPU MatMul sums K in blocks of 256, each from zero, and adds the blocks in order;
hlobridge lowers MatMul the same way to follow TF's numbers (ops/nn/matmul.py, docs/numerics.md).
Three StableHLO forms of one [M, K] x [K, N] product, each compiled for llvm-cpu untiled (as a
training step is) and called through IREE's runtime in one process, interleaved block by block:

- one:     one dot_general, one accumulator over all of K (not TF's sums: the baseline);
- batched: the blocks as a batch dimension of one dot_general, then a reduce over the blocks
           (hlobridge's lowering until 2026-11-24);
- sliced:  one dot_general per block on slices of both operands, added in order (today's).

    python benchmarks/matmul_blocks.py                       # the shapes below
    python benchmarks/matmul_blocks.py --shapes 32x3136x1024t --repeat 9

A shape is MxKxN, with a trailing `t` where the right operand is given [N, K] (a gradient's
transpose_b). ms is the median (best) of --repeat blocks of --steps calls.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import iree.runtime as rt
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import markdown_table  # noqa: E402
from hlobridge.compile.iree import compile_mlir  # noqa: E402
from hlobridge.compile.options import CompileOptions  # noqa: E402
from hlobridge.ops.nn.matmul import CONTRACTION_BLOCK  # noqa: E402
from hlobridge.runtime.module import LoadedModule  # noqa: E402

# cnn_train's fc1 (forward, input gradient), seed_mnist's logits, BERT-sized and square products
SHAPES = ["32x3136x1024", "32x3136x1024t", "100x784x10", "256x768x768", "256x3072x768t", "1024x1024x1024"]
FORMS = ("one", "batched", "sliced")


def _t(*dims) -> str:
    return f"tensor<{'x'.join(map(str, dims))}xf32>"


def module_text(form: str, m: int, k: int, n: int, transposed: bool) -> str:
    """The product as one StableHLO function @main(a, b) in the given form."""
    b_dims, b_k = ((n, k), 1) if transposed else ((k, n), 0)
    lines = [f"func.func @main(%a: {_t(m, k)}, %b: {_t(*b_dims)}) -> {_t(m, n)} {{"]
    result = "%r"
    if form == "one":
        lines.append(f"  %r = stablehlo.dot_general %a, %b, contracting_dims = [1] x [{b_k}] : "
                     f"({_t(m, k)}, {_t(*b_dims)}) -> {_t(m, n)}")
    elif form == "sliced":
        total = None
        for i, lo in enumerate(range(0, k, CONTRACTION_BLOCK)):
            hi = min(k, lo + CONTRACTION_BLOCK)
            b_slice = f"[0:{n}, {lo}:{hi}]" if transposed else f"[{lo}:{hi}, 0:{n}]"
            b_part = (n, hi - lo) if transposed else (hi - lo, n)
            lines += [f"  %a{i} = stablehlo.slice %a [0:{m}, {lo}:{hi}] : ({_t(m, k)}) -> {_t(m, hi - lo)}",
                      f"  %b{i} = stablehlo.slice %b {b_slice} : ({_t(*b_dims)}) -> {_t(*b_part)}",
                      f"  %d{i} = stablehlo.dot_general %a{i}, %b{i}, contracting_dims = [1] x [{b_k}] : "
                      f"({_t(m, hi - lo)}, {_t(*b_part)}) -> {_t(m, n)}"]
            if total is not None:
                lines.append(f"  %s{i} = stablehlo.add {total}, %d{i} : {_t(m, n)}")
            total = f"%d{i}" if total is None else f"%s{i}"
        result = total
    else:  # batched
        nb = -(-k // CONTRACTION_BLOCK)
        p = nb * CONTRACTION_BLOCK
        bp_dims = (n, p) if transposed else (p, n)
        b_high = f"[0, {p - k}]" if transposed else f"[{p - k}, 0]"
        b3 = (n, nb, CONTRACTION_BLOCK) if transposed else (nb, CONTRACTION_BLOCK, n)
        dims = "batching_dims = [1] x [1], contracting_dims = [2] x [2]" if transposed else \
            "batching_dims = [1] x [0], contracting_dims = [2] x [1]"
        lines += [
            "  %z = stablehlo.constant dense<0.0> : tensor<f32>",
            f"  %ap = stablehlo.pad %a, %z, low = [0, 0], high = [0, {p - k}], interior = [0, 0] : "
            f"({_t(m, k)}, tensor<f32>) -> {_t(m, p)}",
            f"  %a3 = stablehlo.reshape %ap : ({_t(m, p)}) -> {_t(m, nb, CONTRACTION_BLOCK)}",
            f"  %bp = stablehlo.pad %b, %z, low = [0, 0], high = {b_high}, interior = [0, 0] : "
            f"({_t(*b_dims)}, tensor<f32>) -> {_t(*bp_dims)}",
            f"  %b3 = stablehlo.reshape %bp : ({_t(*bp_dims)}) -> {_t(*b3)}",
            f"  %d = stablehlo.dot_general %a3, %b3, {dims} : ({_t(m, nb, CONTRACTION_BLOCK)}, {_t(*b3)}) "
            f"-> {_t(nb, m, n)}",
            f"  %r = stablehlo.reduce(%d init: %z) applies stablehlo.add across dimensions = [0] : "
            f"({_t(nb, m, n)}, tensor<f32>) -> {_t(m, n)}"]
    lines += [f"  return {result} : {_t(m, n)}", "}"]
    return "\n".join(lines) + "\n"


def parse_shape(text: str) -> tuple[int, int, int, bool]:
    transposed = text.endswith("t")
    m, k, n = (int(v) for v in text.rstrip("t").split("x"))
    return m, k, n, transposed


def time_shape(shape: str, device: str, steps: int, repeat: int) -> dict:
    """ms per call of each form: the median and best of `repeat` interleaved blocks."""
    m, k, n, transposed = parse_shape(shape)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k), np.float32)
    b = rng.standard_normal((n, k) if transposed else (k, n), np.float32)
    calls, results = {}, {}
    for form in FORMS:
        module = LoadedModule(compile_mlir(module_text(form, m, k, n, transposed), CompileOptions()), device)
        calls[form] = (module, module.functions["main"].invoke)
        results[form] = np.asarray(calls[form][1](a, b))
    # the operands live on the device, as a step's activations and weights do: calls copy nothing in
    a, b = (rt.asdevicearray(module.config.device, v) for v in (a, b))
    for form in FORMS:  # the three forms compute the same product
        np.testing.assert_allclose(results[form], results["one"], rtol=1e-3, atol=1e-3 * np.sqrt(k))
    blocks = {form: [] for form in FORMS}
    for r in range(repeat):
        for form in FORMS[r % len(FORMS):] + FORMS[:r % len(FORMS)]:  # who goes first rotates
            invoke = calls[form][1]
            invoke(a, b)
            t = time.perf_counter()
            for _ in range(steps):
                invoke(a, b)
            blocks[form].append((time.perf_counter() - t) / steps * 1e3)
    return {form: (statistics.median(v), min(v)) for form, v in blocks.items()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", nargs="+", default=SHAPES)
    p.add_argument("--device", default="cpu-task")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args(argv)
    rows = []
    for shape in args.shapes:
        t = time_shape(shape, args.device, args.steps, args.repeat)
        rows.append([shape, *(f"{t[f][0]:.3g} ({t[f][1]:.3g})" for f in FORMS),
                     f"{t['sliced'][0] / t['batched'][0]:.2f}", f"{t['sliced'][0] / t['one'][0]:.2f}"])
    print(markdown_table(["M x K x N", "one ms", "batched ms", "sliced ms", "sliced/batched", "sliced/one"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
