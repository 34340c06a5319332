"""TensorFlow's uniform quantized ops (the StableHLO-quantization family): UniformQuantize,
UniformDequantize, UniformRequantize, UniformQuantizedClipByValue, UniformQuantizedAdd,
UniformQuantizedDot.

A quantized tensor is its integer storage (qint8 -> int8, quint8 -> uint8, qint32 -> int32) with
float `scales` and int32 `zero_points`, one each (quantization_axis -1) or one per index of
`quantization_axis`. The integer arithmetic follows TF's CPU kernels exactly
(core/kernels/uniform_quant_ops/math_utils.h): quantizing is floor(x / scale + 0.5) + zero
point, clamped; requantizing multiplies by a 31-bit fixed-point multiplier with a rounding
shift (TFLite's QuantizeMultiplier), computed on the host from the scales, which the lowering
therefore needs as compile-time constants. Each op is one NumPy rule (traced.py): the kernel
on arrays, the lowering on StableHLO values.

One difference, on purpose: a float whose quotient by the scale is outside int32 is clamped to
int32 before the zero point is added (TF's float -> int32 cast is undefined there; on x86 it
gives INT32_MIN).
"""

from __future__ import annotations

import math

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ...spec import TensorSpec
from .fake_quant import along_axis, qint32_as_int, rounded_product
from ..registry import register
from ..control.state import kernel_and_lowering
from ..traced import Traced

F32 = np.float32
I32 = np.int32
INT32 = np.iinfo(np.int32)
QUANTIZED = ("int8", "uint8", "int32")  # qint8, quint8, qint32


def _host(ctx, i: int, value) -> np.ndarray:
    """Input i's value on the host: the array itself in the kernel, its constant when lowering."""
    return ctx.const(i) if value is None or isinstance(value, Traced) else np.asarray(value)


def _check_axis(ctx, data: int, scales: int, prefix: str = "") -> int:
    """TF's QuantizationAxisAndShapeValid: -1 and scalar scales/zero points, or an axis of the data
    and one scale and zero point per index of it."""
    axis = ctx.attr(f"{prefix}quantization_axis", -1)
    shape, params = ctx.inputs[data].shape, [ctx.inputs[scales].shape, ctx.inputs[scales + 1].shape]
    if axis < -1 or (shape is not None and axis >= len(shape)):
        raise ctx.error(f"{prefix}quantization_axis must be -1 or within [0, rank), given {axis}")
    want = () if axis == -1 else (None if shape is None else (shape[axis],))
    for p in params:
        if p is not None and want is not None and tuple(p) != want and not (axis >= 0 and p == (1,)):
            raise ctx.error(f"{prefix or ''}scales and zero_points must have shape {list(want)} for quantization "
                            f"axis {axis}, got {list(p)}")
    return axis


def _check_range(ctx, prefix: str = ""):
    lo, hi = ctx.attr(f"{prefix}quantization_min_val"), ctx.attr(f"{prefix}quantization_max_val")
    if lo >= hi:
        raise ctx.error(f"{prefix}quantization_min_val must be smaller than {prefix}quantization_max_val, "
                        f"given {lo}, {hi}")
    return lo, hi


def _as_int(q):
    """The quantized values as int32, the way TF's kernels cast them (qint32: through float)."""
    return qint32_as_int(q) if q.dtype == np.int32 else q.astype(I32)


def _clamp(x, lo, hi):
    return np.maximum(np.minimum(x, hi), lo)


# -- UniformQuantize, UniformDequantize ----------------------------------------------------------------


def _quantize(ctx, x, scales, zero_points):
    axis, rank = ctx.attr("quantization_axis", -1), len(x.shape)
    scales, zero_points = along_axis(scales, axis, rank), along_axis(zero_points, axis, rank)
    steps = np.floor(rounded_product(x, F32(1) / scales) + F32(0.5))
    steps = _clamp(steps, F32(INT32.min), F32(2.0 ** 31 - 128))  # (the largest float32 below 2**31)
    q = steps.astype(I32) + zero_points
    q = _clamp(q, I32(ctx.attr("quantization_min_val")), I32(ctx.attr("quantization_max_val")))
    return q.astype(ctx.attr("Tout"))


