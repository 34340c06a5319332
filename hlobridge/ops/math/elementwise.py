"""Elementwise ops: one generic rule per arity plus tables.

Unary ops keep their input's dtype (IsFinite and LogicalNot give bool); binary ops
broadcast NumPy-style, comparisons give bool. A table row is
  TF op -> (StableHLO lowering, NumPy kernel, dtypes it compiles for)
where a lowering is either a StableHLO op name or a small function over Values.
"""

from __future__ import annotations

import math

from decimal import Decimal, localcontext

import ml_dtypes
import numpy as np

from hlobridge.dialects import stablehlo as hlo
from hlobridge.passes.ir.ir_helpers import splat_value

from ... import dtypes
from ...spec import TensorSpec
from ..backend_style import lowering_backend
from ..helpers import broadcast_shapes
from ..registry import register
from ..typesets import (ANY, BOOL, COMPLEX, COMPLEX_NO_F64, FLOAT, FLOAT_NO_F64, INT, NUMBER, NUMBER_NO_F64,
                       SIGNED_NUMBER)

# -- unary --------------------------------------------------------------------------------------


def like(x, value):
    """A constant of `value` with x's shape and element type (hlo.scalar_like, x first)."""
    return hlo.scalar_like(value, x)


_EPSILON = {"f16": 2.0 ** -10, "bf16": 2.0 ** -7, "f32": 2.0 ** -23, "f64": 2.0 ** -52}


def _softplus_threshold(dtype_or_type) -> float:
    """TF's log(epsilon) + 2: above -threshold softplus is x, below threshold it is exp(x)."""
    key = str(dtype_or_type) if not isinstance(dtype_or_type, np.dtype) else dtypes.mlir_name(dtype_or_type)
    return float(np.log(_EPSILON[key]) + 2)


def _softplus(x):
    t = _softplus_threshold(hlo.element_type_of(x))
    e = hlo.unary("exponential", x)
    small = hlo.select(hlo.compare("LT", x, like(x, t)), e, hlo.unary("log", hlo.add(e, like(x, 1))))
    return hlo.select(hlo.compare("GT", x, like(x, -t)), x, small)


def _np_softplus(x):
    t = x.dtype.type(_softplus_threshold(x.dtype))
    with np.errstate(over="ignore"):
        e = np.exp(x)
        return np.where(x > -t, x, np.where(x < t, e, np.log(e + 1)))


# Elu and Selu as TF computes them: exp(x) - 1 (not expm1) where x < 0, so Elu(-1e-30) is +0.
def _elu(x):
    return hlo.select(hlo.compare("LT", x, like(x, 0)), hlo.subtract(hlo.unary("exponential", x), like(x, 1)), x)


# Selu's constants (TF's), shared with SeluGrad.
SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
SELU_SCALE_ALPHA = 1.7580993408473768599402175208123


def _selu(x):
    neg = hlo.multiply(like(x, SELU_SCALE_ALPHA), hlo.subtract(hlo.unary("exponential", x), like(x, 1)))
    return hlo.select(hlo.compare("LT", x, like(x, 0)), neg, hlo.multiply(like(x, SELU_SCALE), x))


def _np_elu(x):
    with np.errstate(over="ignore"):
        return np.where(x < 0, np.exp(x) - 1, x)


def _np_selu(x):
    with np.errstate(over="ignore"):
        return np.where(x < 0, x.dtype.type(SELU_SCALE_ALPHA) * (np.exp(x) - 1), x.dtype.type(SELU_SCALE) * x)


# IREE 3.13's float32 sin/cos/tan are not TensorFlow's: the argument is reduced with a float32
# pi, so the error grows with |x| (2.7e-4 at |x| ~ 1e4; cos(1e30) is -inf), and sin(-1e-8)
# comes out as +6e-8. So hlobridge computes them itself, in float64 arithmetic (which needs no
# libm), and rounds to float32 once:
#  - |x| >= 2^24: x = m * 2^e with an integer m < 2^24, and 2^e mod 2*pi = hi + lo from a table
#    made with a 120-digit pi (hi has 26 bits, so A = m * hi is exact); B = m * lo is small;
#    below 2^24, A = x and B = 0;
#  - k = round((A + B) * 2/pi), r = ((A - k * pio2_hi) - k * pio2_lo) + B, pio2_hi with 26 bits
#    (k * pio2_hi exact while k < 2^27), so |r| <= pi/4 to about 1e-16;
#  - sin r and cos r by their Taylor series through r^13 and r^14 (truncation < 2e-14), rotated
#    by k mod 4; tan = sin / cos.
# Measured against float64 NumPy over the whole float32 range: within one float32 rounding.
_PI = Decimal("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803482534211706798"
              "214808651328230664709384460955058223172535940812848111745028410270193852110555964462294895493038196")


