"""Special math functions (tf.math.lgamma, digamma, erfinv, ndtri, bessel_i0e/i1e, igamma, igammac,
betainc, polygamma, zeta, nextafter), ApproximateEqual, the bit counts Invert and PopulationCount,
and CumulativeLogsumexp.

A table row is TF op -> (lowering over Values, float64 NumPy kernel, dtypes it compiles for);
the kernels are in special_kernels.py. What IREE 3.13 does with them (measured, see
docs/linalg.md):
- chlo.lgamma, digamma, erf_inv, zeta and next_after, built as generic ops, are decomposed by
  IREE's input pipeline (as XLA decomposes them for TF); lgamma and digamma need libm's sin in
  float64 (their reflection), which llvm-cpu does not link, so they (and what uses them)
  compile for float32 and narrower only (float64 runs on the kernel). Where chlo differs from
  TF's CPU kernel (digamma's poles, zeta for q < 0) a select or a shift corrects it;
- Polygamma is (-1)^(n+1) n! zeta(n + 1, x), Digamma for n = 0;
- Ndtri is sqrt(2) * erfinv(2p - 1) as tf2xla writes it, with Giles's float32 erfinv fed
  w = -log(4p(1 - p)) straight from p, and the tails (p < 1e-5) solved by Newton steps;
- BesselI0e has no chlo op (chlo has bessel_i1e only), so `bessel_ie` writes both
  once, on `Traced` values: the power series below |x| = 30, the asymptotic series above; the
  same rule is the float64 kernel;
- Igamma and Igammac: XLA's series and continued fraction, in a masked while loop
  (incomplete.py); float32 and narrower, as they need chlo.lgamma;
- IgammaGradA: both algorithms carried forward-mode in a, as XLA's, and RandomGammaGrad
  (-dP/da over the pdf, the pdf's factor cancelled); Betainc: the continued fraction in the
  same loop; float32 (lgamma and digamma again).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ... import dtypes
from ...spec import TensorSpec
from . import special_kernels as sk
from .elementwise import _polynomial, binary_infer, register_binary  # (Horner, ascending coefficients)
from ..helpers import broadcast_shapes, ints, normalize_axis, same_as_input
from .incomplete import betainc, igamma_grad_a, incomplete_gamma, random_gamma_grad
from ..random.gamma_grad import gamma_sample_der_alpha
from ..registry import register
from ..traced import Traced
from ..typesets import FLOAT, FLOAT_NO_F64, INT

F32_F64 = ("float32", "float64")


def _float64_kernel(fn):
    """A float64 NumPy function as a kernel: inputs widened, the result cast to the output dtype."""
    def kernel(ctx, *arrays):
        with np.errstate(all="ignore"):
            return np.asarray(fn(*[np.asarray(a, np.float64) for a in arrays])).astype(ctx.out().dtype)
    return kernel


def _in_f32(fn):
    """fn over Values, computed in float32 for float16 and bfloat16 (as XLA upcasts them)."""
    def lower(*xs):
        et = hlo.element_type_of(xs[0])
        if str(et) in ("f32", "f64"):
            return fn(*xs)
        narrow = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}[str(et)]
        return hlo.convert(fn(*[hlo.convert(x, np.float32) for x in xs]), narrow)
    return lower


def _chlo(name):
    """chlo.<name> of one or two operands, in float32 for the narrow types."""
    def build(*xs):
        return hlo.chlo_unary(name, *xs) if len(xs) == 1 else hlo.chlo_binary(name, *xs)
    return _in_f32(build)


# Giles's single-precision erfinv(y) = y * P(w), w = -log((1 - y)(1 + y)), in two ranges of w.
_GILES_SMALL = (1.50140941, 0.246640727, -0.00417768164, -0.00125372503, 0.00021858087, -4.39150654e-06,
                -3.5233877e-06, 3.43273939e-07, 2.81022636e-08)            # w < 5, in w - 2.5
_GILES_LARGE = (2.83297682, 1.00167406, 0.00943887047, -0.0076224613, 0.00573950773, -0.00367342844,
                0.00134934322, 0.000100950558, -0.000200214257)           # in sqrt(w) - 3


def _ndtri_middle(p):
    """sqrt(2) * erfinv(2p - 1), as tf2xla writes Ndtri, but in float32 with Giles's w taken
    from p itself, w = -log(2p) - log(2 - 2p): erfinv's own 1 - y^2 would cancel away the
    digits (ndtri(1e-6) would be off by 6e-4). float64 uses chlo.erf_inv."""
    two, one = hlo.scalar_like(2, p), hlo.scalar_like(1, p)
    y = hlo.subtract(hlo.multiply(two, p), one)
    if str(hlo.element_type_of(p)) == "f64":
        return hlo.multiply(hlo.scalar_like(np.sqrt(2), p), hlo.chlo_unary("erf_inv", y))
    w = hlo.unary("negate", hlo.add(hlo.unary("log", hlo.multiply(two, p)),
                                    hlo.unary("log", hlo.subtract(two, hlo.multiply(two, p)))))
    small = _polynomial(hlo.subtract(w, hlo.scalar_like(2.5, w)), _GILES_SMALL)
    large = _polynomial(hlo.subtract(hlo.unary("sqrt", w), hlo.scalar_like(3, w)), _GILES_LARGE)
    poly = hlo.select(hlo.compare("LT", w, hlo.scalar_like(5, w)), small, large)
    inf = hlo.scalar_like(np.inf, w)
    poly = hlo.select(hlo.compare("EQ", w, inf), inf, poly)  # p = 0 or 1: the polynomial is inf - inf there
    return hlo.multiply(hlo.multiply(hlo.scalar_like(np.sqrt(2), p), poly), y)


_NDTRI_TAIL = 1e-5   # below (and above 1 - this): the tail solver
# Abramowitz & Stegun 26.2.23 (error < 4.5e-4): the tail's starting point.
_AS_NUMERATOR, _AS_DENOMINATOR = (2.515517, 0.802853, 0.010328), (1.0, 1.432788, 0.189269, 0.001308)


def _ndtri_tail(q):
    """ndtri(q) for small q > 0: A&S 26.2.23, then three Newton steps on log Phi(x) = log q
    (Phi(x) = erfc(-x / sqrt 2) / 2 keeps its relative accuracy down there), whose error goes
    4.5e-4 -> 1e-7 -> 1e-14."""
    t = hlo.unary("sqrt", hlo.multiply(hlo.scalar_like(-2, q), hlo.unary("log", q)))
    x = hlo.unary("negate", hlo.subtract(t, hlo.divide(_polynomial(t, _AS_NUMERATOR), _polynomial(t, _AS_DENOMINATOR))))
    log_q = hlo.unary("log", q)
    for _ in range(3):
        cdf = hlo.multiply(hlo.scalar_like(0.5, x),
                           hlo.chlo_unary("erfc", hlo.multiply(x, hlo.scalar_like(-1 / np.sqrt(2), x))))
        pdf = hlo.multiply(hlo.scalar_like(1 / np.sqrt(2 * np.pi), x),
                           hlo.unary("exponential", hlo.multiply(hlo.scalar_like(-0.5, x), hlo.multiply(x, x))))
        x = hlo.subtract(x, hlo.multiply(hlo.subtract(hlo.unary("log", cdf), log_q), hlo.divide(cdf, pdf)))
    return x


def _ndtri(p):
    """The middle from erfinv, the tails (p or 1 - p below 1e-5, 0 and 1 excluded) solved."""
    q = hlo.minimum(p, hlo.subtract(hlo.scalar_like(1, p), p))
    in_tail = hlo.binary("and", hlo.compare("LT", q, hlo.scalar_like(_NDTRI_TAIL, q)),
                         hlo.compare("GT", q, hlo.scalar_like(0, q)))
    safe_q = hlo.select(in_tail, q, hlo.scalar_like(_NDTRI_TAIL, q))
    tail = _ndtri_tail(safe_q)
    tail = hlo.select(hlo.compare("LT", p, hlo.scalar_like(0.5, p)), tail, hlo.unary("negate", tail))
    return hlo.select(in_tail, tail, _ndtri_middle(p))


def _digamma(x):
    """chlo.digamma, NaN at the poles 0, -1, -2, ... as TF's (chlo gives -inf at 0)."""
    pole = hlo.binary("and", hlo.compare("LE", x, hlo.scalar_like(0, x)),
                      hlo.compare("EQ", hlo.unary("floor", x), x))
    return hlo.select(pole, hlo.scalar_like(np.nan, x), hlo.chlo_unary("digamma", x))


