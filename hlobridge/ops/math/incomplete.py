"""Igamma, Igammac and Betainc lowered: the regularized incomplete gamma functions P(a, x),
Q(a, x) and the regularized incomplete beta function I_x(a, b).

As XLA's math.cc (after Cephes's igam/igamc): with ax = exp(a log x - x - lgamma(a)),
- x <= 1 or x <= a: the series P = ax / a * sum_k x^k / ((a + 1) ... (a + k));
- else the continued fraction Q = ax * CF(a, x) (Cephes's, rescaled when its terms grow);
the other function is 1 minus. Both run as one stablehlo.while over every element, each
element stopping when its next term is below epsilon (a mask), the loop when all have stopped
or after 2000 steps. Edges as TF's CPU kernel (special_kernels.py, checked against TF):
P(a, 0) = 0 for any a; NaN for a <= 0, x < 0 or NaN; P(inf, x) = 0, P(a, inf) = 1;
Q(a, inf) = 0, Q(a, 0) = 1, Q(inf, x) = 1.
I_x(a, b): Numerical Recipes' (modified Lentz) continued fraction, on (b, a, 1 - x) where
x >= (a + 1) / (a + b + 2), as XLA's Betainc; NaN for a, b <= 0 or x outside [0, 1], x itself at 0 and 1.
lgamma is chlo.lgamma, which IREE links for float32 and narrower only (docs/linalg.md).
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

_MAX_STEPS = 2000
_BIG, _BIG_INVERSE = 4.503599627370496e15, 2.22044604925031308085e-16


def _c(value, like):
    return hlo.scalar_like(value, like)


def _eps(x):
    """Machine epsilon of x's float type, as a constant like x: the loops' stopping test."""
    return _c(np.finfo(np.float32 if str(hlo.element_type_of(x)) == "f32" else np.float64).eps, x)


def _gamma_setup(a, x):
    """What P, Q and dP/da share: the edge masks (domain: NaN, x < 0 or a <= 0; x = 0; x = inf;
    a = inf), a and x with 1 standing in at the edges (so the loops see no inf or NaN), and
    ax = x^a e^-x / Gamma(a) of those."""
    zero, one, inf = _c(0, x), _c(1, x), _c(np.inf, x)
    nan = hlo.binary("or", hlo.compare("NE", a, a), hlo.compare("NE", x, x))
    domain = hlo.binary("or", nan, hlo.binary("or", hlo.compare("LT", x, zero), hlo.compare("LE", a, zero)))
    x_zero, x_inf, a_inf = hlo.compare("EQ", x, zero), hlo.compare("EQ", x, inf), hlo.compare("EQ", a, inf)
    edge = hlo.binary("or", hlo.binary("or", domain, x_zero), hlo.binary("or", x_inf, a_inf))
    a, x = hlo.select(edge, one, a), hlo.select(edge, one, x)
    ax = hlo.unary("exponential", hlo.subtract(hlo.subtract(hlo.multiply(a, hlo.unary("log", x)), x),
                                               hlo.chlo_unary("lgamma", a)))
    return (domain, x_zero, x_inf, a_inf), edge, a, x, ax


def _masked_loop(active, state, step):
    """Run step(*state) -> state on the elements where `active` (i1, updated by step's last
    result) holds, until none does or _MAX_STEPS have run; returns the final state."""
    shape = hlo.shape_of(active)
    counter = hlo.constant(np.array(0, np.int32))

    def cond(n, active, *values):
        any_active = hlo.reduce(active, hlo.constant(np.array(False)), range(len(shape)), "or")
        return hlo.binary("and", any_active, hlo.compare("LT", n, hlo.constant(np.array(_MAX_STEPS, np.int32))))

    def body(n, active, *values):
        *new, still = step(*values)
        kept = [hlo.select(active, v, old) for v, old in zip(new, values)]
        return [hlo.add(n, hlo.constant(np.array(1, np.int32))), hlo.binary("and", active, still), *kept]
    return hlo.while_([counter, active, *state], cond, body)[2:]


def _series(ax, x, a, active, eps):
    """P by its series (ax * sum / a)."""
    def step(r, c, total):
        r = hlo.add(r, _c(1, r))
        c = hlo.multiply(c, hlo.divide(x, r))
        total = hlo.add(total, c)
        return r, c, total, hlo.compare("GT", hlo.divide(c, total), eps)
    _, _, total = _masked_loop(active, [a, _c(1, a), _c(1, a)], step)
    return hlo.divide(hlo.multiply(total, ax), a)


def _continued_fraction(ax, x, a, active, eps):
    """Q by Cephes's continued fraction (ax * ans)."""
    one = _c(1, x)
    y = hlo.subtract(one, a)
    z = hlo.add(hlo.add(x, y), one)
    pkm2, qkm2, pkm1, qkm1 = one, x, hlo.add(x, one), hlo.multiply(z, x)
    ans = hlo.divide(pkm1, qkm1)

    def step(c, y, z, pkm2, qkm2, pkm1, qkm1, ans):
        c, y, z = hlo.add(c, one), hlo.add(y, one), hlo.add(z, _c(2, z))
        yc = hlo.multiply(y, c)
        pk = hlo.subtract(hlo.multiply(pkm1, z), hlo.multiply(pkm2, yc))
        qk = hlo.subtract(hlo.multiply(qkm1, z), hlo.multiply(qkm2, yc))
        nonzero = hlo.compare("NE", qk, _c(0, qk))
        r = hlo.divide(pk, hlo.select(nonzero, qk, one))
        t = hlo.select(nonzero, hlo.unary("abs", hlo.divide(hlo.subtract(ans, r), r)), one)
        ans = hlo.select(nonzero, r, ans)
        big = hlo.compare("GT", hlo.unary("abs", pk), _c(_BIG, pk))
        scale = hlo.select(big, _c(_BIG_INVERSE, pk), one)
        pkm2, pkm1, qkm2, qkm1 = (hlo.multiply(v, scale) for v in (pkm1, pk, qkm1, qk))
        return c, y, z, pkm2, qkm2, pkm1, qkm1, ans, hlo.compare("GT", t, eps)
    state = [_c(0, x), y, z, pkm2, qkm2, pkm1, qkm1, ans]
    ans = _masked_loop(active, state, step)[-1]
    return hlo.multiply(ans, ax)