def _high_bits(value: float, bits: int = 26) -> float:
    """value with only its leading `bits` significant bits (products with <= 27-bit integers are exact)."""
    return float(np.int64(np.float64(value).view(np.int64) >> (52 - bits + 1) << (52 - bits + 1)).view(np.float64))


_PIO2_HI = _high_bits(np.pi / 2)
_PIO2_LO = float((_PI / 2) - Decimal(_PIO2_HI))
_SIN_TAYLOR = [(-1) ** i / float(math.factorial(2 * i + 1)) for i in range(7)]   # r, r^3, ..., r^13
_COS_TAYLOR = [(-1) ** i / float(math.factorial(2 * i)) for i in range(8)]       # 1, r^2, ..., r^14


def _two_pow_mod_2pi() -> np.ndarray:
    """[e, (hi, lo)]: 2^e mod 2*pi as hi (26 bits) + lo, for e = 0 .. 104 (float32's largest m * 2^e)."""
    with localcontext() as context:
        context.prec = 200
        table = []
        for e in range(105):
            c = Decimal(2) ** e % (2 * _PI)
            hi = _high_bits(float(c))
            table.append((hi, float(c - Decimal(hi))))
    return np.array(table, np.float64)


_TWO_POW_MOD_2PI = _two_pow_mod_2pi()


def _angle_parts(x32):
    """(A, B), float64: an angle equal to x modulo 2*pi, as an exact A and a small B."""
    shape = hlo.shape_of(x32)
    bits = hlo.bitcast_convert(x32, shape, np.int32)
    exponent = hlo.subtract(hlo.binary("and", hlo.binary("shift_right_logical", bits, hlo.scalar_like(23, bits)),
                                       hlo.scalar_like(0xFF, bits)), hlo.scalar_like(150, bits))
    mantissa = hlo.binary("or", hlo.binary("and", bits, hlo.scalar_like(0x7FFFFF, bits)), hlo.scalar_like(0x800000, bits))
    huge = hlo.binary("and", hlo.compare("GT", exponent, hlo.scalar_like(0, exponent)),
                      hlo.compare("LT", hlo.unary("abs", x32), hlo.scalar_like(np.inf, x32)))
    index = hlo.clamp(hlo.scalar_like(0, exponent), exponent, hlo.scalar_like(len(_TWO_POW_MOD_2PI) - 1, exponent))
    pair = hlo.gather(hlo.constant(_TWO_POW_MOD_2PI), hlo.reshape(index, shape + [1]), shape + [2],
                      offset_dims=[len(shape)], collapsed_slice_dims=[0], start_index_map=[0],
                      index_vector_dim=len(shape), slice_sizes=[1, 2])
    m = hlo.convert(mantissa, np.float64)
    negative = hlo.compare("LT", x32, hlo.scalar_like(0, x32))

    def part(i):
        v = hlo.multiply(m, hlo.reshape(hlo.slice(pair, [0] * len(shape) + [i], shape + [i + 1]), shape))
        return hlo.select(negative, hlo.unary("negate", v), v)
    xd = hlo.convert(x32, np.float64)
    return hlo.select(huge, part(0), xd), hlo.select(huge, part(1), hlo.scalar_like(0, xd))


def _polynomial(z, coefficients):
    acc = hlo.scalar_like(coefficients[-1], z)
    for c in reversed(coefficients[:-1]):
        acc = hlo.add(hlo.multiply(acc, z), hlo.scalar_like(c, z))
    return acc