# -- Bessel I0e, I1e: one rule, on Traced values (lowering) or float64 arrays (kernel) ----------------

_BESSEL_SWITCH = 30.0   # below: the power series (45 terms); above: the asymptotic series (20 terms)


def _where(cond, a, b):
    if isinstance(cond, Traced):
        return Traced(hlo.select(cond.value, a.value, b.value), a.dtype)
    return np.where(cond, a, b)


def _less(a, value):
    if isinstance(a, Traced):
        return Traced(hlo.compare("LT", a.value, hlo.scalar_like(value, a.value)), np.bool_)
    return a < value


def bessel_ie(x, order: int):
    """exp(-|x|) I_order(x) for order 0 or 1 (I1 is odd, I0 even)."""
    ax = np.abs(x)
    z = ax * ax * 0.25
    series = 1.0
    for k in range(45, 0, -1):  # sum_k (x^2/4)^k / (k! (k + order)!), nested so no term underflows
        series = series * z / float(k * (k + order)) + 1.0
    if order:
        series = series * ax * 0.5
    small = series * np.exp(-ax)
    mu = 4.0 * order * order
    tail = 1.0
    for k in range(20, 0, -1):  # Hankel: sum_k prod_j (-(mu - (2j - 1)^2) / (8j)) / x^k
        tail = tail * (-(mu - (2 * k - 1) ** 2) / (8.0 * k)) / ax + 1.0
    large = tail / np.sqrt(ax * (2 * np.pi))
    result = _where(_less(ax, _BESSEL_SWITCH), small, large)
    return _where(_less(x, 0.0), -result, result) if order else result