def incomplete_gamma(a, x, upper: bool):
    """P(a, x) (upper=False) or Q(a, x) (upper=True), elementwise, a and x of one shape."""
    eps, zero, one = _eps(x), _c(0, x), _c(1, x)
    (domain, x_zero, x_inf, a_inf), edge, safe_a, safe_x, ax = _gamma_setup(a, x)
    use_fraction = hlo.binary("and", hlo.compare("GT", safe_x, one), hlo.compare("GT", safe_x, safe_a))
    running = hlo.unary("not", edge)
    p = _series(ax, safe_x, safe_a, hlo.binary("and", running, hlo.unary("not", use_fraction)), eps)
    q = _continued_fraction(ax, safe_x, safe_a, hlo.binary("and", running, use_fraction), eps)
    if upper:  # each function straight from its own algorithm where it is small (no 1 - (1 - q))
        value = hlo.select(use_fraction, q, hlo.subtract(one, p))
        value = hlo.select(hlo.binary("or", x_zero, a_inf), one, value)
        value = hlo.select(domain, _c(np.nan, x), value)
        return hlo.select(hlo.binary("and", x_inf, hlo.compare("GT", a, zero)), zero, value)
    value = hlo.select(use_fraction, hlo.subtract(one, q), p)
    value = hlo.select(x_inf, one, value)
    value = hlo.select(a_inf, zero, value)
    value = hlo.select(domain, _c(np.nan, x), value)
    return hlo.select(x_zero, zero, value)


def _lentz_beta(a, b, x, active, eps):
    """Numerical Recipes' betacf: the continued fraction of I_x(a, b) (times front / a)."""
    one = _c(1, x)
    tiny = _c(1e-30, x)

    def floor_tiny(v):
        return hlo.select(hlo.compare("LT", hlo.unary("abs", v), tiny), tiny, v)
    qab, qap, qam = hlo.add(a, b), hlo.add(a, one), hlo.subtract(a, one)
    d = hlo.divide(one, floor_tiny(hlo.subtract(one, hlo.divide(hlo.multiply(qab, x), qap))))

    def half_step(aa, c, d):
        d = hlo.divide(one, floor_tiny(hlo.add(one, hlo.multiply(aa, d))))
        c = floor_tiny(hlo.add(one, hlo.divide(aa, c)))
        return c, d

    def step(m, c, d, h):
        m = hlo.add(m, one)
        m2 = hlo.multiply(m, _c(2, m))
        even = hlo.divide(hlo.multiply(hlo.multiply(m, hlo.subtract(b, m)), x),
                          hlo.multiply(hlo.add(qam, m2), hlo.add(a, m2)))
        c, d = half_step(even, c, d)
        h = hlo.multiply(h, hlo.multiply(d, c))
        odd = hlo.unary("negate", hlo.divide(hlo.multiply(hlo.multiply(hlo.add(a, m), hlo.add(qab, m)), x),
                                             hlo.multiply(hlo.add(a, m2), hlo.add(qap, m2))))
        c, d = half_step(odd, c, d)
        delta = hlo.multiply(d, c)
        return m, c, d, hlo.multiply(h, delta), hlo.compare("GT", hlo.unary("abs", hlo.subtract(delta, one)), eps)
    return _masked_loop(active, [_c(0, x), one, d, d], step)[-1]


