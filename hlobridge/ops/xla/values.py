"""Xla* ops on values: XlaBroadcastHelper, XlaReducePrecision, XlaDequantize
(tf2xla/kernels/broadcast_to_op.cc's helper, reduce_precision_op.cc, dequantize_op.cc).

- XlaBroadcastHelper(lhs, rhs, broadcast_dims): the lower-rank operand gets the other's rank,
  its dimension i at broadcast_dims[i] and 1 elsewhere (XLA's "broadcast_dimensions" form of
  implicit broadcasting); the other passes through.
- XlaReducePrecision: stablehlo.reduce_precision; the kernel is XLA's bit recipe (round the
  mantissa to nearest even, then overflow to inf and underflow to signed zero, NaN kept).
- XlaDequantize: uint8 values packed big-endian four to a uint32 (xla/hlo/builder/lib/quantize.h),
  MIN_COMBINED mode only (XLA supports no other): q * bf16((max - min) / 255) + min, each step
  rounded to bfloat16 as XLA computes it; transpose_output reverses the dimensions.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ..helpers import ints, out_spec, value_of
from ..registry import register

BF16 = np.dtype(ml_dtypes.bfloat16)


# -- XlaBroadcastHelper ---------------------------------------------------------------------------

def _broadcast_plan(ctx):
    """(index of the operand to reshape or None, its result shape, its dims)."""
    lhs, rhs = ctx.inputs[0], ctx.inputs[1]
    if lhs.rank == rhs.rank:
        return None, None, None
    low, high = (0, rhs) if lhs.rank < rhs.rank else (1, lhs)
    dims = ints(ctx.const(2))
    small = ctx.inputs[low]
    if len(dims) != small.rank or any(not 0 <= d < high.rank for d in dims):
        raise ctx.error(f"broadcast_dims {dims} must name a dimension of the rank-{high.rank} operand for each "
                        f"of the rank-{small.rank} operand's")
    shape = [1] * high.rank
    for d, size in zip(dims, small.shape):
        shape[d] = size
    return low, shape, dims


def _broadcast_infer(ctx):
    lhs, rhs = ctx.inputs[0], ctx.inputs[1]
    if lhs.shape is None or rhs.shape is None or value_of(ctx, 2) is None:
        return [lhs, rhs] if lhs.rank == rhs.rank and lhs.shape is not None else [out_spec(ctx, None),
                                                                                  out_spec(ctx, None, 1)]
    low, shape, _ = _broadcast_plan(ctx)
    out = [lhs, rhs]
    if low is not None:
        out[low] = out_spec(ctx, shape, low)
    return out


def _broadcast_lower(ctx, lhs, rhs, _dims):
    low, shape, dims = _broadcast_plan(ctx)
    out = [lhs, rhs]
    if low is not None:
        out[low] = hlo.broadcast_in_dim(out[low], shape, dims)
    return out


def _broadcast_kernel(ctx, lhs, rhs, _dims):
    low, shape, dims = _broadcast_plan(ctx)
    out = [lhs, rhs]
    if low is not None:
        order = np.argsort(dims)  # the operand's dims in the order they land in the result
        out[low] = np.transpose(out[low], order).reshape(shape)
    return out


register("XlaBroadcastHelper", infer=_broadcast_infer, lower=_broadcast_lower, kernel=_broadcast_kernel,
         attrs=("T", "Tindices"), const_inputs=(2,), output_args=("lhs_output", "rhs_output"))


# -- XlaReducePrecision --------------------------------------------------------------------------------

_FORMATS = {np.dtype(np.float32): (np.uint32, 8, 23), np.dtype(np.float64): (np.uint64, 11, 52)}


def reduce_precision(x: np.ndarray, exponent_bits: int, mantissa_bits: int) -> np.ndarray:
    """XLA's ReducePrecision of a float32/float64 array (HloEvaluator's recipe)."""
    dtype = x.dtype
    if dtype not in _FORMATS:  # f16/bf16: exact in float32 and back
        return reduce_precision(x.astype(np.float32), exponent_bits, mantissa_bits).astype(dtype)
    utype, src_exp, src_mant = _FORMATS[dtype]
    one = utype(1)
    bits = x.view(utype).copy()
    if mantissa_bits < src_mant:
        shift = utype(src_mant - mantissa_bits)
        last = one << shift
        bias = (last >> one) - one + ((bits & last) >> shift)
        bits = (bits + bias) & ~(last - one)
    if exponent_bits < src_exp:
        width = 8 * dtype.itemsize
        sign = one << utype(width - 1)
        exp_mask = ((one << utype(src_exp)) - one) << utype(src_mant)
        src_bias, reduced_bias = (1 << (src_exp - 1)) - 1, (1 << (exponent_bits - 1)) - 1
        exponent = bits & exp_mask
        overflow = exponent > (utype(src_bias + reduced_bias) << utype(src_mant))
        underflow = exponent <= (utype(src_bias - reduced_bias) << utype(src_mant))
        signed_zero = bits & sign
        bits = np.where(overflow, signed_zero | exp_mask, np.where(underflow, signed_zero, bits))
    return np.where(np.isnan(x), x, bits.astype(utype).view(dtype))


register("XlaReducePrecision", infer=lambda ctx: [ctx.inputs[0]],
         lower=lambda ctx, x: hlo.reduce_precision(x, ctx.attr("exponent_bits"), ctx.attr("mantissa_bits")),
         kernel=lambda ctx, x: reduce_precision(np.asarray(x), ctx.attr("exponent_bits"), ctx.attr("mantissa_bits")),
         attrs=("T", "exponent_bits", "mantissa_bits"), dtypes=("float16", "bfloat16", "float32", "float64"))


# -- XlaDequantize(input uint32) -> bfloat16 ---------------------------------------------------------

def _dequantize_check(ctx):
    if ctx.attr("mode") not in ("MIN_COMBINED", b"MIN_COMBINED"):
        raise ctx.error(f"mode {ctx.attr('mode')!r}: XLA dequantizes MIN_COMBINED only")


def _dequantize_infer(ctx):
    _dequantize_check(ctx)
    x = ctx.inputs[0]
    if x.shape is None:
        return [out_spec(ctx, None, dtype=BF16)]
    shape = [*x.shape[:-1], None if x.shape[-1] is None else 4 * x.shape[-1]] if x.shape else [4]
    return [out_spec(ctx, shape[::-1] if ctx.attr("transpose_output") else shape, dtype=BF16)]


def _bf16(value) -> float:
    return float(np.asarray(value, np.float32).astype(BF16))


def _scale(ctx) -> tuple[float, float]:
    """(scale, min) as XLA computes them: bf16((bf16(max) - bf16(min)) / bf16(255))."""
    lo, hi = _bf16(ctx.attr("min_range")), _bf16(ctx.attr("max_range"))
    return _bf16(_bf16(hi - lo) / 255.0), lo


def _dequantize_kernel(ctx, x):
    x = np.asarray(x, np.uint32)
    shifts = np.array([24, 16, 8, 0], np.uint32)
    q = ((x[..., None] >> shifts) & np.uint32(0xFF)).reshape(*x.shape[:-1], -1) if x.ndim else (x >> shifts) & 0xFF
    scale, lo = _scale(ctx)
    y = ((q.astype(np.float32) * np.float32(scale)).astype(BF16).astype(np.float32) + np.float32(lo)).astype(BF16)
    return np.transpose(y) if ctx.attr("transpose_output") else y


def _round_to_bf16(v, shape):
    """f32 v rounded to bfloat16's precision (nearest even), still f32. In integer bits: IREE
    folds an f32 -> bf16 -> f32 convert pair away, which would skip XLA's rounding step."""
    i32 = np.dtype(np.int32)
    bits = hlo.bitcast_convert(v, shape, i32)
    odd = hlo.binary("and", hlo.binary("shift_right_logical", bits, hlo.splat(16, shape, i32)), hlo.splat(1, shape, i32))
    bits = hlo.add(bits, hlo.add(hlo.splat(0x7FFF, shape, i32), odd))
    bits = hlo.binary("and", bits, hlo.splat(-65536, shape, i32))
    return hlo.bitcast_convert(bits, shape, np.float32)


def _dequantize_lower(ctx, x):
    shape = ctx.inputs[0].shape
    u32 = np.dtype(np.uint32)
    wide = hlo.broadcast_in_dim(x, [*shape, 4], list(range(len(shape))))
    shifted = hlo.binary("shift_right_logical", wide, hlo.constant(np.broadcast_to(
        np.array([24, 16, 8, 0], u32), [*shape, 4])))
    q = hlo.binary("and", shifted, hlo.splat(0xFF, [*shape, 4], u32))
    out = [*shape[:-1], 4 * shape[-1]] if shape else [4]
    q = hlo.convert(hlo.reshape(q, out), np.float32)
    scale, lo = _scale(ctx)

    y = _round_to_bf16(hlo.multiply(q, hlo.splat(scale, out, np.float32)), out)
    y = hlo.convert(_round_to_bf16(hlo.add(y, hlo.splat(lo, out, np.float32)), out), BF16)
    return hlo.transpose(y, list(range(len(out)))[::-1]) if ctx.attr("transpose_output") else y


register("XlaDequantize", infer=_dequantize_infer, lower=_dequantize_lower, kernel=_dequantize_kernel,
         attrs=("min_range", "max_range", "mode", "transpose_output"), dtypes=())