def _trig(op, x):
    narrow = hlo.element_type_of(x)
    x32 = x if str(narrow) == "f32" else hlo.convert(x, np.float32)
    a, b = _angle_parts(x32)
    k = hlo.unary("round_nearest_even", hlo.multiply(hlo.add(a, b), hlo.scalar_like(2 / np.pi, a)))
    r = hlo.add(hlo.subtract(hlo.subtract(a, hlo.multiply(k, hlo.scalar_like(_PIO2_HI, a))),
                             hlo.multiply(k, hlo.scalar_like(_PIO2_LO, a))), b)
    z = hlo.multiply(r, r)
    s, c = hlo.multiply(r, _polynomial(z, _SIN_TAYLOR)), _polynomial(z, _COS_TAYLOR)
    k_int = hlo.convert(k, np.int64)  # (inf and NaN make r NaN: whatever k_int is, the result is NaN)
    quadrant = hlo.binary("and", k_int, hlo.scalar_like(3, k_int))  # k mod 4, negative k included

    def pick(values):  # the value for quadrant 0, 1, 2, 3
        out = values[3]
        for q in (2, 1, 0):
            out = hlo.select(hlo.compare("EQ", quadrant, hlo.scalar_like(q, quadrant)), values[q], out)
        return out
    if op == "sin":
        y = pick([s, c, hlo.unary("negate", s), hlo.unary("negate", c)])
    elif op == "cos":
        y = pick([c, hlo.unary("negate", s), hlo.unary("negate", c), s])
    else:
        odd = hlo.compare("EQ", hlo.binary("and", quadrant, hlo.scalar_like(1, quadrant)), hlo.scalar_like(1, quadrant))
        y = hlo.select(odd, hlo.divide(hlo.unary("negate", c), s), hlo.divide(s, c))
    y = hlo.convert(y, np.float32)
    if op != "cos":  # sin(-0) and tan(-0) are -0
        y = hlo.select(hlo.compare("EQ", x32, hlo.scalar_like(0, x32)), x32, y)
    return y if str(narrow) == "f32" else hlo.convert(y, {"f16": np.float16, "bf16": ml_dtypes.bfloat16}[str(narrow)])


def _sign(x):
    """stablehlo.sign(-0.0) is -0.0; TF's is +0.0."""
    s = hlo.unary("sign", x)
    return hlo.add(s, like(x, 0)) if isinstance(hlo.element_type_of(x), hlo.ir.FloatType) else s


def _np_sign(x):
    return np.sign(x) + x.dtype.type(0) if dtypes.is_floating(x.dtype) else np.sign(x)


def _np_erf(x):
    return np.vectorize(math.erf, otypes=[x.dtype])(x) if x.size else x


def _np_erfc(x):
    return np.vectorize(math.erfc, otypes=[x.dtype])(x) if x.size else x


def _sigmoid_np(x):
    return (1 / (1 + np.exp(-x.astype(np.float64)))).astype(x.dtype)


def _round_half_even(x):
    return np.round(x) if dtypes.is_floating(x.dtype) else x


def _round_lower(x):
    """Round is the identity on integers (TF registers it for them too)."""
    if isinstance(hlo.element_type_of(x), hlo.ir.FloatType):
        return hlo.unary("round_nearest_even", x)
    return x


