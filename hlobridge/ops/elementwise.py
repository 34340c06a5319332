"""Elementwise ops: one generic rule per arity plus tables.

Unary ops keep their input's dtype (IsFinite and LogicalNot give bool); binary ops
broadcast NumPy-style, comparisons give bool. A table row is
  TF op -> (StableHLO lowering, NumPy kernel)
where a lowering is either a StableHLO op name or a small function over Values.
"""

from __future__ import annotations

import math

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from .. import dtypes
from ..spec import TensorSpec
from .common import broadcast_shapes
from .registry import register

# -- unary --------------------------------------------------------------------------------------


def _c(x, value):
    return hlo.scalar_like(value, x)


def _softplus(x):
    # log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)): no overflow for large |x|.
    return hlo.add(hlo.maximum(x, _c(x, 0)),
                   hlo.unary("log_plus_one", hlo.unary("exponential", hlo.unary("negate", hlo.unary("abs", x)))))


def _elu(x):
    return hlo.select(hlo.compare("GT", x, _c(x, 0)), x, hlo.unary("exponential_minus_one", x))


_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _selu(x):
    neg = hlo.multiply(_c(x, _SELU_ALPHA), hlo.unary("exponential_minus_one", x))
    return hlo.multiply(_c(x, _SELU_SCALE), hlo.select(hlo.compare("GT", x, _c(x, 0)), x, neg))


def _np_softplus(x):
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def _np_erf(x):
    return np.vectorize(math.erf, otypes=[x.dtype])(x) if x.size else x


def _np_erfc(x):
    return np.vectorize(math.erfc, otypes=[x.dtype])(x) if x.size else x


def _sigmoid_np(x):
    return (1 / (1 + np.exp(-x.astype(np.float64)))).astype(x.dtype)


def _round_half_even(x):
    return np.round(x) if dtypes.is_floating(x.dtype) else x


UNARY = {
    "Neg": ("negate", np.negative),
    "Abs": ("abs", np.abs),
    "Exp": ("exponential", np.exp),
    "Expm1": ("exponential_minus_one", np.expm1),
    "Log": ("log", np.log),
    "Log1p": ("log_plus_one", np.log1p),
    "Sqrt": ("sqrt", np.sqrt),
    "Rsqrt": ("rsqrt", lambda x: 1 / np.sqrt(x)),
    "Tanh": ("tanh", np.tanh),
    "Sigmoid": ("logistic", _sigmoid_np),
    "Sin": ("sine", np.sin),
    "Cos": ("cosine", np.cos),
    "Tan": ("tan", np.tan),
    "Floor": ("floor", np.floor),
    "Ceil": ("ceil", np.ceil),
    "Round": ("round_nearest_even", _round_half_even),
    "Rint": ("round_nearest_even", np.rint),
    "Sign": ("sign", np.sign),
    "Erf": (lambda x: hlo.chlo_unary("erf", x), _np_erf),
    "Erfc": (lambda x: hlo.chlo_unary("erfc", x), _np_erfc),
    "Relu": (lambda x: hlo.maximum(x, _c(x, 0)), lambda x: np.maximum(x, 0)),
    "Relu6": (lambda x: hlo.clamp(_c(x, 0), x, _c(x, 6)), lambda x: np.clip(x, 0, 6)),
    "Square": (lambda x: hlo.multiply(x, x), np.square),
    "Reciprocal": (lambda x: hlo.divide(_c(x, 1), x), np.reciprocal),
    "Inv": (lambda x: hlo.divide(_c(x, 1), x), np.reciprocal),
    "Softplus": (_softplus, _np_softplus),
    "Softsign": (lambda x: hlo.divide(x, hlo.add(_c(x, 1), hlo.unary("abs", x))),
                 lambda x: x / (1 + np.abs(x))),
    "Elu": (_elu, lambda x: np.where(x > 0, x, np.expm1(x))),
    "Selu": (_selu, lambda x: _SELU_SCALE * np.where(x > 0, x, _SELU_ALPHA * np.expm1(x))),
    "OnesLike": (lambda x: _c(x, 1), np.ones_like),
    "ZerosLike": (lambda x: _c(x, 0), np.zeros_like),
}
# Ops whose result is bool regardless of the input dtype.
BOOL_UNARY = {
    "IsFinite": ("is_finite", np.isfinite),
    "IsNan": (lambda x: hlo.compare("NE", x, x), np.isnan),
    "IsInf": (lambda x: hlo.compare("EQ", hlo.unary("abs", x), _c(x, np.inf)), np.isinf),
    "LogicalNot": ("not", np.logical_not),
}


