"""NumPy reference kernels of TensorFlow's special functions, in float64, without SciPy.

SciPy is not a dependency of hlobridge, so the few functions TF has beyond NumPy are written
here from the classic algorithms TensorFlow's CPU kernels (Eigen, after Cephes) use: series
and continued fractions, recurrences and asymptotic expansions. They run per element in
Python (the kernels are the reference and the fallback, not the fast path) and are accurate to
about 1e-13 relative in float64, far inside float32 and the float64 tolerances of the tests.
Domain edges follow Eigen (checked against TensorFlow's recorded outputs in
tests/data/linalg_references.npz): NaN outside the domain, inf at poles.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

_EPS = np.finfo(np.float64).eps


def elementwise(fn):
    """fn on Python floats -> a float64 NumPy function of broadcast arrays."""
    vectorized = np.vectorize(fn, otypes=[np.float64])

    def apply(*arrays):
        arrays = np.broadcast_arrays(*[np.asarray(a, np.float64) for a in arrays])
        return vectorized(*arrays) if arrays[0].size else np.zeros(arrays[0].shape)
    apply.__name__ = fn.__name__
    apply.__doc__ = fn.__doc__
    return apply


def _is_nonpositive_integer(x: float) -> bool:
    return x <= 0 and x == math.floor(x)


@elementwise
def lgamma(x: float) -> float:
    """log|Gamma(x)|; +inf at the poles (0, -1, -2, ...) and at +-inf."""
    if math.isinf(x) or (not math.isnan(x) and _is_nonpositive_integer(x)):
        return math.inf
    return math.lgamma(x)


def _digamma(x: float) -> float:
    if math.isnan(x) or x == -math.inf:
        return math.nan
    if x == math.inf:
        return math.inf
    if _is_nonpositive_integer(x):
        return math.nan  # Eigen: NaN at the poles (the limits from both sides differ)
    if x < 0:  # reflection: psi(x) = psi(1 - x) - pi / tan(pi x)
        return _digamma(1 - x) - math.pi / math.tan(math.pi * x)
    shift = 0.0
    while x < 10:
        shift -= 1 / x
        x += 1
    z = 1 / (x * x)
    series = z * (1 / 12 - z * (1 / 120 - z * (1 / 252 - z * (1 / 240 - z * (1 / 132 - z * (691 / 32760 - z / 12))))))
    return shift + math.log(x) - 0.5 / x - series


digamma = elementwise(_digamma)


def _erfc_inverse(q: float) -> float:
    """t with erfc(t) = q, for 0 < q <= 1 (t >= 0): Giles's starting point, then Newton on erfc,
    whose relative accuracy in the tail keeps tiny q exact."""
    w = -math.log(q * (2 - q))
    if w < 5:
        w -= 2.5
        p = 2.81022636e-08
        for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                  -0.00417768164, 0.246640727, 1.50140941):
            p = c + p * w
    else:
        w = math.sqrt(w) - 3
        p = -0.000200214257
        for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                  0.00943887047, 1.00167406, 2.83297682):
            p = c + p * w
    # Giles: erfinv(y) ~ p(w) * y; the Newton steps stay below sqrt(-log q)
    top = math.sqrt(-math.log(q))  # erfc(t) < exp(-t^2): the root lies below
    t = min(max(p * (1 - q), 0.0), top)
    for _ in range(100):  # Newton on log erfc, whose slope (about -2t) stays tame in the tail
        e = math.erfc(t)
        if e == 0:
            break
        step = (math.log(e) - math.log(q)) / (-2 / math.sqrt(math.pi) * math.exp(-t * t) / e)
        t = min(max(t - step, 0.0), top)
        if abs(step) <= 4 * _EPS * max(t, 1e-300):
            break
    return t


@elementwise
def erfinv(y: float) -> float:
    """The inverse of erf on [-1, 1]: +-inf at +-1, NaN outside."""
    if math.isnan(y) or abs(y) > 1:
        return math.nan
    if abs(y) == 1:
        return math.copysign(math.inf, y)
    if abs(y) < 0.5:  # Newton on erf itself, which keeps tiny y exact
        t = y * math.sqrt(math.pi) / 2
        for _ in range(50):
            step = (math.erf(t) - y) / (2 / math.sqrt(math.pi) * math.exp(-t * t))
            t -= step
            if abs(step) <= 4 * _EPS * abs(t):
                break
        return t
    return math.copysign(_erfc_inverse(1 - abs(y)), y)


@elementwise
def ndtri(p: float) -> float:
    """The inverse of the standard normal CDF: -inf at 0, +inf at 1, NaN outside [0, 1]."""
    if math.isnan(p) or p < 0 or p > 1:
        return math.nan
    if p == 0:
        return -math.inf
    if p == 1:
        return math.inf
    if p == 0.5:
        return 0.0
    t = _erfc_inverse(2 * min(p, 1 - p))  # Phi(x) = erfc(-x / sqrt 2) / 2
    return -math.sqrt(2) * t if p < 0.5 else math.sqrt(2) * t


# -- incomplete gamma and beta functions (Numerical Recipes' series and continued fractions) ------------


def _gamma_series(a: float, x: float) -> float:
    """P(a, x) by its series, for x < a + 1."""
    term = total = 1 / a
    ap = a
    for _ in range(10000):
        ap += 1
        term *= x / ap
        total += term
        if abs(term) < abs(total) * _EPS:
            break
    return total * math.exp(-x + a * math.log(x) - math.lgamma(a))


def _gamma_fraction(a: float, x: float) -> float:
    """Q(a, x) by its continued fraction (modified Lentz), for x >= a + 1."""
    tiny = 1e-300
    b = x + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    for i in range(1, 10000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < _EPS:
            break
    return math.exp(-x + a * math.log(x) - math.lgamma(a)) * h


def _igamma_edges(a: float, x: float, lower: bool = True):
    """P(a, x) where the domain's edges decide it, else None. Eigen: P(a, 0) = 0 for any a, but Q
    is NaN wherever a <= 0 or x < 0."""
    if lower and x == 0:
        return 0.0
    if math.isnan(a) or math.isnan(x) or x < 0 or a <= 0:
        return math.nan
    if x == 0:
        return 0.0
    if math.isinf(a):  # (before x: P(inf, inf) is 0 in Eigen)
        return 0.0
    if math.isinf(x):
        return 1.0
    return None


def _igamma(a: float, x: float) -> float:
    edge = _igamma_edges(a, x)
    if edge is not None:
        return edge
    return _gamma_series(a, x) if x < a + 1 else 1 - _gamma_fraction(a, x)


def _igammac(a: float, x: float) -> float:
    if x == math.inf and a > 0:  # Eigen: Q(a, inf) = 0 even for a = inf, where P(inf, inf) is 0 too
        return 0.0
    edge = _igamma_edges(a, x, lower=False)
    if edge is not None:
        return edge if math.isnan(edge) else 1 - edge
    return 1 - _gamma_series(a, x) if x < a + 1 else _gamma_fraction(a, x)


igamma = elementwise(_igamma)
igammac = elementwise(_igammac)


def _igamma_grad_a(a: float, x: float) -> float:
    """d/da P(a, x), by Richardson-extrapolated central differences of the float64 P, or of -Q
    where P is near 1 (x >= a + 1), so that a tiny derivative keeps its digits."""
    edge = _igamma_edges(a, x)
    if edge is not None:
        return edge if math.isnan(edge) else (-0.0 if math.isinf(x) else 0.0)  # (TF's signs of zero)
    h = 1e-3 * min(a, 1.0)
    fn, sign = (_igammac, -1.0) if x >= a + 1 else (_igamma, 1.0)

    def central(step):
        return (fn(a + step, x) - fn(a - step, x)) / (2 * step)
    return sign * (4 * central(h / 2) - central(h)) / 3


igamma_grad_a = elementwise(_igamma_grad_a)


def _beta_fraction(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (tiny if abs(d) < tiny else d)
    h = d
    for m in range(1, 10000):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1 + aa * d
            d = 1 / (tiny if abs(d) < tiny else d)
            c = 1 + aa / c
            c = tiny if abs(c) < tiny else c
            delta = d * c
            h *= delta
        if abs(delta - 1) < _EPS:
            break
    return h


@elementwise
def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b); NaN for a, b <= 0 or x outside [0, 1]."""
    if math.isnan(a) or math.isnan(b) or math.isnan(x) or a <= 0 or b <= 0 or x < 0 or x > 1:
        return math.nan
    if x == 0 or x == 1:
        return x
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(a, b, x) / a
    return 1 - front * _beta_fraction(b, a, 1 - x) / b


