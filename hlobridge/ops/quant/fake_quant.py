"""Quantization-aware training and quantize-dequantize ops: FakeQuantWithMinMax{Args,Vars,
VarsPerChannel} and their gradients, QuantizeAndDequantizeV2/V3/V4, Dequantize.

Each is one rule written with NumPy operators (traced.py), so it is the reference kernel on
arrays and the lowering on StableHLO values; the formulas, their float32 evaluation order and
their special cases follow TensorFlow's CPU kernels (core/kernels/fake_quant_ops_functor.h,
quantize_and_dequantize_op.h, dequantize_op.cc and quantization_utils.h), not XLA's versions
(tf2xla/kernels/fake_quantize_ops.cc), which round differently at exact halves.

TensorFlow's quantized types (qint8, quint8, qint16, quint16, qint32) are stored as their
integer types (dtypes.py), so Dequantize reads them as int8, uint8, ...
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ...spec import TensorSpec
from ..helpers import normalize_axis
from ..registry import register
from ..control.state import kernel_and_lowering
from ..traced import Traced
from ..typesets import FLOAT

F32 = np.float32
F32_TYPE = np.dtype(F32)


def round_half_away(x):
    """C's round(): halves away from zero (NumPy's np.round goes to even)."""
    if isinstance(x, Traced):
        return Traced(hlo.unary("round_nearest_afz", x.value), x.dtype)
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t).astype(x.dtype)


def _num_bits(ctx, lo: int, hi: int) -> int:
    bits = ctx.attr("num_bits", 8)
    if not lo <= bits <= hi:
        raise ctx.error(f"num_bits must be between {lo} and {hi}, inclusive; got {bits}")
    return bits


def qint32_as_int(q):
    """A qint32 tensor as TF's kernels read it into int: through float (Eigen's QInt32 converts
    via float), so values lose their low bits above 2**24 and 2**31 - 64 and up become
    -2**31, as x86's float-to-int conversion gives; written out so both backends agree."""
    v = q.astype(F32)
    inside = np.maximum(np.minimum(v, F32(2.0 ** 31 - 128)), F32(-2.0 ** 31))  # (the cast's defined range)
    return np.where(v >= F32(2.0 ** 31), np.int32(-2 ** 31), inside.astype(np.int32))


# -- FakeQuantWithMinMax* -----------------------------------------------------------------------------


def nudge(min_, max_, quant_min: int, quant_max: int):
    """TF's Nudge: the float range [min, max] moved so that 0.0 is exactly representable
    -> (nudged_min, nudged_max, scale, inverse scale), in float32."""
    qmin, qmax = F32(quant_min), F32(quant_max)
    with np.errstate(divide="ignore", invalid="ignore"):  # min == max: the callers' special case
        scale = (max_ - min_) / (qmax - qmin)
        inv_scale = (qmax - qmin) / (max_ - min_)  # recomputed, not 1 / scale, as TF does
        zero_from_min = qmin - min_ / scale
    zero = np.where(zero_from_min < qmin, qmin,
                    np.where(zero_from_min > qmax, qmax, round_half_away(zero_from_min)))
    return (qmin - zero) * scale, (qmax - zero) * scale, scale, inv_scale


def rounded_product(a, b):
    """a * b, rounded before what follows. IREE's LLVM contracts a multiply and the add after it
    into one FMA, which rounds differently from TF's CPU kernels when the sum is exactly half a
    step; max(product, lowest finite float) keeps the two apart and changes only -inf."""
    return np.maximum(a * b, ml_dtypes.finfo(a.dtype).min)


def _fake_quant(x, min_, max_, quant_min, quant_max, divide: bool):
    """Clamp to the nudged range, round to a step, scale back. TF's Vars functor divides by the
    scale where Args and PerChannel multiply by its inverse (results differ at exact halves);
    a range with min == max == 0 gives zeros (Vars and PerChannel)."""
    nmin, nmax, scale, inv_scale = nudge(min_, max_, quant_min, quant_max)
    quant_zero = np.floor(rounded_product(-nmin, inv_scale) + 0.5)
    shifted = np.maximum(np.minimum(x, nmax), nmin) - nmin
    steps = shifted / scale if divide else rounded_product(shifted, inv_scale)
    out = np.floor(steps - quant_zero + 0.5) * scale
    return np.where(np.logical_and(np.equal(min_, 0), np.equal(max_, 0)), 0, out)