UNARY = {
    "Neg": ("negate", np.negative, SIGNED_NUMBER + COMPLEX),
    "Abs": ("abs", np.abs, SIGNED_NUMBER),
    "Exp": ("exponential", np.exp, FLOAT + COMPLEX_NO_F64),
    "Expm1": ("exponential_minus_one", np.expm1, FLOAT),
    "Log": ("log", np.log, FLOAT + COMPLEX_NO_F64),
    "Log1p": ("log_plus_one", np.log1p, FLOAT),
    "Sqrt": ("sqrt", np.sqrt, FLOAT + COMPLEX_NO_F64),
    "Rsqrt": ("rsqrt", lambda x: 1 / np.sqrt(x), FLOAT + COMPLEX_NO_F64),
    "Tanh": ("tanh", np.tanh, FLOAT_NO_F64 + COMPLEX_NO_F64),
    "Sigmoid": ("logistic", _sigmoid_np, FLOAT),
    "Sin": (lambda x: _trig("sin", x), np.sin, FLOAT_NO_F64),
    "Cos": (lambda x: _trig("cos", x), np.cos, FLOAT_NO_F64),
    "Tan": (lambda x: _trig("tan", x), np.tan, FLOAT_NO_F64),
    "Floor": ("floor", np.floor, FLOAT),
    "Ceil": ("ceil", np.ceil, FLOAT),
    "Round": (_round_lower, _round_half_even, SIGNED_NUMBER),
    "Rint": ("round_nearest_even", np.rint, FLOAT),
    "Sign": (_sign, _np_sign, SIGNED_NUMBER),
    "Erf": (lambda x: hlo.chlo_unary("erf", x), _np_erf, FLOAT),
    "Erfc": (lambda x: hlo.chlo_unary("erfc", x), _np_erfc, FLOAT),
    "Asin": (lambda x: hlo.chlo_unary("asin", x), np.arcsin, FLOAT_NO_F64),  # (f64 needs libm's atan2)
    "Acos": (lambda x: hlo.chlo_unary("acos", x), np.arccos, FLOAT_NO_F64),
    "Atan": (lambda x: hlo.chlo_unary("atan", x), np.arctan, FLOAT_NO_F64),
    "Sinh": (lambda x: hlo.chlo_unary("sinh", x), np.sinh, FLOAT),
    "Cosh": (lambda x: hlo.chlo_unary("cosh", x), np.cosh, FLOAT),
    "Asinh": (lambda x: hlo.chlo_unary("asinh", x), np.arcsinh, FLOAT),
    "Acosh": (lambda x: hlo.chlo_unary("acosh", x), np.arccosh, FLOAT),
    "Atanh": (lambda x: hlo.chlo_unary("atanh", x), np.arctanh, FLOAT),
    "Relu": (lambda x: hlo.maximum(x, like(x, 0)), lambda x: np.maximum(x, 0), NUMBER),
    "Relu6": (lambda x: hlo.clamp(like(x, 0), x, like(x, 6)), lambda x: np.minimum(np.maximum(x, 0), 6), NUMBER),
    "Square": (lambda x: hlo.multiply(x, x), np.square, NUMBER + COMPLEX),
    "Reciprocal": (lambda x: hlo.divide(like(x, 1), x), np.reciprocal, FLOAT + COMPLEX),
    "Inv": (lambda x: hlo.divide(like(x, 1), x), np.reciprocal, FLOAT + COMPLEX),
    "Softplus": (_softplus, _np_softplus, FLOAT),
    "Softsign": (lambda x: hlo.divide(x, hlo.add(like(x, 1), hlo.unary("abs", x))),
                 lambda x: x / (1 + np.abs(x)), FLOAT),
    "Elu": (_elu, _np_elu, FLOAT),
    "Selu": (_selu, _np_selu, FLOAT),
    "OnesLike": (lambda x: like(x, 1), np.ones_like, ANY),
    "ZerosLike": (lambda x: like(x, 0), np.zeros_like, ANY),
}
# Ops whose result is bool regardless of the input dtype.
BOOL_UNARY = {
    "IsFinite": ("is_finite", np.isfinite, FLOAT),
    "IsNan": (lambda x: hlo.compare("NE", x, x), np.isnan, FLOAT),
    "IsInf": (lambda x: hlo.compare("EQ", hlo.unary("abs", x), like(x, np.inf)), np.isinf, FLOAT),
    "LogicalNot": ("not", np.logical_not, BOOL),
}


def _unary_infer(result_dtype=None):
    def infer(ctx):
        s = ctx.inputs[0]
        return [TensorSpec(result_dtype or s.dtype, s.shape)]
    return infer


def _lowering(how):
    return (lambda *xs: hlo.unary(how, *xs)) if isinstance(how, str) else how


def _register_unary(table, result_dtype=None):
    for op, (how, np_fn, types) in table.items():
        lower_fn = _lowering(how)
        register(op, infer=_unary_infer(result_dtype), attrs=("T",), dtypes=types,
                 lower=lambda ctx, x, f=lower_fn: f(x),
                 kernel=lambda ctx, x, f=np_fn: np.asarray(f(x)).astype(ctx.out().dtype))


_register_unary(UNARY)
_register_unary(BOOL_UNARY, np.dtype(np.bool_))


def _leaky_relu_lower(ctx, x):
    alpha = like(x, ctx.attr("alpha", 0.2))
    return hlo.select(hlo.compare("GT", x, like(x, 0)), x, hlo.multiply(alpha, x))


register("LeakyRelu", infer=_unary_infer(), attrs=("T", "alpha"), lower=_leaky_relu_lower, dtypes=FLOAT,
         kernel=lambda ctx, x: np.where(x > 0, x, x * np.asarray(ctx.attr("alpha", 0.2), x.dtype)))

# -- binary ---------------------------------------------------------------------------------------