def _unary_infer(result_dtype=None):
    def infer(ctx):
        s = ctx.inputs[0]
        return [TensorSpec(result_dtype or s.dtype, s.shape)]
    return infer


def _lowering(how):
    return (lambda *xs: hlo.unary(how, *xs)) if isinstance(how, str) else how


def _register_unary(table, result_dtype=None):
    for op, (how, np_fn) in table.items():
        lower_fn = _lowering(how)
        register(op, infer=_unary_infer(result_dtype), attrs=("T",),
                 lower=lambda ctx, x, f=lower_fn: f(x),
                 kernel=lambda ctx, x, f=np_fn: np.asarray(f(x)).astype(ctx.out().dtype))


_register_unary(UNARY)
_register_unary(BOOL_UNARY, np.dtype(np.bool_))


def _leaky_relu_lower(ctx, x):
    alpha = _c(x, ctx.attr("alpha", 0.2))
    return hlo.select(hlo.compare("GT", x, _c(x, 0)), x, hlo.multiply(alpha, x))


register("LeakyRelu", infer=_unary_infer(), attrs=("T", "alpha"), lower=_leaky_relu_lower,
         kernel=lambda ctx, x: np.where(x > 0, x, x * np.asarray(ctx.attr("alpha", 0.2), x.dtype)))

# -- binary ---------------------------------------------------------------------------------------


def _floor_div(a, b):
    if isinstance(hlo.element_type_of(a), hlo.ir.FloatType):
        return hlo.unary("floor", hlo.divide(a, b))
    q = hlo.divide(a, b)  # truncates toward zero
    zero = _c(a, 0)
    inexact = hlo.compare("NE", hlo.multiply(q, b), a)
    signs_differ = hlo.compare("NE", hlo.compare("LT", a, zero), hlo.compare("LT", b, zero))
    return hlo.select(hlo.binary("and", inexact, signs_differ), hlo.subtract(q, _c(a, 1)), q)


def _floor_mod(a, b):
    r = hlo.binary("remainder", a, b)  # sign of the dividend
    zero = _c(a, 0)
    fix = hlo.binary("and", hlo.compare("NE", r, zero),
                     hlo.compare("NE", hlo.compare("LT", r, zero), hlo.compare("LT", b, zero)))
    return hlo.select(fix, hlo.add(r, b), r)


def _div_no_nan(a, b):
    return hlo.select(hlo.compare("EQ", b, _c(b, 0)), _c(a, 0), hlo.divide(a, b))


def _squared_difference(a, b):
    d = hlo.subtract(a, b)
    return hlo.multiply(d, d)


def _np_trunc_div(a, b):
    if dtypes.is_floating(a.dtype):
        return np.trunc(a / b)
    return np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))


def _np_div(a, b):
    return a / b if dtypes.is_floating(a.dtype) else _np_trunc_div(a, b)


def _np_floor_mod(a, b):
    return np.fmod(np.fmod(a, b) + b, b) if dtypes.is_floating(a.dtype) else np.mod(a, b)


def _np_div_no_nan(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b == 0, np.zeros_like(a), a / np.where(b == 0, np.ones_like(b), b))


BINARY = {
    "Add": ("add", np.add),
    "AddV2": ("add", np.add),
    "Sub": ("subtract", np.subtract),
    "Mul": ("multiply", np.multiply),
    "RealDiv": ("divide", np.divide),
    "Div": ("divide", _np_div),
    "TruncateDiv": ("divide", _np_trunc_div),
    "FloorDiv": (_floor_div, np.floor_divide),
    "FloorMod": (_floor_mod, _np_floor_mod),
    "Mod": ("remainder", np.fmod),
    "TruncateMod": ("remainder", np.fmod),
    "DivNoNan": (_div_no_nan, _np_div_no_nan),
    "Maximum": ("maximum", np.maximum),
    "Minimum": ("minimum", np.minimum),
    "Pow": ("power", np.power),
    "Atan2": ("atan2", np.arctan2),
    "SquaredDifference": (_squared_difference, lambda a, b: np.square(a - b)),
    "LogicalAnd": ("and", np.logical_and),
    "LogicalOr": ("or", np.logical_or),
    "BitwiseAnd": ("and", np.bitwise_and),
    "BitwiseOr": ("or", np.bitwise_or),
    "BitwiseXor": ("xor", np.bitwise_xor),
}
COMPARISONS = {
    "Equal": ("EQ", np.equal),
    "NotEqual": ("NE", np.not_equal),
    "Less": ("LT", np.less),
    "LessEqual": ("LE", np.less_equal),
    "Greater": ("GT", np.greater),
    "GreaterEqual": ("GE", np.greater_equal),
}