def _dequantize(ctx, q, scales, zero_points):
    axis, rank = ctx.attr("quantization_axis", -1), len(q.shape)
    scales, zero_points = along_axis(scales, axis, rank), along_axis(zero_points, axis, rank)
    return (_as_int(q) - zero_points).astype(F32) * scales


def _quantize_infer(ctx):
    _check_axis(ctx, 0, 1)
    _check_range(ctx)
    return [TensorSpec(np.dtype(ctx.attr("Tout")), ctx.inputs[0].shape)]


UNIFORM_ATTRS = ("Tin", "Tout", "quantization_axis", "quantization_min_val", "quantization_max_val")
register("UniformQuantize", infer=_quantize_infer, attrs=UNIFORM_ATTRS, dtypes=("float32",) + QUANTIZED,
         **kernel_and_lowering(_quantize))
register("UniformDequantize", infer=_quantize_infer, attrs=UNIFORM_ATTRS, dtypes=("float32",) + QUANTIZED,
         **kernel_and_lowering(_dequantize))


# -- UniformRequantize ---------------------------------------------------------------------------------


def quantize_multiplier(multiplier: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier: multiplier ~= q * 2**(shift - 31), q a 31-bit integer."""
    if not math.isfinite(multiplier) or multiplier <= 0:
        raise ValueError(f"double_multiplier must be a positive finite number. Given {multiplier}")
    fraction, shift = math.frexp(multiplier)
    fixed = int(math.floor(abs(fraction) * 2.0 ** 31 + 0.5))  # C's round(); fraction > 0 here
    if fixed == 1 << 31:
        fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    if shift > 30:
        return (1 << 31) - 1, 30
    return fixed, shift


def requantize(values, multipliers, out_zero_points, axis: int, lo: int, hi: int):
    """TF's AffineRequantizeWithQuantizedMultiplierAndShift: int32 `values` (the input minus its
    zero point) times each float multiplier as a 31-bit fixed-point number with a rounding
    shift, plus the output zero point, clamped to [lo, hi]. One multiplier, or one per index of
    `axis`; the multipliers are host values (in double, as TF computes them)."""
    rank = len(values.shape)
    pairs = [quantize_multiplier(float(m)) for m in np.atleast_1d(multipliers)]
    fixed = np.array([p[0] for p in pairs], np.int64)
    total_shift = np.array([31 - p[1] for p in pairs], np.int64)
    rounding = np.left_shift(np.int64(1), total_shift - 1)
    if np.ndim(multipliers) == 0:
        fixed, total_shift, rounding = fixed[0], total_shift[0], rounding[0]
    fixed, total_shift, rounding = (along_axis(v, axis, rank) for v in (fixed, total_shift, rounding))
    scaled = np.right_shift(values.astype(np.int64) * fixed + rounding, total_shift)
    scaled = _clamp(scaled, np.int64(INT32.min), np.int64(INT32.max)).astype(I32)
    return _clamp(scaled + along_axis(out_zero_points, axis, rank), I32(lo), I32(hi))


def _multipliers(numerator, denominator):
    """numerator / denominator in double, per index where either is a vector."""
    return np.float64(numerator) / np.float64(denominator) if np.ndim(numerator) + np.ndim(denominator) == 0 else \
        np.asarray(numerator, np.float64).reshape(-1) / np.asarray(denominator, np.float64).reshape(-1)


def _requantize(ctx, x, in_scales, in_zero_points, out_scales, out_zero_points):
    in_axis, out_axis = ctx.attr("input_quantization_axis", -1), ctx.attr("output_quantization_axis", -1)
    axis = in_axis if in_axis >= 0 else out_axis
    values = _as_int(x) - along_axis(in_zero_points, axis, len(x.shape))
    out = requantize(values, _multipliers(_host(ctx, 1, in_scales), _host(ctx, 3, out_scales)), out_zero_points,
                     axis, ctx.attr("output_quantization_min_val"), ctx.attr("output_quantization_max_val"))
    return out.astype(ctx.attr("Tout"))


def _requantize_infer(ctx):
    in_axis, out_axis = _check_axis(ctx, 0, 1, "input_"), _check_axis(ctx, 0, 3, "output_")
    if in_axis >= 0 and out_axis >= 0 and in_axis != out_axis:
        raise ctx.error(f"input and output quantization axes must match, given {in_axis}, {out_axis}")
    _check_range(ctx, "output_")
    for i in (1, 3):
        scales = ctx.inputs[i].value
        if scales is not None and not (np.asarray(scales) > 0).all():
            raise ctx.error("scales must be all positive")
    return [TensorSpec(np.dtype(ctx.attr("Tout")), ctx.inputs[0].shape)]


register("UniformRequantize", infer=_requantize_infer, const_inputs=(1, 3), dtypes=("int8", "int32"),
         attrs=("Tin", "Tout") + tuple(f"{side}_quantization_{a}" for side in ("input", "output")
                                       for a in ("axis", "min_val", "max_val")),
         **kernel_and_lowering(_requantize))


# -- UniformQuantizedClipByValue -----------------------------------------------------------------------


def _clip_by_value(ctx, x, lo, hi, _scales, _zero_points):
    axis, rank = ctx.attr("quantization_axis", -1), len(x.shape)
    return np.minimum(np.maximum(x, along_axis(lo, axis, rank)), along_axis(hi, axis, rank))


def _clip_infer(ctx):
    _check_axis(ctx, 0, 3)
    for i, name in ((1, "min"), (2, "max")):
        shape, want = ctx.inputs[i].shape, ctx.inputs[3].shape
        if shape is not None and want is not None and tuple(shape) != tuple(want):
            raise ctx.error(f"Input {name} shape must be same as scales/zero_points. Given {name} of shape "
                            f"{list(shape)} and scales/zero_points of shape {list(want)}")
    return [ctx.inputs[0]]


register("UniformQuantizedClipByValue", infer=_clip_infer, dtypes=("int32",),
         attrs=("T", "quantization_axis", "quantization_min_val", "quantization_max_val"),
         **kernel_and_lowering(_clip_by_value))


# -- UniformQuantizedAdd -------------------------------------------------------------------------------


def _add(ctx, lhs, rhs, lhs_scales, lhs_zero_points, rhs_scales, rhs_zero_points, out_scales, out_zero_points):
    """Both operands requantized to the output's scales (zero point 0, int32's range), added with
    NumPy broadcasting, plus the output zero point, clamped. As TF does, lhs keeps its own axis
    when the output is per axis, and rhs takes the output's axis."""
    lhs_axis, rhs_axis = ctx.attr("lhs_quantization_axis", -1), ctx.attr("rhs_quantization_axis", -1)
    out_axis = ctx.attr("output_quantization_axis", -1)
    out_scales = _host(ctx, 6, out_scales)
    zeros = np.zeros(np.shape(out_scales), I32)

    def to_output(x, scales, zero_points, axis_in, axis_out):
        axis = axis_in if axis_in >= 0 else axis_out
        values = _as_int(x) - along_axis(zero_points, axis, len(x.shape))
        return requantize(values, _multipliers(scales, out_scales), zeros, axis, INT32.min, INT32.max)
    total = (to_output(lhs, _host(ctx, 2, lhs_scales), lhs_zero_points, lhs_axis, -1 if out_axis == -1 else lhs_axis)
             + to_output(rhs, _host(ctx, 4, rhs_scales), rhs_zero_points, rhs_axis, out_axis))
    total = total + along_axis(out_zero_points, out_axis, len(total.shape))
    return _clamp(total, I32(ctx.attr("output_quantization_min_val")),
                  I32(ctx.attr("output_quantization_max_val"))).astype(ctx.attr("T"))


