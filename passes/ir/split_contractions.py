"""f32 dots and convolutions as three bf16 products ("bf16x3"): f32-class results from the
bf16 tensor cores, where IREE has no TF32.

TensorFlow on an Ampere or Hopper GPU runs f32 matmuls and convolutions in TF32 by default
(10-bit mantissa inputs, f32 accumulation). IREE 3.13 cannot: its CUDA targets list no TF32
MMA intrinsic (only F16/BF16/FP8 `mma.sync` and F16 `wmma`), and a StableHLO dot `algorithm`
asking for TF32 is accepted and ignored; f32 contractions run as SIMT FMAs (docs/gpu.md). What
it does run on tensor cores is bf16 with f32 accumulation, so each f32 operand is split in
two bf16 parts, x = hi + lo (hi = bf16(x), lo = bf16(x - hi)), and

    a . b  ~=  (a_lo . b_hi + a_hi . b_lo) + a_hi . b_hi

(the lo . lo term, 2^-16 relative, is dropped; small terms are added first). The operands keep
16 of f32's 24 mantissa bits: finer than TF32's 11, at three bf16 products per f32 one, as
XLA's `PrecisionConfig::HIGH` does on TPUs. Everything else stays f32. Grouped convolutions
stay f32, as in reduce_precision.py (IREE 3.13 cannot compile them with bf16 operands).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from iree.compiler import ir

from hlobridge.dialects import stablehlo as hlo

from .ir_helpers import ops_named
from .reduce_precision import CONTRACTIONS, _is_f32, _is_grouped

BF16 = np.dtype(ml_dtypes.bfloat16)


def _split(x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(hi, lo): bf16(x) and bf16(x - hi)."""
    hi = hlo.convert(x, BF16)
    lo = hlo.convert(hlo.binary("subtract", x, hlo.convert(hi, np.float32)), BF16)
    return hi, lo


def _product(op: ir.Operation, lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    """`op` again (its attributes, its f32 result type) on other operands."""
    attrs = {name: op.attributes[name] for name in op.attributes}
    return ir.Operation.create(op.name, results=[op.results[0].type], operands=[lhs, rhs],
                               attributes=attrs).results[0]


def split_contractions(module: ir.Module) -> int:
    """Rewrite each f32 dot_general and ungrouped convolution as three bf16 products (module
    docstring); returns how many were rewritten."""
    rewritten = 0
    for op in ops_named(module, CONTRACTIONS):
        lhs, rhs = op.operands
        if not (_is_f32(lhs) and _is_f32(rhs) and _is_f32(op.results[0])):
            continue
        if op.name == "stablehlo.convolution" and _is_grouped(op):
            continue
        with ir.InsertionPoint(op), op.location:
            (a_hi, a_lo), (b_hi, b_lo) = _split(lhs), _split(rhs)
            small = hlo.binary("add", _product(op, a_lo, b_hi), _product(op, a_hi, b_lo))
            total = hlo.binary("add", small, _product(op, a_hi, b_hi))
        op.results[0].replace_all_uses_with(total)
        op.erase()
        rewritten += 1
    return rewritten