def _bessel_lower(order):
    return _in_f32(lambda x: bessel_ie(Traced(x, _dtype_of(x)), order).value)


def _dtype_of(v):
    return {"f32": np.float32, "f64": np.float64}[str(hlo.element_type_of(v))]


# -- the unary table --------------------------------------------------------------------------------

UNARY = {
    "Lgamma": (_chlo("lgamma"), sk.lgamma, FLOAT_NO_F64),
    "Digamma": (_in_f32(_digamma), sk.digamma, FLOAT_NO_F64),
    "Erfinv": (_chlo("erf_inv"), sk.erfinv, FLOAT),
    "Ndtri": (_in_f32(_ndtri), sk.ndtri, FLOAT),
    "BesselI0e": (_bessel_lower(0), lambda x: bessel_ie(x, 0), FLOAT),
    "BesselI1e": (_bessel_lower(1), lambda x: bessel_ie(x, 1), FLOAT),
}

for _op, (_lower, _np_fn, _types) in UNARY.items():
    register(_op, infer=same_as_input, attrs=("T",), dtypes=_types,
             lower=lambda ctx, x, f=_lower: f(x), kernel=_float64_kernel(_np_fn))


# -- binary and ternary ---------------------------------------------------------------------------------

_ZETA_SHIFTS = 64


def _zeta(x, q):
    """chlo.zeta, which is NaN for every q < 0; TF's CPU kernel (Cephes) sums the series there for
    an integer x. Here q in (-64, 0) is shifted up by m = ceil(-q):
    zeta(x, q) = zeta(x, q + m) + sum_{i < m} (q + i)^-x, a term's sign that of (q + i) for odd x."""
    zero = hlo.scalar_like(0, q)
    negative = hlo.binary("and", hlo.compare("LT", q, zero), hlo.compare("NE", hlo.unary("floor", q), q))
    m = hlo.clamp(zero, hlo.unary("ceil", hlo.unary("negate", q)), hlo.scalar_like(_ZETA_SHIFTS, q))
    shifted = hlo.select(negative, hlo.add(q, m), q)
    half = hlo.multiply(x, hlo.scalar_like(0.5, x))
    odd = hlo.compare("NE", hlo.unary("floor", half), half)
    total = hlo.chlo_binary("zeta", x, shifted)
    minus_x = hlo.unary("negate", x)
    for i in range(_ZETA_SHIFTS):
        base = hlo.add(q, hlo.scalar_like(i, q))
        term = hlo.binary("power", hlo.unary("abs", base), minus_x)
        term = hlo.select(hlo.binary("and", odd, hlo.compare("LT", base, zero)), hlo.unary("negate", term), term)
        use = hlo.binary("and", negative, hlo.compare("LT", hlo.scalar_like(i, q), m))
        total = hlo.add(total, hlo.select(use, term, zero))
    integral = hlo.compare("EQ", hlo.unary("floor", x), x)
    total = hlo.select(hlo.binary("and", negative, hlo.unary("not", integral)), hlo.scalar_like(np.nan, q), total)
    total = hlo.select(hlo.binary("and", hlo.compare("EQ", q, hlo.scalar_like(np.inf, q)),
                                  hlo.compare("GT", x, hlo.scalar_like(1, x))), zero, total)  # (as TF's)
    return total