def _fake_quant_gradient(grad, x, min_, max_, quant_min, quant_max, axes):
    """Straight-through: the gradient where x is inside the nudged range; the parts outside
    summed (over `axes`) into min's and max's gradients. min == max == 0 passes all to x."""
    nmin, nmax, _, _ = nudge(min_, max_, quant_min, quant_max)
    zero = np.logical_and(np.equal(min_, 0), np.equal(max_, 0))
    def mask(condition):  # (gradient * 0.0 keeps the gradient's sign on zeros, as TF's select does)
        return np.where(condition, F32(1), F32(0))
    dx = np.where(zero, grad, grad * mask(np.logical_and(x >= nmin, x <= nmax)))
    dmin = np.where(zero, F32(0), np.sum(grad * mask(x < nmin), axis=axes))
    dmax = np.where(zero, F32(0), np.sum(grad * mask(x > nmax), axis=axes))
    return dx, dmin, dmax


def _fake_quant_rule(*, from_attrs: bool, per_channel: bool, gradient: bool):
    divide = not (from_attrs or per_channel)

    def rule(ctx, *args):
        quant_min, quant_max = (1 if ctx.attr("narrow_range", False) else 0), (1 << _num_bits(ctx, 2, 16)) - 1
        grad, args = (args[0], args[1:]) if gradient else (None, args)
        x = args[0]
        min_, max_ = (F32(ctx.attr("min", -6.0)), F32(ctx.attr("max", 6.0))) if from_attrs else args[1:3]
        if not gradient:
            return _fake_quant(x, min_, max_, quant_min, quant_max, divide)
        axes = tuple(range(len(x.shape) - 1)) if per_channel else None
        dx, dmin, dmax = _fake_quant_gradient(grad, x, min_, max_, quant_min, quant_max, axes)
        return dx if from_attrs else [dx, dmin, dmax]
    return rule


def _fake_quant_infer(*, from_attrs: bool, per_channel: bool, gradient: bool):
    def infer(ctx):
        _num_bits(ctx, 2, 16)
        x = ctx.inputs[1 if gradient else 0]
        if from_attrs:
            lo, hi = ctx.attr("min", -6.0), ctx.attr("max", 6.0)
            if not lo < hi:
                raise ctx.error(f"min has to be smaller than max, was: {lo} >= {hi}")
        else:
            want = 1 if per_channel else 0
            for i in (1, 2):
                spec = ctx.inputs[i + gradient]
                if spec.shape is not None and len(spec.shape) != want:
                    raise ctx.error(f"`{('min', 'max')[i - 1]}` must be rank {want} but is rank {len(spec.shape)}")
        out = TensorSpec(F32_TYPE, x.shape)
        if not gradient or from_attrs:
            return [out]
        depth = ctx.inputs[2 + gradient].shape if per_channel else ()
        return [out, TensorSpec(F32_TYPE, depth), TensorSpec(F32_TYPE, depth)]
    return infer


# op -> (min/max from attributes, per channel (the last dimension))
FAKE_QUANTS = {
    "FakeQuantWithMinMaxArgs": (True, False),
    "FakeQuantWithMinMaxVars": (False, False),
    "FakeQuantWithMinMaxVarsPerChannel": (False, True),
}

for _op, (_attrs_form, _per_channel) in FAKE_QUANTS.items():
    for _gradient in (False, True):
        _form = dict(from_attrs=_attrs_form, per_channel=_per_channel, gradient=_gradient)
        register(_op + ("Gradient" if _gradient else ""), infer=_fake_quant_infer(**_form),
                 attrs=("num_bits", "narrow_range") + (("min", "max") if _attrs_form else ()),
                 dtypes=("float32",), dtype_attrs=(),
                 output_args=("backprops_wrt_input", "backprop_wrt_min", "backprop_wrt_max")
                 if _gradient and not _attrs_form else (),
                 **kernel_and_lowering(_fake_quant_rule(**_form)))


# -- QuantizeAndDequantizeV2/V3/V4 ----------------------------------------------------------------------