def _floor_div(a, b):
    if isinstance(hlo.element_type_of(a), hlo.ir.FloatType):
        return hlo.unary("floor", hlo.divide(a, b))
    q = hlo.divide(a, b)  # truncates toward zero
    zero = like(a, 0)
    inexact = hlo.compare("NE", hlo.multiply(q, b), a)
    signs_differ = hlo.compare("NE", hlo.compare("LT", a, zero), hlo.compare("LT", b, zero))
    return hlo.select(hlo.binary("and", inexact, signs_differ), hlo.subtract(q, like(a, 1)), q)


def _floor_mod(a, b):
    r = hlo.binary("remainder", a, b)  # sign of the dividend
    zero = like(a, 0)
    fix = hlo.binary("and", hlo.compare("NE", r, zero),
                     hlo.compare("NE", hlo.compare("LT", r, zero), hlo.compare("LT", b, zero)))
    return hlo.select(fix, hlo.add(r, b), r)


def _div_no_nan(a, b):
    return hlo.select(hlo.compare("EQ", b, like(b, 0)), like(a, 0), hlo.divide(a, b))


def _mul_no_nan(a, b):
    return hlo.select(hlo.compare("EQ", b, like(b, 0)), like(a, 0), hlo.multiply(a, b))


def _zero_where_x_zero(x, value):
    """TF's xlogy/xdivy family: 0 wherever x == 0 (even where y makes value NaN or inf)."""
    return hlo.select(hlo.compare("EQ", x, like(x, 0)), like(x, 0), value)


def _xlogy(a, b):
    return _zero_where_x_zero(a, hlo.multiply(a, hlo.unary("log", b)))


def _xlog1py(a, b):
    return _zero_where_x_zero(a, hlo.multiply(a, hlo.unary("log_plus_one", b)))


def _xdivy(a, b):
    return _zero_where_x_zero(a, hlo.divide(a, b))


def _np_where_x_zero(x, value):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x == 0, np.zeros_like(x), value())


SMALL_POWERS = (2, 3)  # constant exponents computed by multiplying (_pow)


def _pow(x, y):
    """C's pow (what TensorFlow's kernels call). IREE 3.13's float power is exp(y * log(x)) and
    gets every special value wrong (nan^0, 1^nan, 0^0, inf^y, any negative base: NaN), so only
    |x|^y for finite non-zero |x| comes from it; signs and special values are selected here.

    A constant exponent of 2 or 3 (x**3 in the tanh GELU of BERT and GPT-2, x**2 in squared
    errors) is x*x or x*x*x instead, as XLA's algebraic simplifier and MLIR's math
    simplification rewrite it: every special value comes out as pow gives it (signed zeros,
    infinities, NaN), each product rounded once, and the exp, log and a dozen selects per
    element are gone: BERT-2's intermediate matmul with its GELU 1.06 -> 0.96 ms per layer, its
    module 0.94-0.97x (per-dispatch replays, batch 8, 2-core AVX2 VM, 2026-11-29)."""
    et = hlo.element_type_of(x)
    if not isinstance(et, hlo.ir.FloatType):
        return hlo.binary("power", x, y)
    if (k := splat_value(y)) in SMALL_POWERS:
        square = hlo.multiply(x, x)
        return square if k == 2 else hlo.multiply(square, x)
    inf, nan = like(x, np.inf), like(x, np.nan)
    ax = hlo.unary("abs", x)
    magnitude = hlo.select(hlo.compare("EQ", ax, inf), hlo.select(hlo.compare("GT", y, like(y, 0)), inf, like(x, 0)),
                           hlo.binary("power", ax, y))
    integral = hlo.compare("EQ", hlo.unary("floor", y), y)  # +-inf count as even integers, NaN as neither
    half = hlo.multiply(y, like(y, 0.5))
    odd = hlo.binary("and", integral, hlo.compare("NE", hlo.unary("floor", half), half))
    negative = _sign_bit(x)  # -0.0 counts
    result = hlo.select(hlo.binary("and", negative, odd), hlo.unary("negate", magnitude), magnitude)
    finite_negative = hlo.binary("and", hlo.compare("LT", x, like(x, 0)), hlo.compare("NE", ax, inf))
    result = hlo.select(hlo.binary("and", finite_negative, hlo.unary("not", integral)), nan, result)
    result = hlo.select(hlo.binary("or", hlo.compare("NE", x, x), hlo.compare("NE", y, y)), nan, result)
    one = hlo.binary("or", hlo.compare("EQ", y, like(y, 0)), hlo.compare("EQ", x, like(x, 1)))
    one = hlo.binary("or", one, hlo.binary("and", hlo.compare("EQ", x, like(x, -1)),
                                           hlo.compare("EQ", hlo.unary("abs", y), inf)))
    return hlo.select(one, like(x, 1), result)