def betainc(a, b, x):
    """I_x(a, b) elementwise, a, b and x of one shape."""
    eps = _eps(x)
    zero, one = _c(0, x), _c(1, x)
    nan = hlo.binary("or", hlo.binary("or", hlo.compare("NE", a, a), hlo.compare("NE", b, b)), hlo.compare("NE", x, x))
    domain = hlo.binary("or", hlo.binary("or", hlo.compare("LE", a, zero), hlo.compare("LE", b, zero)),
                        hlo.binary("or", hlo.compare("LT", x, zero), hlo.compare("GT", x, one)))
    domain = hlo.binary("or", nan, domain)
    ends = hlo.binary("or", hlo.compare("EQ", x, zero), hlo.compare("EQ", x, one))
    edge = hlo.binary("or", domain, ends)
    given_x = x
    a, b, x = (hlo.select(edge, _c(0.5, v), v) for v in (a, b, x))
    log_front = hlo.add(hlo.subtract(hlo.subtract(hlo.chlo_unary("lgamma", hlo.add(a, b)), hlo.chlo_unary("lgamma", a)),
                                     hlo.chlo_unary("lgamma", b)),
                        hlo.add(hlo.multiply(a, hlo.unary("log", x)), hlo.multiply(b, hlo.unary("log_plus_one",
                                                                                                 hlo.unary("negate", x)))))
    front = hlo.unary("exponential", log_front)
    swap = hlo.compare("GE", x, hlo.divide(hlo.add(a, one), hlo.add(hlo.add(a, b), _c(2, a))))
    aa, bb = hlo.select(swap, b, a), hlo.select(swap, a, b)
    xx = hlo.select(swap, hlo.subtract(one, x), x)
    value = hlo.divide(hlo.multiply(front, _lentz_beta(aa, bb, xx, hlo.unary("not", edge), eps)), aa)
    value = hlo.select(swap, hlo.subtract(one, value), value)
    value = hlo.select(ends, given_x, value)
    return hlo.select(domain, _c(np.nan, x), value)


# -- IgammaGradA: d/da P(a, x), the same two algorithms carried forward-mode ---------------------------


def _series_grad(x, a, active, eps):
    """d/da of P = ax S / a, S = sum_k c_k, c_k = c_(k-1) x / (a + k): dc_k = dc_(k-1) x / (a + k)
    - c_k / (a + k); returns (S, dS/da)."""
    def step(r, c, dc, total, dtotal):
        r = hlo.add(r, _c(1, r))
        ratio = hlo.divide(x, r)
        c_new = hlo.multiply(c, ratio)
        dc = hlo.subtract(hlo.multiply(dc, ratio), hlo.divide(c_new, r))
        total, dtotal = hlo.add(total, c_new), hlo.add(dtotal, dc)
        small = hlo.binary("and", hlo.compare("LE", hlo.unary("abs", hlo.divide(c_new, total)), eps),
                           hlo.compare("LE", hlo.unary("abs", hlo.divide(dc, dtotal)), eps))
        return r, c_new, dc, total, dtotal, hlo.unary("not", small)
    zero, one = _c(0, a), _c(1, a)
    _, _, _, total, dtotal = _masked_loop(active, [a, one, zero, one, zero], step)
    return total, dtotal