def _add_infer(ctx):
    for prefix, data, scales in (("lhs_", 0, 2), ("rhs_", 1, 4)):
        _check_axis(ctx, data, scales, prefix)
    _check_range(ctx, "output_")
    lhs, rhs = ctx.inputs[0].shape, ctx.inputs[1].shape
    if lhs is None or rhs is None:
        return [TensorSpec(ctx.inputs[0].dtype, None)]
    try:
        shape = np.broadcast_shapes(tuple(lhs), tuple(rhs))
    except ValueError:
        raise ctx.error(f"Cannot Add tensors of shapes: {list(lhs)} {list(rhs)}") from None
    return [TensorSpec(ctx.inputs[0].dtype, shape)]


register("UniformQuantizedAdd", infer=_add_infer, const_inputs=(2, 4, 6), dtypes=("int32",),
         attrs=("T",) + tuple(f"{side}_quantization_{a}" for side in ("lhs", "rhs", "output")
                              for a in ("axis", "min_val", "max_val")),
         **kernel_and_lowering(_add))


# -- UniformQuantizedDot -------------------------------------------------------------------------------


def _matmul(lhs, rhs, out_shape):
    """int32 [b, k] x [k, n], accumulating in int32 (wrapping), as TF's loop does."""
    if isinstance(lhs, Traced):
        return Traced(hlo.dot_general(lhs.value, rhs.value, out_shape, I32, lhs_contract=[1], rhs_contract=[0]), I32)
    return np.matmul(lhs, rhs, dtype=I32)


