"""Orthogonal factorizations: Qr, SelfAdjointEigV2 and Svd.

Lowered as XLA's builder libraries (xla/hlo/builder/lib/qr.cc, self_adjoint_eig.cc, svd.cc) do,
as while loops of small updates (blocks.py):
- Qr: Householder reflections, one column per step, with LAPACK's and Eigen's sign convention
  (the reflector maps x to -sign(x_0) |x| e_0; a column with nothing below the diagonal is
  left alone), so Q and R come out as TensorFlow's up to rounding;
- SelfAdjointEigV2: cyclic Jacobi: sweeps over every pair (p, q) rotating A[p, q] to zero,
  until the off-diagonal part is below epsilon times the matrix (at most 30 sweeps); the
  eigenvalues are sorted ascending (TF's order), the eigenvectors with them;
- Svd: one-sided Jacobi (Hestenes) on the columns of A (of A^T when it is wide): rotations
  orthogonalize the columns, whose norms are the singular values, sorted descending; the
  normalized columns are completed to an orthonormal basis by a Householder QR (the extra
  vectors of full_matrices, and the vectors of zero singular values).
Eigenvectors and singular vectors are unique only up to sign (and within repeated values up
to a rotation): tests compare reconstructions (A = Q R, A V = V diag(e), A = U diag(s) V^T),
orthogonality and the values, as TensorFlow's own tests do. The kernels are NumPy's LAPACK
(float64). With compute_v / compute_uv false, TF's unused outputs are scalars (0 here).
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ..helpers import out_spec
from .blocks import (at, bmm, column, element, expand, flatten_batch, fori_loop, index, positions,
                            restore_batch, row, set_column, set_row, swap_last)
from ..registry import register

F32_F64 = ("float32", "float64")


def _matrix_shape(ctx):
    s = ctx.inputs[0].shape
    if s is not None and len(s) < 2:
        raise ctx.error(f"input must have rank >= 2, got {ctx.inputs[0]}")
    return s


def _eps(dtype) -> float:
    return float(np.finfo(dtype).eps)


def _sum_rows(x, dtype):
    """[B, r, c] -> [B, 1, c], the sum over rows."""
    b, _, c = hlo.shape_of(x)
    return hlo.reshape(hlo.reduce(x, hlo.constant(np.array(0, dtype)), [1]), [b, 1, c])


# -- Qr ------------------------------------------------------------------------------------------------


def householder_qr(a, dtype):
    """(Q [B, m, m], R [B, m, n]) of a [B, m, n]."""
    nb, m, n = hlo.shape_of(a)
    col_shape = [nb, m, 1]
    rows = positions(col_shape, 1)
    zero_col = hlo.splat(0, col_shape, dtype)

    def body(j, a, q):
        jj = at(j, col_shape)
        x = hlo.select(hlo.compare("GE", rows, jj), column(a, j), zero_col)
        below = hlo.select(hlo.compare("GT", rows, jj), x, zero_col)
        sigma = _sum_rows(hlo.multiply(below, below), dtype)            # [B, 1, 1]
        alpha = element(a, j, j)
        norm = hlo.unary("sqrt", hlo.add(hlo.multiply(alpha, alpha), sigma))
        beta = hlo.select(hlo.compare("GE", alpha, hlo.splat(0, [nb, 1, 1], dtype)), hlo.unary("negate", norm), norm)
        v = hlo.select(hlo.compare("EQ", rows, jj), expand(hlo.subtract(alpha, beta), col_shape), below)
        vtv = _sum_rows(hlo.multiply(v, v), dtype)
        skip = hlo.compare("EQ", sigma, hlo.splat(0, [nb, 1, 1], dtype))
        scale = hlo.select(skip, hlo.splat(0, [nb, 1, 1], dtype), hlo.divide(hlo.splat(2, [nb, 1, 1], dtype), vtv))
        va = bmm(v, a, dtype, transpose_a=True)                           # [B, 1, n]
        a = hlo.subtract(a, hlo.multiply(expand(v, [nb, m, n]), expand(hlo.multiply(expand(scale, [nb, 1, n]), va),
                                                                        [nb, m, n])))
        qv = bmm(q, v, dtype)                                             # [B, m, 1]
        q = hlo.subtract(q, hlo.multiply(expand(hlo.multiply(qv, expand(scale, col_shape)), [nb, m, m]),
                                         expand(swap_last(v), [nb, m, m])))
        return [a, q]
    identity = hlo.constant(np.broadcast_to(np.eye(m, dtype=dtype), (nb, m, m)))
    r, q = fori_loop(min(m, n), [a, identity], body)
    rr, cc = positions([nb, m, n], 1), positions([nb, m, n], 2)
    r = hlo.select(hlo.compare("LE", rr, cc), r, hlo.splat(0, [nb, m, n], dtype))  # exact zeros below
    return q, r


def _qr_infer(ctx):
    s = _matrix_shape(ctx)
    if s is None:
        return [out_spec(ctx, None), out_spec(ctx, None)]
    m, n = s[-2:]
    k = None if None in (m, n) else min(m, n)
    if ctx.attr("full_matrices", False):
        return [out_spec(ctx, (*s[:-2], m, m)), out_spec(ctx, s)]
    return [out_spec(ctx, (*s[:-2], m, k)), out_spec(ctx, (*s[:-2], k, n))]


def _qr_lower(ctx, x):
    dtype = ctx.out().dtype
    a, batch = flatten_batch(x)
    nb, m, n = hlo.shape_of(a)
    q, r = householder_qr(a, dtype)
    if not ctx.attr("full_matrices", False):
        k = min(m, n)
        q, r = hlo.slice(q, [0, 0, 0], [nb, m, k]), hlo.slice(r, [0, 0, 0], [nb, k, n])
    return [restore_batch(q, batch), restore_batch(r, batch)]


def _qr_kernel(ctx, x):
    mode = "complete" if ctx.attr("full_matrices", False) else "reduced"
    q, r = np.linalg.qr(np.asarray(x, np.float64), mode=mode)
    return [q.astype(ctx.out(0).dtype), r.astype(ctx.out(1).dtype)]


register("Qr", infer=_qr_infer, attrs=("T", "full_matrices"), dtypes=F32_F64, lower=_qr_lower,
         kernel=_qr_kernel, output_args=("q", "r"))


# -- Jacobi rotations ---------------------------------------------------------------------------------------


def _pairs(n: int) -> np.ndarray:
    """Every (p, q), p < q, in cyclic-by-row order: one sweep."""
    return np.array([(p, q) for p in range(n) for q in range(p + 1, n)], np.int64).reshape(-1, 2)


def _pair_at(table, t):
    """(p, q) of pair t of a constant [P, 2] table, as 0-d i64 Values."""
    both = hlo.dynamic_slice(table, [t, index(0)], [1, 2])
    return (hlo.reshape(hlo.slice(both, [0, i], [1, i + 1]), []) for i in (0, 1))


def _rotation(app, aqq, apq, dtype):
    """(c, s) zeroing apq of the symmetric 2 x 2 [[app, apq], [apq, aqq]] (Golub & Van Loan's
    sym.schur2): tau = (aqq - app) / (2 apq), t = sign(tau) / (|tau| + sqrt(1 + tau^2))."""
    shape = hlo.shape_of(app)
    zero, one = hlo.splat(0, shape, dtype), hlo.splat(1, shape, dtype)
    is_zero = hlo.compare("EQ", apq, zero)
    safe = hlo.select(is_zero, one, apq)
    tau = hlo.divide(hlo.subtract(aqq, app), hlo.multiply(hlo.splat(2, shape, dtype), safe))
    root = hlo.unary("sqrt", hlo.add(one, hlo.multiply(tau, tau)))
    t = hlo.divide(hlo.select(hlo.compare("GE", tau, zero), one, hlo.unary("negate", one)),
                   hlo.add(hlo.unary("abs", tau), root))
    t = hlo.select(hlo.binary("or", is_zero, hlo.compare("EQ", hlo.unary("abs", tau), hlo.splat(np.inf, shape, dtype))),
                   zero, t)
    c = hlo.divide(one, hlo.unary("sqrt", hlo.add(one, hlo.multiply(t, t))))
    return c, hlo.multiply(t, c)


def _rotate(x, p, q, c, s, *, rows: bool):
    """Columns (or rows) p, q of x [B, r, k] <- (c x_p - s x_q, s x_p + c x_q); c, s are [B, 1, 1]."""
    get, put = (row, set_row) if rows else (column, set_column)
    xp, xq = get(x, p), get(x, q)
    shape = hlo.shape_of(xp)
    cc, ss = expand(c, shape), expand(s, shape)
    new_p = hlo.subtract(hlo.multiply(cc, xp), hlo.multiply(ss, xq))
    new_q = hlo.add(hlo.multiply(ss, xp), hlo.multiply(cc, xq))
    return put(put(x, new_p, p), new_q, q)


_MAX_SWEEPS = 30


def _sweeps(n: int, state, rotate, off_norm, dtype):
    """Jacobi sweeps over all pairs until off_norm(state) (a 0-d Value) is small enough or
    _MAX_SWEEPS have run; rotate(p, q, *state) -> state."""
    table = hlo.constant(_pairs(n))
    n_pairs = n * (n - 1) // 2

    def sweep(*values):
        return fori_loop(n_pairs, values, lambda t, *v: rotate(*_pair_at(table, t), *v))

    def cond(k, *values):
        more = hlo.compare("LT", k, index(_MAX_SWEEPS))
        return hlo.binary("and", more, hlo.compare("GT", off_norm(*values), hlo.constant(np.array(0, dtype))))

    def body(k, *values):
        return [hlo.add(k, index(1)), *sweep(*values)]
    if n_pairs == 0:
        return list(state)
    return hlo.while_([index(0), *state], cond, body)[1:]


def _square_sum(x, dtype, mask=None):
    """The sum of x^2 over everything (where mask), a 0-d Value."""
    sq = hlo.multiply(x, x)
    if mask is not None:
        sq = hlo.select(mask, sq, hlo.splat(0, hlo.shape_of(x), dtype))
    return hlo.reduce(sq, hlo.constant(np.array(0, dtype)), range(len(hlo.shape_of(x))))


# -- SelfAdjointEigV2 --------------------------------------------------------------------------------------


def jacobi_eigh(a, dtype):
    """(eigenvalues [B, n] ascending, eigenvectors [B, n, n] as columns) of symmetric a [B, n, n]."""
    nb, n, _ = hlo.shape_of(a)
    shape = [nb, n, n]
    off = hlo.compare("NE", positions(shape, 1), positions(shape, 2))
    tol = hlo.multiply(hlo.constant(np.array(_eps(dtype) ** 2, dtype)), _square_sum(a, dtype))

    def rotate(p, q, a, v):
        c, s = _rotation(element(a, p, p), element(a, q, q), element(a, p, q), dtype)
        a = _rotate(_rotate(a, p, q, c, s, rows=False), p, q, c, s, rows=True)
        return [a, _rotate(v, p, q, c, s, rows=False)]

    def off_norm(a, v):
        return hlo.subtract(_square_sum(a, dtype, off), tol)
    identity = hlo.constant(np.broadcast_to(np.eye(n, dtype=dtype), shape))
    a, v = _sweeps(n, [a, identity], rotate, off_norm, dtype)
    diag = hlo.reduce(hlo.select(hlo.unary("not", off), a, hlo.splat(0, shape, dtype)),
                      hlo.constant(np.array(0, dtype)), [2])
    return _sort_with_vectors(diag, v, ascending=True)


def _sort_with_vectors(values, vectors, ascending: bool):
    """values [B, k] sorted, and the columns of vectors [B, r, k] in the same order."""
    nb, r, k = hlo.shape_of(vectors)
    direction = "LT" if ascending else "GT"
    (sorted_values,) = hlo.sort([values], 1, lambda a, b: hlo.compare(direction, a, b))
    keys = hlo.broadcast_in_dim(values, [nb, k, r], [0, 1])
    _, rows = hlo.sort([keys, swap_last(vectors)], 1, lambda a, b, *_: hlo.compare(direction, a, b))
    return sorted_values, swap_last(rows)


def _symmetric_from_lower(a):
    """tril(a) + tril(a, -1)^T: TF reads the lower triangle only."""
    shape = hlo.shape_of(a)
    lower = hlo.compare("GE", positions(shape, 1), positions(shape, 2))
    return hlo.select(lower, a, swap_last(a))


def _eig_infer(ctx):
    s = _matrix_shape(ctx)
    if s is not None and None not in s[-2:] and s[-1] != s[-2]:
        raise ctx.error(f"input must be square matrices, got {ctx.inputs[0]}")
    if not ctx.attr("compute_v", True):
        return [out_spec(ctx, None if s is None else s[:-1]), out_spec(ctx, ())]
    return [out_spec(ctx, None if s is None else s[:-1]), out_spec(ctx, s)]


def _eig_lower(ctx, x):
    dtype = ctx.out().dtype
    a, batch = flatten_batch(x)
    e, v = jacobi_eigh(_symmetric_from_lower(a), dtype)
    e = hlo.reshape(e, ctx.out(0).shape)
    if not ctx.attr("compute_v", True):
        return [e, hlo.splat(0, [], dtype)]
    return [e, restore_batch(v, batch)]


def _eig_kernel(ctx, x):
    a = np.asarray(x, np.float64)
    e, v = np.linalg.eigh(a, UPLO="L") if a.size else (np.zeros(a.shape[:-1]), a)
    dtype = ctx.out(0).dtype
    return [e.astype(dtype), v.astype(dtype) if ctx.attr("compute_v", True) else np.zeros((), dtype)]


register("SelfAdjointEigV2", infer=_eig_infer, attrs=("T", "compute_v"), dtypes=F32_F64, lower=_eig_lower,
         kernel=_eig_kernel, output_args=("e", "v"))


# -- Svd ------------------------------------------------------------------------------------------------------


def one_sided_jacobi(a, dtype):
    """(s [B, n] descending, U [B, m, n], V [B, n, n]) of a [B, m, n], m >= n."""
    nb, m, n = hlo.shape_of(a)

    def rotate(p, q, a, v):
        ap, aq = column(a, p), column(a, q)
        app, aqq = _sum_rows(hlo.multiply(ap, ap), dtype), _sum_rows(hlo.multiply(aq, aq), dtype)
        apq = _sum_rows(hlo.multiply(ap, aq), dtype)
        c, s = _rotation(app, aqq, apq, dtype)
        return [_rotate(a, p, q, c, s, rows=False), _rotate(v, p, q, c, s, rows=False)]

    def off_norm(a, v):  # sum of (a_p . a_q)^2 over p != q, against eps^2 |A^T A|^2
        gram = bmm(a, a, dtype, transpose_a=True)
        shape = hlo.shape_of(gram)
        off = hlo.compare("NE", positions(shape, 1), positions(shape, 2))
        return hlo.subtract(_square_sum(gram, dtype, off),
                            hlo.multiply(hlo.constant(np.array(_eps(dtype) ** 2, dtype)), _square_sum(gram, dtype)))
    identity = hlo.constant(np.broadcast_to(np.eye(n, dtype=dtype), (nb, n, n)))
    a, v = _sweeps(n, [a, identity], rotate, off_norm, dtype)
    norms = hlo.unary("sqrt", _sum_rows(hlo.multiply(a, a), dtype))            # [B, 1, n]
    zero = hlo.compare("EQ", norms, hlo.splat(0, [nb, 1, n], dtype))
    safe = hlo.select(zero, hlo.splat(1, [nb, 1, n], dtype), norms)
    u = hlo.divide(a, expand(safe, [nb, m, n]))
    s = hlo.reshape(norms, [nb, n])
    s_sorted, u = _sort_with_vectors(s, u, ascending=False)
    _, v = _sort_with_vectors(s, v, ascending=False)
    return s_sorted, u, v


def _complete_basis(u, dtype):
    """[B, m, k] orthonormal columns -> [B, m, m] whose first k columns are u: Q of u's QR, its
    first k columns sign-corrected (R of orthonormal columns is diagonal +-1). Columns of u
    that are zero (zero singular values) are filled in by Q too."""
    nb, m, k = hlo.shape_of(u)
    q, r = householder_qr(u, dtype)
    rr, cc = positions([nb, m, k], 1), positions([nb, m, k], 2)
    signs = hlo.reduce(hlo.select(hlo.compare("EQ", rr, cc), r, hlo.splat(0, [nb, m, k], dtype)),
                       hlo.constant(np.array(0, dtype)), [1])                  # [B, k]
    signs = hlo.select(hlo.compare("LT", signs, hlo.splat(0, [nb, k], dtype)), hlo.splat(-1, [nb, k], dtype),
                       hlo.splat(1, [nb, k], dtype))
    head = hlo.multiply(hlo.slice(q, [0, 0, 0], [nb, m, k]), hlo.broadcast_in_dim(signs, [nb, m, k], [0, 2]))
    return hlo.concatenate([head, hlo.slice(q, [0, 0, k], [nb, m, m])], 2)


def _svd_infer(ctx):
    s = _matrix_shape(ctx)
    if s is None:
        return [out_spec(ctx, None)] * 3
    batch, (m, n) = s[:-2], s[-2:]
    k = None if None in (m, n) else min(m, n)
    if not ctx.attr("compute_uv", True):
        return [out_spec(ctx, (*batch, k)), out_spec(ctx, ()), out_spec(ctx, ())]
    full = ctx.attr("full_matrices", False)
    return [out_spec(ctx, (*batch, k)), out_spec(ctx, (*batch, m, m if full else k)),
            out_spec(ctx, (*batch, n, n if full else k))]


def _svd_lower(ctx, x):
    dtype = ctx.out().dtype
    a, batch = flatten_batch(x)
    nb, m, n = hlo.shape_of(a)
    wide = m < n
    s, left, right = one_sided_jacobi(swap_last(a) if wide else a, dtype)
    s = hlo.reshape(s, ctx.out(0).shape)
    if not ctx.attr("compute_uv", True):
        zero = hlo.splat(0, [], dtype)
        return [s, zero, zero]
    # The column side is completed to an orthonormal basis even when thin: a zero singular
    # value leaves a zero column, which TF's (LAPACK's) U has orthonormal.
    tall, k = hlo.shape_of(left)[1:]
    left = _complete_basis(left, dtype)
    if not ctx.attr("full_matrices", False):
        left = hlo.slice(left, [0, 0, 0], [nb, tall, k])
    u, v = (right, left) if wide else (left, right)
    return [s, restore_batch(u, batch), restore_batch(v, batch)]


def _svd_kernel(ctx, x):
    a = np.asarray(x, np.float64)
    dtype = ctx.out(0).dtype
    compute_uv = ctx.attr("compute_uv", True)
    if not compute_uv:
        s = np.linalg.svd(a, compute_uv=False) if a.size else np.zeros(ctx.out(0).shape)
        return [s.astype(dtype), np.zeros((), dtype), np.zeros((), dtype)]
    if a.size == 0:
        return [np.zeros(s.shape, dtype) if s.shape else np.zeros((), dtype) for s in ctx.outputs]
    u, s, vh = np.linalg.svd(a, full_matrices=ctx.attr("full_matrices", False))
    return [s.astype(dtype), u.astype(dtype), np.swapaxes(vh, -1, -2).astype(dtype)]


register("Svd", infer=_svd_infer, attrs=("T", "compute_uv", "full_matrices"), dtypes=F32_F64, lower=_svd_lower,
         kernel=_svd_kernel, output_args=("s", "u", "v"))