def _sign_bit(x):
    et = hlo.element_type_of(x)
    bits = hlo.bitcast_convert(x, hlo.shape_of(x), np.dtype(f"int{et.width}"))
    return hlo.compare("LT", bits, like(bits, 0))


def _atan2(y, x):
    """C's atan2. IREE 3.13's gives NaN for atan2(+-0, +-0) and atan2(+-inf, +-inf), and +pi where
    y is -0 or negative and the angle is pi; the result's sign is always y's."""
    inf = like(x, np.inf)
    r = hlo.binary("atan2", y, x)
    x_neg = _sign_bit(x)
    both_inf = hlo.binary("and", hlo.compare("EQ", hlo.unary("abs", y), inf), hlo.compare("EQ", hlo.unary("abs", x), inf))
    r = hlo.select(both_inf, hlo.select(x_neg, like(x, 3 * np.pi / 4), like(x, np.pi / 4)), r)
    both_zero = hlo.binary("and", hlo.compare("EQ", y, like(y, 0)), hlo.compare("EQ", x, like(x, 0)))
    r = hlo.select(both_zero, hlo.select(x_neg, like(x, np.pi), like(x, 0)), r)
    magnitude = hlo.unary("abs", r)
    return hlo.select(_sign_bit(y), hlo.unary("negate", magnitude), magnitude)


def _shift(op, a, b):
    """TF clamps the shift to [0, bits - 1] (StableHLO would give 0 past the width); a right
    shift is arithmetic on signed types, logical on unsigned ones."""
    et = hlo.element_type_of(a)
    b = hlo.clamp(like(b, 0), b, like(b, et.width - 1))
    if op == "shift_right":
        op = "shift_right_logical" if et.is_unsigned else "shift_right_arithmetic"
    return hlo.binary(op, a, b)


def _np_shift(fn, a, b):
    return fn(a, np.clip(b, 0, a.dtype.itemsize * 8 - 1).astype(a.dtype))


def _squared_difference(a, b):
    d = hlo.subtract(a, b)
    return hlo.multiply(d, d)


def _np_trunc_div(a, b):
    if dtypes.is_floating(a.dtype):
        return np.trunc(a / b)
    return np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))


def _np_div(a, b):
    return _np_trunc_div(a, b) if dtypes.is_integer(a.dtype) else a / b


def _np_floor_mod(a, b):
    """TF's floor_fmod: fmod, moved by b when it is non-zero and its sign differs from b's."""
    if not dtypes.is_floating(a.dtype):
        return np.mod(a, b)
    with np.errstate(invalid="ignore"):
        r = np.fmod(a, b)
        return np.where((r != 0) & ((b < 0) != (r < 0)), r + b, r)