def along_axis(value, axis: int, rank: int):
    """A per-channel vector shaped to broadcast along `axis` of a rank-`rank` tensor (a scalar,
    or axis -1, as it is)."""
    if axis < 0 or not hasattr(value, "shape") or len(value.shape) == 0:
        return value
    return value.reshape((-1,) + (1,) * (rank - axis - 1))


def quantization_range(min_, max_, num_bits: int, signed: bool, narrow_range: bool):
    """TF's ComputeQuantizationRange: the scale that fits [min, max] into the integer range, taken
    from whichever side needs the smaller one, and the range that scale really covers
    -> (min, max, scale, inverse scale), in the input's type."""
    dtype = min_.dtype
    lo = (-(1 << (num_bits - 1)) + int(narrow_range)) if signed else 0
    hi = (1 << (num_bits - 1)) - 1 if signed else (1 << num_bits) - 1
    lo, hi, biggest = np.asarray(lo, dtype), np.asarray(hi, dtype), np.asarray(ml_dtypes.finfo(dtype).max, dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        from_min = np.where(lo * min_ > 0, lo / min_, biggest)
        from_max = np.where(hi * max_ > 0, hi / max_, biggest)
        use_min = from_min < from_max
        inverse = np.where(use_min, min_ / lo, max_ / hi)
    return (np.where(use_min, min_, lo * inverse), np.where(use_min, hi * inverse, max_),
            np.where(use_min, from_min, from_max), inverse)


ROUNDING = {"HALF_TO_EVEN": np.rint, "HALF_UP": lambda v: np.floor(v + 0.5)}


def _quantize_and_dequantize(ctx, x, in_min, in_max, *num_bits_input):
    rank = len(x.shape)
    axis = ctx.attr("axis", -1)
    axis = -1 if axis == -1 else normalize_axis(ctx, axis, rank)
    num_bits = _qdq_num_bits(ctx, num_bits_input)
    if ctx.attr("range_given", False):
        min_, max_ = in_min, in_max
    else:
        over = None if axis < 0 else tuple(d for d in range(rank) if d != axis)
        min_, max_ = np.min(x, axis=over), np.max(x, axis=over)
    min_, max_ = (along_axis(v, axis, rank) for v in (min_, max_))
    min_, max_, scale, inverse = quantization_range(min_, max_, num_bits, ctx.attr("signed_input", True),
                                                    ctx.attr("narrow_range", False))
    if ctx.attr("range_given", False):
        x = np.maximum(np.minimum(x, max_), min_)
    return ROUNDING[ctx.attr("round_mode", "HALF_TO_EVEN")](x * scale) * inverse


def _qdq_num_bits(ctx, num_bits_input) -> int:
    """V3 takes num_bits as an input (a compile-time constant when compiled), V2/V4 as an attribute."""
    if not num_bits_input:
        return ctx.attr("num_bits", 8)
    value = num_bits_input[0]
    return int(ctx.const(3) if value is None or isinstance(value, Traced) else value)


def _qdq_infer(ctx):
    x = ctx.inputs[0]
    axis = ctx.attr("axis", -1)
    if axis != -1 and x.shape is not None:
        normalize_axis(ctx, axis, len(x.shape))
    if ctx.attr("round_mode", "HALF_TO_EVEN") not in ROUNDING:
        raise ctx.error(f"round_mode must be one of {sorted(ROUNDING)}, got {ctx.attr('round_mode')!r}")
    bits = ctx.attr("num_bits", 8) if ctx.op != "QuantizeAndDequantizeV3" else ctx.inputs[3].value
    if bits is not None:
        signed = ctx.attr("signed_input", True)
        limit = 8 * x.dtype.itemsize
        if not (1 + signed <= int(bits) <= limit):
            raise ctx.error(f"num_bits is out of range: {int(bits)} with signed_input {signed}")
    return [TensorSpec(x.dtype, x.shape)]


QDQ_ATTRS = ("T", "signed_input", "range_given", "narrow_range", "axis")
# op -> its attributes besides QDQ_ATTRS (V3 reads num_bits from its fourth input)
QUANTIZE_AND_DEQUANTIZE = {
    "QuantizeAndDequantizeV2": ("num_bits", "round_mode"),
    "QuantizeAndDequantizeV3": (),
    "QuantizeAndDequantizeV4": ("num_bits", "round_mode"),
}
for _op, _extra in QUANTIZE_AND_DEQUANTIZE.items():
    register(_op, infer=_qdq_infer, attrs=QDQ_ATTRS + _extra, dtypes=FLOAT,
             const_inputs=(3,) if _op.endswith("V3") else (),
             **kernel_and_lowering(_quantize_and_dequantize))


# -- Dequantize -------------------------------------------------------------------------------------------


def _dequantize_min_combined(q, min_, max_, info):
    half = F32(0) if info.min == 0 else (F32(info.max) - F32(info.min) + F32(1)) / F32(2)
    scale = (max_ - min_) / (F32(info.max) - F32(info.min))
    return (q + half) * scale + min_


def _dequantize_min_first(q, min_, max_, info):
    """quantization_utils.h's DEQUANTIZE_WITH_EIGEN: the range's low end rounded to a step."""
    steps = F32(2.0 ** (8 * np.dtype(info.dtype).itemsize) - 1)  # (TF divides in double)
    scale = (max_ - min_) / steps
    low = np.where(np.equal(max_, min_), min_, round_half_away(min_ / scale) * scale)
    return (low - F32(info.min) * scale) + q * scale


def _dequantize_scaled(q, min_, max_, info, narrow_range=False):
    """(TF reads the input as int first: a qint32 goes through qint32_as_int.)"""
    if info.min == 0:
        scale = max_ / F32(info.max)
    else:
        scale = np.maximum(min_ / F32(info.min + int(narrow_range)), max_ / F32(info.max))
    return q * scale


DEQUANTIZE_MODES = {"MIN_COMBINED": _dequantize_min_combined, "MIN_FIRST": _dequantize_min_first,
                    "SCALED": _dequantize_scaled}


def _dequantize(ctx, q, min_, max_):
    info = np.iinfo(ctx.inputs[0].dtype)
    rank, axis = len(q.shape), ctx.attr("axis", -1)
    if axis >= 0:
        min_, max_ = along_axis(min_, axis, rank), along_axis(max_, axis, rank)
    elif len(min_.shape):  # a one-element range: TF reads its first element
        min_, max_ = min_.reshape(()), max_.reshape(())
    mode = ctx.attr("mode", "MIN_COMBINED")
    extra = {"narrow_range": ctx.attr("narrow_range", False)} if mode == "SCALED" else {}
    as_int = qint32_as_int(q) if mode == "SCALED" and info.bits == 32 else q
    out = DEQUANTIZE_MODES[mode](as_int.astype(F32), min_, max_, info, **extra)
    return out.astype(ctx.attr("dtype", F32))


def _dequantize_infer(ctx):
    q = ctx.inputs[0]
    mode, axis, dtype = ctx.attr("mode", "MIN_COMBINED"), ctx.attr("axis", -1), np.dtype(ctx.attr("dtype", F32))
    if mode not in DEQUANTIZE_MODES:
        raise ctx.error(f"mode must be one of {', '.join(DEQUANTIZE_MODES)}, is '{mode}'")
    if dtype.name not in ("float32", "bfloat16") or (dtype.name == "bfloat16" and mode != "MIN_COMBINED"):
        raise ctx.error(f"output type {dtype.name} with mode {mode}: TF takes float32, or bfloat16 with MIN_COMBINED")
    if axis >= 0 and mode == "MIN_FIRST":
        raise ctx.error("MIN_FIRST mode is not implemented for Dequantize with axis != -1")
    if q.shape is not None and axis >= len(q.shape):
        raise ctx.error(f"axis must be less than input dimension ({len(q.shape)}), got {axis}")
    slices = 1 if axis < 0 or q.shape is None else q.shape[axis]
    for i in (1, 2):
        shape = ctx.inputs[i].shape
        if shape is not None and slices is not None and int(np.prod(shape)) != slices:
            raise ctx.error(f"input {i} must have {slices} element(s) (one per slice on axis {axis}), has shape "
                            f"{list(shape)}")
    return [TensorSpec(dtype, q.shape)]


register("Dequantize", infer=_dequantize_infer, attrs=("T", "mode", "narrow_range", "axis", "dtype"),
         dtypes=("int8", "uint8", "int16", "uint16", "int32", "float32", "bfloat16"),
         **kernel_and_lowering(_dequantize))