def _binary_infer(result_dtype=None):
    def infer(ctx):
        a, b = ctx.inputs
        if a.dtype != b.dtype:
            raise ctx.error(f"operand dtypes differ: {dtypes.name(a.dtype)} vs {dtypes.name(b.dtype)}")
        return [TensorSpec(result_dtype or a.dtype, broadcast_shapes(ctx, a.shape, b.shape))]
    return infer


def _broadcast_operands(ctx, a, b):
    shape = ctx.out().shape
    return hlo.broadcast_to(a, shape), hlo.broadcast_to(b, shape)


def _register_binary(table, result_dtype=None, attrs=("T",)):
    for op, (how, np_fn) in table.items():
        fn = (lambda a, b, h=how: hlo.binary(h, a, b)) if isinstance(how, str) else how
        register(op, infer=_binary_infer(result_dtype), attrs=attrs,
                 lower=lambda ctx, a, b, f=fn: f(*_broadcast_operands(ctx, a, b)),
                 kernel=lambda ctx, a, b, f=np_fn: np.asarray(f(a, b)).astype(ctx.out().dtype))


_register_binary(BINARY)
_register_binary({op: ((lambda a, b, d=d: hlo.compare(d, a, b)), f) for op, (d, f) in COMPARISONS.items()},
                 np.dtype(np.bool_), attrs=("T", "incompatible_shape_error"))

# -- n-ary and casts --------------------------------------------------------------------------------


def _addn_infer(ctx):
    first = ctx.inputs[0]
    return [TensorSpec(first.dtype, broadcast_shapes(ctx, *[s.shape for s in ctx.inputs]))]


def _addn_lower(ctx, *xs):
    shape = ctx.out().shape
    total = hlo.broadcast_to(xs[0], shape)
    for x in xs[1:]:
        total = hlo.add(total, hlo.broadcast_to(x, shape))
    return total


register("AddN", infer=_addn_infer, attrs=("T", "N"), lower=_addn_lower,
         kernel=lambda ctx, *xs: np.asarray(sum(xs[1:], xs[0])).astype(ctx.out().dtype))


def _cast_infer(ctx):
    return [TensorSpec(ctx.attr("DstT"), ctx.inputs[0].shape)]


def _cast_lower(ctx, x):
    dst = ctx.out().dtype
    if dst == ctx.inputs[0].dtype:
        return x
    if dst == np.bool_:
        return hlo.compare("NE", x, _c(x, 0))
    return hlo.convert(x, dst)


def _cast_kernel(ctx, x):
    dst = ctx.out().dtype
    if dst == np.bool_:
        return x != 0
    return x.astype(dst)


register("Cast", infer=_cast_infer, attrs=("SrcT", "DstT", "Truncate"), lower=_cast_lower,
         kernel=_cast_kernel)


def _select_infer(ctx):
    c, a, b = ctx.inputs
    shape = broadcast_shapes(ctx, c.shape, a.shape, b.shape)
    return [TensorSpec(a.dtype, shape)]


def _select_lower(ctx, c, a, b):
    shape = ctx.out().shape
    cshape = hlo.shape_of(c)
    if ctx.op == "Select" and len(cshape) == 1 and len(shape) > 1:
        c = hlo.broadcast_in_dim(c, shape, [0])  # v1 Select: a vector picks rows
    return hlo.select(hlo.broadcast_to(c, shape), hlo.broadcast_to(a, shape), hlo.broadcast_to(b, shape))


def _select_kernel(ctx, c, a, b):
    if ctx.op == "Select" and c.ndim == 1 and a.ndim > 1:
        c = c.reshape((-1,) + (1,) * (a.ndim - 1))
    return np.where(c, a, b).astype(ctx.out().dtype)


def _select_v1_infer(ctx):
    c, a, b = ctx.inputs
    return [TensorSpec(a.dtype, a.shape if a.shape is not None else b.shape)]


register("Select", infer=_select_v1_infer, attrs=("T",), lower=_select_lower, kernel=_select_kernel)
register("SelectV2", infer=_select_infer, attrs=("T",), lower=_select_lower, kernel=_select_kernel)