def _polygamma(n, x):
    """psi^(n)(x) = (-1)^(n+1) n! zeta(n + 1, x) with _zeta (chlo.polygamma is NaN for x < 0,
    TF is not), Digamma for n = 0 (chlo gives -inf at the pole 0, TF NaN), NaN unless n is a
    non-negative integer."""
    zero, one = hlo.scalar_like(0, n), hlo.scalar_like(1, n)
    n1 = hlo.add(n, one)
    half = hlo.multiply(n, hlo.scalar_like(0.5, n))
    sign = hlo.select(hlo.compare("EQ", hlo.unary("floor", half), half), hlo.unary("negate", one), one)
    value = hlo.multiply(hlo.multiply(sign, hlo.unary("exponential", hlo.chlo_unary("lgamma", n1))), _zeta(n1, x))
    valid = hlo.binary("and", hlo.compare("GE", n, zero), hlo.compare("EQ", hlo.unary("floor", n), n))
    value = hlo.select(valid, value, hlo.scalar_like(np.nan, n))
    return hlo.select(hlo.compare("EQ", n, zero), _digamma(x), value)


BINARY = {
    "Igamma": (_in_f32(lambda a, x: incomplete_gamma(a, x, upper=False)), sk.igamma, FLOAT_NO_F64),
    "Igammac": (_in_f32(lambda a, x: incomplete_gamma(a, x, upper=True)), sk.igammac, FLOAT_NO_F64),
    "IgammaGradA": (_in_f32(igamma_grad_a), sk.igamma_grad_a, ("float32",)),
    # (the kernel is TF's recurrences in the element type: random/gamma_grad.py)
    "RandomGammaGrad": (_in_f32(random_gamma_grad), gamma_sample_der_alpha, ("float32",)),
    "Polygamma": (_in_f32(_polygamma), sk.polygamma, ("float32",)),
    "Zeta": (_in_f32(_zeta), sk.zeta, F32_F64),
    "NextAfter": (_chlo("next_after"), np.nextafter, F32_F64),  # (in the operands' own type)
}
register_binary(BINARY)  # (the kernels widen to float64; the rule casts back)


def _nary_infer(ctx):
    first = ctx.inputs[0]
    if any(s.dtype != first.dtype for s in ctx.inputs):
        raise ctx.error("operand dtypes differ: " + " vs ".join(dtypes.name(s.dtype) for s in ctx.inputs))
    return [TensorSpec(first.dtype, broadcast_shapes(ctx, *[s.shape for s in ctx.inputs]))]


def _betainc_lower(ctx, a, b, x):
    shape = ctx.out().shape
    return _in_f32(betainc)(*(hlo.broadcast_to(v, shape) for v in (a, b, x)))


register("Betainc", infer=_nary_infer, attrs=("T",), dtypes=("float32",), lower=_betainc_lower,
         kernel=_float64_kernel(sk.betainc))


# -- ApproximateEqual, Invert, PopulationCount ------------------------------------------------------------


def _approximate_equal_infer(ctx):
    x, y = ctx.inputs
    if x.shape is not None and y.shape is not None and (
            len(x.shape) != len(y.shape) or any(a != b for a, b in zip(x.shape, y.shape) if None not in (a, b))):
        raise ctx.error(f"x and y must have the same shape, got {x} and {y}")  # (TF does not broadcast)
    return binary_infer(np.dtype(np.bool_))(ctx)


def _tolerance(ctx, dtype):
    """TF compares |x - y| < T(tolerance): the tolerance in the operands' type (0 for integers)."""
    return np.asarray(ctx.attr("tolerance", 1e-5)).astype(dtype)


def _approximate_equal_lower(ctx, x, y):
    d = hlo.unary("abs", hlo.subtract(x, y))
    return hlo.compare("LT", d, hlo.constant(np.broadcast_to(_tolerance(ctx, ctx.inputs[0].dtype), hlo.shape_of(d))))


def _approximate_equal_kernel(ctx, x, y):
    with np.errstate(all="ignore"):
        return np.abs(x - y) < _tolerance(ctx, x.dtype)


register("ApproximateEqual", infer=_approximate_equal_infer, attrs=("T", "tolerance"),
         dtypes=FLOAT + INT, lower=_approximate_equal_lower, kernel=_approximate_equal_kernel)