# -- Hurwitz zeta and polygamma (Cephes's Euler-Maclaurin summation) ------------------------------------


def _bernoulli(n: int) -> list[Fraction]:
    """B_0 .. B_n (B_1 = -1/2)."""
    b = [Fraction(0)] * (n + 1)
    for m in range(n + 1):
        b[m] = Fraction(1) if m == 0 else -sum(math.comb(m + 1, k) * b[k] for k in range(m)) / (m + 1)
    return b


# (2k)! / B_2k for k = 1 .. 12: Cephes's zeta.c table A, derived rather than typed in.
_ZETA_A = [float(Fraction(math.factorial(2 * k)) / b) for k, b in
           ((k, _bernoulli(24)[2 * k]) for k in range(1, 13))]


def _zeta(x: float, q: float) -> float:
    if math.isnan(x) or math.isnan(q):
        return math.nan
    if x == 1:
        return math.inf
    if x < 1:
        return math.nan
    if q == math.inf:
        return 0.0
    if q <= 0:
        if q == math.floor(q):  # a pole: Eigen gives inf for an even integer x, NaN otherwise
            return math.inf if x == math.floor(x) and x % 2 == 0 else math.nan
        if x != math.floor(x):
            return math.nan  # q^-x is complex
    s = q ** -x
    a, i, b = q, 0, 0.0
    while i < 9 or a <= 9:
        i += 1
        a += 1
        b = a ** -x
        s += b
        if s and abs(b / s) < _EPS:
            return s
    w = a
    s += b * w / (x - 1) - 0.5 * b
    a, k = 1.0, 0.0
    for coefficient in _ZETA_A:
        a *= x + k
        b /= w
        t = a * b / coefficient
        s += t
        if s and abs(t / s) < _EPS:
            break
        k += 1
        a *= x + k
        b /= w
        k += 1
    return s


zeta = elementwise(_zeta)


@elementwise
def polygamma(n: float, x: float) -> float:
    """psi^(n)(x) = (-1)^(n+1) n! zeta(n + 1, x); NaN unless n is a non-negative integer."""
    if math.isnan(n) or math.isnan(x) or n < 0 or n != math.floor(n):
        return math.nan
    if n == 0:
        return _digamma(x)
    return (-1) ** (n + 1) * math.gamma(n + 1) * _zeta(n + 1, x)