def _requantize_products(ctx, acc, lhs_scales, rhs_scales, out_scales, out_zero_points):
    """A Dot's or Convolution's int32 accumulator requantized by lhs_scale * rhs_scale /
    output_scale (in double; one per output channel where rhs or the output is per channel,
    the feature dimension 1 of the output)."""
    lhs_scale, rhs_scales, out_scales = (_host(ctx, i, v) for i, v in ((2, lhs_scales), (4, rhs_scales),
                                                                        (6, out_scales)))
    multipliers = _multipliers(np.float64(lhs_scale) * np.asarray(rhs_scales, np.float64), out_scales)
    return requantize(acc, multipliers, out_zero_points, 1 if np.ndim(multipliers) else -1,
                      ctx.attr("output_quantization_min_val"),
                      ctx.attr("output_quantization_max_val")).astype(ctx.attr("Tout"))


def _dot(ctx, lhs, rhs, lhs_scales, lhs_zero_points, rhs_scales, rhs_zero_points, out_scales, out_zero_points):
    """(lhs - zero point) x (rhs - zero point(s)) in int32, requantized by lhs_scale * rhs_scale /
    output_scale (per output channel where rhs is per channel)."""
    rhs_axis = ctx.attr("rhs_quantization_axis", -1)
    acc = _matmul(lhs.astype(I32) - lhs_zero_points, rhs.astype(I32) - along_axis(rhs_zero_points, rhs_axis, 2),
                  ctx.out().shape)
    return _requantize_products(ctx, acc, lhs_scales, rhs_scales, out_scales, out_zero_points)


def _dot_infer(ctx):
    lhs, rhs = ctx.inputs[0].shape, ctx.inputs[1].shape
    if ctx.attr("lhs_quantization_axis", -1) != -1:
        raise ctx.error("lhs_quantization_axis Attr must be -1 (per-tensor).")
    if ctx.attr("rhs_quantization_axis", -1) not in (-1, 1):
        raise ctx.error("rhs_quantization_axis Attr must be 1 (per-channel) or -1 (per-tensor).")
    if ctx.attr("output_quantization_axis", -1) not in (-1, 1):
        raise ctx.error("output_quantization_axis Attr must be 1 (per-channel) or -1 (per-tensor).")
    _check_axis(ctx, 1, 4, "rhs_")
    _check_range(ctx, "output_")
    if lhs is not None and rhs is not None:
        if len(lhs) != 2 or len(rhs) != 2 or (None not in (lhs[1], rhs[0]) and lhs[1] != rhs[0]):
            raise ctx.error(f"takes lhs [b, k] and rhs [k, n], given {list(lhs)} and {list(rhs)}")
    return [TensorSpec(np.dtype(ctx.attr("Tout")), None if lhs is None or rhs is None else (lhs[0], rhs[1]))]