register("Invert", infer=same_as_input, attrs=("T",), dtypes=INT,
         lower=lambda ctx, x: hlo.unary("not", x), kernel=lambda ctx, x: np.invert(x))


def _popcount_lower(ctx, x):
    dtype = np.dtype(ctx.inputs[0].dtype)
    if dtypes.is_unsigned(dtype):  # popcnt counts bits: the signed type of the width has the same ones
        x = hlo.bitcast_convert(x, hlo.shape_of(x), np.dtype(f"int{8 * dtype.itemsize}"))
    return hlo.convert(hlo.unary("popcnt", x), np.uint8)


def _popcount_kernel(ctx, x):
    as_bytes = np.ascontiguousarray(x).view(np.uint8).reshape(*x.shape, x.dtype.itemsize)
    return np.unpackbits(as_bytes, axis=-1).sum(axis=-1, dtype=np.uint8)


register("PopulationCount", infer=lambda ctx: [TensorSpec(np.dtype(np.uint8), ctx.inputs[0].shape)],
         attrs=("T",), dtypes=INT, lower=_popcount_lower, kernel=_popcount_kernel)


# -- CumulativeLogsumexp: a log-space scan ---------------------------------------------------------------
# log(sum_{j <= i} exp(x_j)) along the axis (exclusive: j < i, reverse: j >= i; the empty sum is
# -inf). Lowered as a Hillis-Steele scan: ceil(log2 n) steps of y = logaddexp(y, y shifted by
# 2^s), the shift bringing in -inf, so no exp ever overflows or underflows the way exp-cumsum-log would.
# float64 runs on the kernel: IREE 3.13 fails on the float64 scan of two or more steps ("'stream.yield'
# op used resource not listed in explicit captures").


def _logaddexp(a, b):
    m = hlo.maximum(a, b)
    r = hlo.add(m, hlo.unary("log_plus_one", hlo.unary("exponential",
                                                       hlo.unary("negate", hlo.unary("abs", hlo.subtract(a, b))))))
    infinite = hlo.compare("EQ", hlo.unary("abs", m), hlo.scalar_like(np.inf, m))
    return hlo.select(infinite, m, r)


def _shift(y, axis, by, reverse):
    """y moved `by` places along `axis` (toward the end; reverse: toward the start), -inf coming in."""
    shape = hlo.shape_of(y)
    n = shape[axis]
    start, limit = [0] * len(shape), list(shape)
    lo, hi = [0] * len(shape), [0] * len(shape)
    if reverse:
        start[axis], hi[axis] = by, by
    else:
        limit[axis], lo[axis] = n - by, by
    minus_inf = hlo.constant(np.array(-np.inf, _dtype_of(y)))
    return hlo.pad(hlo.slice(y, start, limit), minus_inf, lo, hi)


def _cumulative_logsumexp_lower(ctx, x, _axis):
    def scan(y):
        shape = hlo.shape_of(y)
        axis = normalize_axis(ctx, ints(ctx.const(1))[0], len(shape))
        n, reverse = shape[axis], ctx.attr("reverse", False)
        if n == 0:
            return y
        if ctx.attr("exclusive", False):
            y = _shift(y, axis, 1, reverse)
        by = 1
        while by < n:
            y = _logaddexp(y, _shift(y, axis, by, reverse))
            by *= 2
        return y
    return _in_f32(scan)(x)


def _cumulative_logsumexp_kernel(ctx, x, axis):
    axis = normalize_axis(ctx, ints(axis)[0], x.ndim)
    y = np.asarray(x, np.float64)
    reverse, exclusive = ctx.attr("reverse", False), ctx.attr("exclusive", False)
    if reverse:
        y = np.flip(y, axis)
    if exclusive and y.shape[axis]:
        y = np.concatenate([np.full_like(np.take(y, [0], axis), -np.inf), np.delete(y, -1, axis)], axis)
    with np.errstate(all="ignore"):
        y = np.logaddexp.accumulate(y, axis=axis) if y.size else y
    if reverse:
        y = np.flip(y, axis)
    return y.astype(ctx.out().dtype)


register("CumulativeLogsumexp", infer=same_as_input, attrs=("T", "Tidx", "exclusive", "reverse"),
         const_inputs=(1,), dtypes=FLOAT_NO_F64, lower=_cumulative_logsumexp_lower, kernel=_cumulative_logsumexp_kernel)