def _np_floor_div(a, b):
    """floor(a / b) for floats, as TF (np.floor_divide differs: -inf // 2 is NaN there)."""
    if not dtypes.is_floating(a.dtype):
        return np.floor_divide(a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.floor(a / b)


def _np_div_no_nan(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b == 0, np.zeros_like(a), a / np.where(b == 0, np.ones_like(b), b))


BINARY = {
    "Add": ("add", np.add, NUMBER + COMPLEX),
    "AddV2": ("add", np.add, NUMBER + COMPLEX),
    "Sub": ("subtract", np.subtract, NUMBER + COMPLEX),
    "Mul": ("multiply", np.multiply, NUMBER + COMPLEX),
    "RealDiv": ("divide", np.divide, FLOAT + COMPLEX),
    "Div": ("divide", _np_div, NUMBER + COMPLEX),
    "TruncateDiv": ("divide", _np_trunc_div, INT),
    "FloorDiv": (_floor_div, _np_floor_div, NUMBER),
    "FloorMod": (_floor_mod, _np_floor_mod, NUMBER_NO_F64),
    "Mod": ("remainder", np.fmod, NUMBER_NO_F64),
    "TruncateMod": ("remainder", np.fmod, NUMBER_NO_F64),
    "DivNoNan": (_div_no_nan, _np_div_no_nan, FLOAT),
    "MulNoNan": (_mul_no_nan, lambda a, b: np.where(b == 0, np.zeros_like(a), a * b), FLOAT),
    "Xlogy": (_xlogy, lambda a, b: _np_where_x_zero(a, lambda: a * np.log(b)), FLOAT),
    "Xlog1py": (_xlog1py, lambda a, b: _np_where_x_zero(a, lambda: a * np.log1p(b)), FLOAT),
    "Xdivy": (_xdivy, lambda a, b: _np_where_x_zero(a, lambda: a / b), FLOAT),
    "Maximum": ("maximum", np.maximum, NUMBER),
    "Minimum": ("minimum", np.minimum, NUMBER),
    "Pow": (_pow, np.power, SIGNED_NUMBER),
    "Atan2": (_atan2, np.arctan2, FLOAT_NO_F64),
    "SquaredDifference": (_squared_difference, lambda a, b: np.square(a - b), SIGNED_NUMBER),
    "LogicalAnd": ("and", np.logical_and, BOOL),
    "LogicalOr": ("or", np.logical_or, BOOL),
    "BitwiseAnd": ("and", np.bitwise_and, INT),
    "BitwiseOr": ("or", np.bitwise_or, INT),
    "BitwiseXor": ("xor", np.bitwise_xor, INT),
    "LeftShift": (lambda a, b: _shift("shift_left", a, b), lambda a, b: _np_shift(np.left_shift, a, b), INT),
    "RightShift": (lambda a, b: _shift("shift_right", a, b), lambda a, b: _np_shift(np.right_shift, a, b), INT),
}
COMPARISONS = {
    "Equal": ("EQ", np.equal, ANY),
    "NotEqual": ("NE", np.not_equal, ANY),
    "Less": ("LT", np.less, NUMBER),
    "LessEqual": ("LE", np.less_equal, NUMBER),
    "Greater": ("GT", np.greater, NUMBER),
    "GreaterEqual": ("GE", np.greater_equal, NUMBER),
}


def binary_infer(result_dtype=None):
    """The binary rule's infer: equal operand dtypes, NumPy-broadcast shapes."""
    def infer(ctx):
        a, b = ctx.inputs
        if a.dtype != b.dtype:
            raise ctx.error(f"operand dtypes differ: {dtypes.name(a.dtype)} vs {dtypes.name(b.dtype)}")
        return [TensorSpec(result_dtype or a.dtype, broadcast_shapes(ctx, a.shape, b.shape))]
    return infer


def _broadcast_operands(ctx, a, b):
    shape = ctx.out().shape
    return hlo.broadcast_to(a, shape), hlo.broadcast_to(b, shape)


def register_binary(table, result_dtype=None, attrs=("T",)):
    """The binary rule: one entry per table row (TF op -> (lowering, NumPy kernel, dtypes)),
    operands broadcast NumPy-style to the output's shape. Also the activation gradients' rule."""
    for op, (how, np_fn, types) in table.items():
        fn = (lambda a, b, h=how: hlo.binary(h, a, b)) if isinstance(how, str) else how
        register(op, infer=binary_infer(result_dtype), attrs=attrs, dtypes=types,
                 lower=lambda ctx, a, b, f=fn: f(*_broadcast_operands(ctx, a, b)),
                 kernel=lambda ctx, a, b, f=np_fn: np.asarray(f(a, b)).astype(ctx.out().dtype))


register_binary(BINARY)
register_binary({op: ((lambda a, b, d=d: hlo.compare(d, a, b)), f, t) for op, (d, f, t) in COMPARISONS.items()},
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


register("AddN", infer=_addn_infer, attrs=("T", "N"), lower=_addn_lower, dtypes=NUMBER + COMPLEX,
         kernel=lambda ctx, *xs: np.asarray(sum(xs[1:], xs[0])).astype(ctx.out().dtype))


def _clip_infer(ctx):
    t, lo, hi = ctx.inputs
    for bound in (lo, hi):  # TF: a scalar, or t's shape
        if bound.shape not in (None, ()) and t.shape is not None and broadcast_shapes(ctx, t.shape, bound.shape) != t.shape:
            raise ctx.error(f"clip bound {bound} must be a scalar or have the shape of {t}")
    return [TensorSpec(t.dtype, t.shape)]


def _clip_lower(ctx, t, lo, hi):
    shape = ctx.out().shape
    return hlo.clamp(hlo.broadcast_to(lo, shape), t, hlo.broadcast_to(hi, shape))


register("ClipByValue", infer=_clip_infer, attrs=("T",), lower=_clip_lower, dtypes=NUMBER,
         kernel=lambda ctx, t, lo, hi: np.minimum(np.maximum(t, lo), hi).astype(ctx.out().dtype))


def _cast_infer(ctx):
    return [TensorSpec(ctx.attr("DstT"), ctx.inputs[0].shape)]


def _cast_lower(ctx, x):
    dst = ctx.out().dtype
    if dst == ctx.inputs[0].dtype:
        return x
    if dst == np.bool_:
        return hlo.compare("NE", x, like(x, 0))
    if dtypes.name(dst) == "bfloat16" and not dtypes.is_floating(ctx.inputs[0].dtype):
        return _int_to_bfloat16(x)
    if lowering_backend() == "xla" and dtypes.is_floating(ctx.inputs[0].dtype) and \
            np.dtype(dst) in (np.dtype(np.int32), np.dtype(np.int64)):
        return _float_to_int_as_x86(x, np.dtype(dst))
    return hlo.convert(x, dst)


def _float_to_int_as_x86(x, dst: np.dtype):
    """Float -> int32/int64 as TensorFlow's CPU kernel (static_cast, x86's cvtt) and IREE give
    it: INT_MIN for NaN and for values out of range. XLA's convert gives 0 for NaN and
    saturates, so the XLA backend (ops/backend_style.py) selects INT_MIN itself."""
    low = float(np.iinfo(dst).min)  # -2^31 or -2^63: exact in every float type
    out = hlo.convert(x, dst)
    bad = hlo.binary("or", hlo.compare("NE", x, x),
                     hlo.binary("or", hlo.compare("GE", x, like(x, -low)), hlo.compare("LT", x, like(x, low))))
    return hlo.select(bad, like(out, np.iinfo(dst).min), out)


def _int_to_bfloat16(x):
    """Through float32, as Eigen's bfloat16(int) does, rounding to nearest even by hand: IREE
    folds int -> f32 -> bf16 into one conversion that llvm-cpu cannot link (__truncsfbf2)."""
    bits = hlo.bitcast_convert(hlo.convert(x, np.float32), hlo.shape_of(x), np.int32)
    lsb = hlo.binary("and", hlo.binary("shift_right_logical", bits, like(bits, 16)), like(bits, 1))
    rounded = hlo.add(bits, hlo.add(lsb, like(bits, 0x7FFF)))
    high = hlo.convert(hlo.binary("shift_right_logical", rounded, like(bits, 16)), np.int16)
    return hlo.bitcast_convert(high, hlo.shape_of(x), ml_dtypes.bfloat16)


def _cast_kernel(ctx, x):
    dst = ctx.out().dtype
    if dst == np.bool_:
        return x != 0
    if x.dtype.kind == "c" and dst.kind != "c":  # TF keeps the real part
        x = x.real
    if dtypes.name(dst) == "bfloat16" and not dtypes.is_floating(x.dtype):
        x = x.astype(np.float32)
    return x.astype(dst)


register("Cast", infer=_cast_infer, attrs=("SrcT", "DstT", "Truncate"), lower=_cast_lower,
         kernel=_cast_kernel)


# Bitcast: the same bytes read as another type. A narrower type adds a last dimension of
# size(T) / size(type); a wider one needs that dimension and drops it (little-endian, as
# TensorFlow's CPU kernels and IREE's llvm-cpu lay out memory).


def _bitcast_infer(ctx):
    x, dst = ctx.inputs[0], np.dtype(ctx.attr("type"))
    src = np.dtype(x.dtype)
    if x.shape is None or src.itemsize == dst.itemsize:
        return [TensorSpec(dst, x.shape)]
    if src.itemsize > dst.itemsize:
        return [TensorSpec(dst, x.shape + (src.itemsize // dst.itemsize,))]
    ratio = dst.itemsize // src.itemsize
    if not x.shape or x.shape[-1] not in (ratio, None):
        raise ctx.error(f"cannot bitcast {x} to {dtypes.name(dst)}: the last dimension must be {ratio}")
    return [TensorSpec(dst, x.shape[:-1])]


def _bitcast_kernel(ctx, x):
    return np.ascontiguousarray(x).reshape(-1).view(ctx.out().dtype).reshape(ctx.out().shape)


register("Bitcast", infer=_bitcast_infer, attrs=("T", "type"), dtypes=NUMBER, dtype_attrs=("T", "type"),
         lower=lambda ctx, x: hlo.bitcast_convert(x, ctx.out().shape, ctx.out().dtype), kernel=_bitcast_kernel)


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