register("UniformQuantizedDot", infer=_dot_infer, const_inputs=(2, 4, 6), dtypes=("int8", "int32"),
         attrs=("Tin", "Tout") + tuple(f"{side}_quantization_{a}" for side in ("lhs", "rhs", "output")
                                       for a in ("axis", "min_val", "max_val")),
         **kernel_and_lowering(_dot))


# -- UniformQuantizedConvolution -----------------------------------------------------------------------
# TF's default dimension numbers only (lhs [batch, feature, spatial...], rhs [out, in, spatial...],
# output [batch, feature, spatial...]): a non-empty `dimension_numbers` (a serialized proto) is
# refused with a clear error, as is batch_group_count > 1.


def dilated_size(size: int, dilation: int) -> int:
    return 0 if size == 0 else (size - 1) * dilation + 1


def _conv_params(ctx, lhs_shape, rhs_shape):
    """(strides, padding [(lo, hi)...], lhs_dilation, rhs_dilation, output shape), as TF's
    UniformQuantizedConvolutionParams fills and checks them."""
    n = len(lhs_shape) - 2

    def per_dim(name):
        values = list(ctx.attr(name, []) or [1] * n)
        if len(values) != n or min(values) < 1:
            raise ctx.error(f"{name} must have {n} elements >= 1, given {values}")
        return values
    strides, lhs_dil, rhs_dil = per_dim("window_strides"), per_dim("lhs_dilation"), per_dim("rhs_dilation")
    lhs_sizes = [dilated_size(lhs_shape[2 + i], lhs_dil[i]) for i in range(n)]
    rhs_sizes = [dilated_size(rhs_shape[2 + i], rhs_dil[i]) for i in range(n)]
    padding, explicit = ctx.attr("padding"), list(ctx.attr("explicit_padding", []))
    if padding == "EXPLICIT":
        if len(explicit) != 2 * n or min(explicit) < 0:
            raise ctx.error(f"explicit_padding must be {2 * n} elements >= 0, given {explicit}")
        pads = [(explicit[2 * i], explicit[2 * i + 1]) for i in range(n)]
    elif padding == "VALID":
        pads = [(0, 0)] * n
    elif padding == "SAME":
        pads = []
        for size, window, stride in zip(lhs_sizes, rhs_sizes, strides):
            total = max((-(-size // stride) - 1) * stride + window - size, 0)
            pads.append((total // 2, total - total // 2))
    else:
        raise ctx.error(f"padding Attr must be one of [EXPLICIT | SAME | VALID], but given: {padding}")
    groups = ctx.attr("feature_group_count", 1)
    if groups < 1 or lhs_shape[1] % groups or lhs_shape[1] // groups != rhs_shape[1] or rhs_shape[0] % groups:
        raise ctx.error(f"feature_group_count {groups} does not fit lhs {list(lhs_shape)} and rhs {list(rhs_shape)}")
    spatial = [-(-(size + lo + hi - window + 1) // stride)
               for size, (lo, hi), window, stride in zip(lhs_sizes, pads, rhs_sizes, strides)]
    return strides, pads, lhs_dil, rhs_dil, (lhs_shape[0], rhs_shape[0], *spatial)


def _np_conv(lhs, rhs, strides, pads, lhs_dil, rhs_dil, groups, out_shape):
    """int32 convolution, accumulating in int32: padding and dilation holes are zeros (TF pads
    with the zero point before subtracting it)."""
    b, c = lhs.shape[:2]
    dilated = np.zeros((b, c, *(dilated_size(s, d) for s, d in zip(lhs.shape[2:], lhs_dil))), I32)
    dilated[(slice(None), slice(None), *(slice(None, None, d) for d in lhs_dil))] = lhs
    padded = np.pad(dilated, [(0, 0), (0, 0), *pads])
    out = np.zeros(out_shape, I32)
    per_group = rhs.shape[0] // groups
    for offset in np.ndindex(*rhs.shape[2:]):
        window = padded[(slice(None), slice(None), *(slice(k * d, k * d + (o - 1) * s + 1, s) for k, d, o, s in
                                                     zip(offset, rhs_dil, out_shape[2:], strides)))]
        taps = rhs[(slice(None), slice(None), *offset)]  # [out, in]
        for g in range(groups):
            part = window[:, g * rhs.shape[1]:(g + 1) * rhs.shape[1]]
            out[:, g * per_group:(g + 1) * per_group] += np.einsum(
                "bi...,oi->bo...", part, taps[g * per_group:(g + 1) * per_group], dtype=I32)
    return out


def _convolution(ctx, lhs, rhs, lhs_scales, lhs_zero_points, rhs_scales, rhs_zero_points, out_scales,
                 out_zero_points):
    strides, pads, lhs_dil, rhs_dil, out_shape = _conv_params(ctx, lhs.shape, rhs.shape)
    rank, groups = len(lhs.shape), ctx.attr("feature_group_count", 1)
    rhs_axis = ctx.attr("rhs_quantization_axis", -1)
    lhs_i = lhs.astype(I32) - lhs_zero_points
    rhs_i = rhs.astype(I32) - along_axis(rhs_zero_points, rhs_axis, rank)
    if isinstance(lhs_i, Traced):
        spatial = ", ".join(str(i) for i in range(rank - 2))
        acc = Traced(hlo.convolution(lhs_i.value, rhs_i.value, out_shape, I32,
                                     layout=f"[b, f, {spatial}]x[o, i, {spatial}]->[b, f, {spatial}]",
                                     strides=strides, padding=pads, lhs_dilation=lhs_dil, rhs_dilation=rhs_dil,
                                     feature_group_count=groups), I32)
    else:
        acc = _np_conv(lhs_i, rhs_i, strides, pads, lhs_dil, rhs_dil, groups, out_shape)
    return _requantize_products(ctx, acc, lhs_scales, rhs_scales, out_scales, out_zero_points)


def _convolution_infer(ctx):
    lhs, rhs = ctx.inputs[0].shape, ctx.inputs[1].shape
    if ctx.attr("dimension_numbers", ""):
        raise ctx.error("dimension_numbers other than TF's default ([b, f, spatial...]) are not supported yet")
    if ctx.attr("batch_group_count", 1) != 1:
        raise ctx.error("batch_group_count > 1 is not supported yet")
    if ctx.attr("lhs_quantization_axis", -1) != -1:
        raise ctx.error("lhs_quantization_axis other than -1 (per-tensor) is not supported yet")
    if ctx.attr("rhs_quantization_axis", -1) not in (-1, 0) or ctx.attr("output_quantization_axis", -1) not in (-1, 1):
        raise ctx.error("rhs and output quantization axes must be -1 or their feature dimension (0 and 1)")
    _check_axis(ctx, 1, 4, "rhs_")
    _check_range(ctx, "output_")
    if lhs is None or rhs is None or None in lhs or None in rhs:
        return [TensorSpec(np.dtype(ctx.attr("Tout")), None)]
    if len(lhs) != len(rhs) or len(lhs) < 3:
        raise ctx.error(f"lhs and rhs must have the same rank >= 3, given {list(lhs)} and {list(rhs)}")
    return [TensorSpec(np.dtype(ctx.attr("Tout")), _conv_params(ctx, lhs, rhs)[4])]


register("UniformQuantizedConvolution", infer=_convolution_infer, const_inputs=(2, 4, 6), dtypes=("int8", "int32"),
         attrs=("Tin", "Tout", "window_strides", "padding", "explicit_padding", "lhs_dilation", "rhs_dilation",
                "batch_group_count", "feature_group_count", "dimension_numbers")
         + tuple(f"{side}_quantization_{a}" for side in ("lhs", "rhs", "output") for a in ("axis", "min_val", "max_val")),
         **kernel_and_lowering(_convolution))