def _fraction_grad(x, a, active, eps):
    """Cephes's continued fraction for Q / ax and its derivative in a (y = 1 - a and z = x + y + 1
    move with a: dy = dz = -1)."""
    one, zero = _c(1, x), _c(0, x)
    y = hlo.subtract(one, a)
    z = hlo.add(hlo.add(x, y), one)
    pkm2, qkm2, pkm1, qkm1 = one, x, hlo.add(x, one), hlo.multiply(z, x)
    dqkm1 = hlo.unary("negate", x)
    ans = hlo.divide(pkm1, qkm1)
    dans = hlo.unary("negate", hlo.divide(hlo.multiply(pkm1, dqkm1), hlo.multiply(qkm1, qkm1)))

    def step(c, y, z, pkm2, qkm2, pkm1, qkm1, dpkm2, dqkm2, dpkm1, dqkm1, ans, dans):
        c, y, z = hlo.add(c, one), hlo.add(y, one), hlo.add(z, _c(2, z))
        yc, dyc = hlo.multiply(y, c), hlo.unary("negate", c)
        pk = hlo.subtract(hlo.multiply(pkm1, z), hlo.multiply(pkm2, yc))
        qk = hlo.subtract(hlo.multiply(qkm1, z), hlo.multiply(qkm2, yc))
        dpk = hlo.subtract(hlo.subtract(hlo.multiply(dpkm1, z), pkm1),
                           hlo.add(hlo.multiply(dpkm2, yc), hlo.multiply(pkm2, dyc)))
        dqk = hlo.subtract(hlo.subtract(hlo.multiply(dqkm1, z), qkm1),
                           hlo.add(hlo.multiply(dqkm2, yc), hlo.multiply(qkm2, dyc)))
        nonzero = hlo.compare("NE", qk, zero)
        safe_qk = hlo.select(nonzero, qk, one)
        r = hlo.divide(pk, safe_qk)
        dr = hlo.divide(hlo.subtract(dpk, hlo.multiply(r, dqk)), safe_qk)
        t = hlo.select(nonzero, hlo.unary("abs", hlo.divide(hlo.subtract(ans, r), r)), one)
        dt = hlo.select(nonzero, hlo.unary("abs", hlo.subtract(dans, dr)), one)
        ans, dans = hlo.select(nonzero, r, ans), hlo.select(nonzero, dr, dans)
        big = hlo.compare("GT", hlo.unary("abs", pk), _c(_BIG, pk))
        scale = hlo.select(big, _c(_BIG_INVERSE, pk), one)
        rescaled = [hlo.multiply(v, scale) for v in (pkm1, qkm1, pk, qk, dpkm1, dqkm1, dpk, dqk)]
        more = hlo.binary("or", hlo.compare("GT", t, eps),
                          hlo.compare("GT", dt, hlo.multiply(eps, hlo.unary("abs", dans))))
        return (c, y, z, rescaled[0], rescaled[1], rescaled[2], rescaled[3], rescaled[4], rescaled[5], rescaled[6],
                rescaled[7], ans, dans, more)
    state = [zero, y, z, pkm2, qkm2, pkm1, qkm1, zero, zero, zero, dqkm1, ans, dans]
    *_, ans, dans = _masked_loop(active, state, step)
    return ans, dans


def _grad_a_over_ax(a, x):
    """(ax, g, masks): d/da P(a, x) = ax g, ax = x^a e^-x / Gamma(a), on safe stand-ins where the
    domain's edges decide the value (masks: domain, x_zero, x_inf, a_inf)."""
    eps, one = _eps(x), _c(1, x)
    masks, edge, a, x, ax = _gamma_setup(a, x)
    dlog_ax = hlo.subtract(hlo.unary("log", x), hlo.chlo_unary("digamma", a))        # d/da log(ax)
    use_fraction = hlo.binary("and", hlo.compare("GT", x, one), hlo.compare("GT", x, a))
    running = hlo.unary("not", edge)
    s, ds = _series_grad(x, a, hlo.binary("and", running, hlo.unary("not", use_fraction)), eps)
    series = hlo.add(hlo.multiply(hlo.divide(s, a), dlog_ax),
                     hlo.subtract(hlo.divide(ds, a), hlo.divide(s, hlo.multiply(a, a))))   # d/da (ax s / a) / ax
    f, df = _fraction_grad(x, a, hlo.binary("and", running, use_fraction), eps)
    fraction = hlo.unary("negate", hlo.add(hlo.multiply(f, dlog_ax), df))              # d/da (1 - ax f) / ax
    return ax, hlo.select(use_fraction, fraction, series), masks


def igamma_grad_a(a, x):
    """d/da P(a, x): P's two algorithms differentiated step by step, as XLA's IgammaGradA;
    0 where P is constant in a (x = 0 or inf, a = inf; -0 for x = inf, as TF), NaN off the domain."""
    ax, g, (domain, x_zero, x_inf, a_inf) = _grad_a_over_ax(a, x)
    zero = _c(0, x)
    value = hlo.select(hlo.binary("or", x_zero, a_inf), zero, hlo.multiply(ax, g))
    value = hlo.select(x_inf, _c(-0.0, x), value)
    return hlo.select(domain, _c(np.nan, x), value)


def random_gamma_grad(alpha, sample):
    """d sample / d alpha of a Gamma(alpha) sample (implicit reparameterization):
    -(dP/da) / (dP/dx) = -sample g, the pdf's ax cancelled (no underflow in the tails)."""
    _, g, (domain, x_zero, x_inf, a_inf) = _grad_a_over_ax(alpha, sample)
    value = hlo.unary("negate", hlo.multiply(sample, g))
    value = hlo.select(hlo.binary("or", x_zero, a_inf), _c(0, sample), value)
    value = hlo.select(x_inf, _c(-0.0, sample), value)
    return hlo.select(domain, _c(np.nan, sample), value)
