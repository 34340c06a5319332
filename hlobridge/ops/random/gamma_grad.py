"""RandomGammaGrad: d sample / d alpha of Gamma(alpha, 1) samples, as TF's CPU kernel computes it.

TF's kernel (cwise_op_random_grad.cc) is Eigen's `gamma_sample_der_alpha`
(unsupported/Eigen/src/SpecialFunctions/SpecialFunctionsImpl.h): implicit differentiation of
igamma(alpha, sample) = u, with d igamma / d alpha by forward-mode differentiation of Cephes'
power series (x <= 1 or x <= alpha) or continued fraction (otherwise), iterated in the
element type to convergence (at most 200 steps for float, 500 for double). This kernel runs
the same recurrences, vectorised over elements (each stops where Eigen's loop breaks), in
the same type. Logs and digamma are evaluated in float64 and rounded, so float32 results may
differ from TF's by float32 rounding noise (TF's own error against mpmath is ~6e-7).
This is the op's kernel; its float32 lowering is math/special.py's (a While loop per element,
as XLA's igamma derivative).
"""

from __future__ import annotations

import numpy as np



def _digamma(x: np.ndarray) -> np.ndarray:
    """psi(x) for x > 0 in float64: recurrence up to 10, then the asymptotic series."""
    x = x.astype(np.float64)
    shift = np.zeros_like(x)
    for _ in range(10):
        small = x < 10
        shift = np.where(small, shift + 1 / np.where(small, x, 1), shift)
        x = np.where(small, x + 1, x)
    z = 1 / (x * x)
    series = z * (1 / 12 - z * (1 / 120 - z * (1 / 252 - z * (1 / 240 - z * (1 / 132 - z * (691 / 32760 - z / 12))))))
    return np.log(x) - 0.5 / x - series - shift


def _log(x, t):
    return np.log(x.astype(np.float64)).astype(t)


def _continued_fraction(a, x, t, steps, machep, big, biginv):
    """igammac_cf_impl<SAMPLE_DERIVATIVE> without its final sign: (dans_da + ans * dlogax_da) * x."""
    one, two, zero = t(1), t(2), t(0)
    y = one - a
    z = x + y + one
    c = np.zeros_like(x)
    pkm2, qkm2, pkm1, qkm1 = np.ones_like(x), x.copy(), x + one, z * x
    ans = pkm1 / qkm1
    dpkm2, dqkm2, dpkm1, dqkm1 = np.zeros_like(x), np.zeros_like(x), np.zeros_like(x), -x
    dans = (dpkm1 - ans * dqkm1) / qkm1
    active = np.ones(x.shape, bool)
    with np.errstate(all="ignore"):
        for _ in range(steps):
            if not active.any():
                break
            c, y, z = c + one, y + one, z + two
            yc = y * c
            pk, qk = pkm1 * z - pkm2 * yc, qkm1 * z - qkm2 * yc
            dpk = dpkm1 * z - pkm1 - dpkm2 * yc + pkm2 * c
            dqk = dqkm1 * z - qkm1 - dqkm2 * yc + qkm2 * c
            update = active & (qk != zero)
            new_ans = np.where(update, pk / np.where(qk != zero, qk, one), ans)
            new_dans = np.where(update, (dpk - new_ans * dqk) / np.where(qk != zero, qk, one), dans)
            done = update & (np.abs(new_dans - dans) <= machep)
            ans, dans = new_ans, new_dans
            active &= ~done
            pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
            dpkm2, dpkm1, dqkm2, dqkm1 = dpkm1, dpk, dqkm1, dqk
            rescale = np.abs(pk) > big
            pkm2, pkm1, qkm2, qkm1, dpkm2, dpkm1, dqkm2, dqkm1 = (
                np.where(rescale, v * biginv, v) for v in (pkm2, pkm1, qkm2, qkm1, dpkm2, dpkm1, dqkm2, dqkm1))
    dlogax = (_log(x, t) - _digamma(a).astype(t)).astype(t)
    return (dans + ans * dlogax) * x


def _series(a, x, t, steps, machep):
    """igamma_series_impl<SAMPLE_DERIVATIVE>: -(dans_da + ans * dlogax_da) * x / a."""
    one = t(1)
    r, c, ans = a.copy(), np.ones_like(x), np.ones_like(x)
    dc, dans = np.zeros_like(x), np.zeros_like(x)
    active = np.ones(x.shape, bool)
    with np.errstate(all="ignore"):
        for _ in range(steps):
            if not active.any():
                break
            r = np.where(active, r + one, r)
            term = x / r
            dterm = -x / (r * r)
            new_dc = term * dc + dterm * c
            dc = np.where(active, new_dc, dc)
            dans = np.where(active, dans + new_dc, dans)
            c = np.where(active, c * term, c)
            ans = np.where(active, ans + c, ans)
            active &= ~(np.abs(dc) <= machep * np.abs(dans))
    dlogax = (_log(x, t) - _digamma(a + one).astype(t)).astype(t)
    return -(dans + ans * dlogax) * x / a


def gamma_sample_der_alpha(alpha: np.ndarray, sample: np.ndarray) -> np.ndarray:
    """Eigen's gamma_sample_der_alpha, elementwise with broadcasting, in the inputs' float type."""
    alpha, sample = np.broadcast_arrays(np.asarray(alpha), np.asarray(sample))
    t = alpha.dtype.type
    eps = np.finfo(t).eps
    steps, machep = (200, t(eps / 2)) if t == np.float32 else (500, t(eps / 2))
    big, biginv = (t(1 / (eps / 2)), t(eps / 2)) if t == np.float32 else (t(1 / eps), t(eps))
    a, x = alpha.reshape(-1).astype(t), sample.reshape(-1).astype(t)
    out = np.zeros(a.shape, t)
    invalid = (x < 0) | (a <= 0) | np.isnan(a) | np.isnan(x)
    # TF's edges: an infinite alpha gives 0, an infinite sample -0 (the series would give NaN)
    inf_a = ~invalid & np.isinf(a)
    inf_x = ~invalid & ~inf_a & np.isinf(x)
    finite = ~invalid & ~inf_a & ~inf_x
    cf = finite & (x > 1) & (x > a)
    series = finite & ~cf & (x != 0)
    if cf.any():
        out[cf] = _continued_fraction(a[cf], x[cf], t, steps, machep, big, biginv)
    if series.any():
        out[series] = _series(a[series], x[series], t, steps, machep)
    out[invalid & (x != 0)] = np.nan
    out[inf_x] = -0.0
    return out.reshape(alpha.shape)
