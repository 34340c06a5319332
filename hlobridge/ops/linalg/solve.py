"""Factorizing and solving square systems: Cholesky, MatrixTriangularSolve, MatrixSolve,
MatrixInverse, TridiagonalSolve and TridiagonalMatMul; and Cross.

The lowerings are the classic column loops (blocks.py says why there is no
stablehlo.cholesky or triangular_solve), computed in the op's type like XLA's:
- Cholesky: the left-looking column algorithm (column j of L from A's column j less L times
  row j of L); it reads A's lower triangle only, as TF's CPU kernel (Eigen's LLT) does;
- MatrixTriangularSolve: forward (lower) or backward (upper) substitution on the masked
  triangle, the adjoint by a transpose, batch dims broadcast;
- MatrixSolve, MatrixInverse, TridiagonalSolve: Gauss-Jordan elimination with partial pivoting
  on [A | B] (TridiagonalSolve builds its dense matrix first; XLA's Thomas solver cannot pivot,
  so tf2xla refuses partial_pivoting=True, TF's default; the dense elimination serves both).

Failures, as TensorFlow 2.21's CPU kernels (tests record them): a matrix that is not positive
definite gives a Cholesky factor of NaNs (no error); a singular triangular system gives
inf/NaN; MatrixSolve and MatrixInverse of a singular matrix stop the run ("Input matrix is
not invertible." / "Input is not invertible."). Compiled, a singular MatrixSolve/MatrixInverse
gives inf/NaN, as XLA's does: the device does not stop the run.
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ...errors import InputError
from ..helpers import broadcast_shapes, out_spec, require_rank
from .blocks import (at, bmm, broadcast_batch, column, element, expand, flatten_batch, fori_loop,
                            index, positions, restore_batch, row, set_column, set_row, swap_last, triangle)
from ..registry import register
from ..typesets import NUMBER

F32_F64 = ("float32", "float64")


def _matrix_dims(ctx, i: int, square: bool = True):
    """Input i's shape, checked to be [..., M, M] (or [..., M, K] when not square)."""
    shape = ctx.inputs[i].shape
    if shape is None:
        return None
    if len(shape) < 2:
        raise ctx.error(f"input {i} must have rank >= 2, got {ctx.inputs[i]}")
    if square and None not in shape[-2:] and shape[-1] != shape[-2]:
        raise ctx.error(f"input {i} must be square matrices, got {ctx.inputs[i]}")
    return shape


def _square_infer(ctx):
    return [out_spec(ctx, _matrix_dims(ctx, 0))]


def _solve_infer(ctx, broadcast: bool):
    """The output of solving matrix [..., M, M] X = rhs [..., M, K]: [batch, M, K]."""
    a, b = _matrix_dims(ctx, 0), _matrix_dims(ctx, 1, square=False)
    if a is None or b is None:
        return [out_spec(ctx, None)]
    if None not in (a[-1], b[-2]) and a[-1] != b[-2]:
        raise ctx.error(f"the matrix has {a[-1]} rows, the right-hand side {b[-2]}")
    if broadcast:
        batch = broadcast_shapes(ctx, a[:-2], b[:-2])
    else:
        if len(a) != len(b) or any(None not in (x, y) and x != y for x, y in zip(a[:-2], b[:-2])):
            raise ctx.error(f"the matrix and the right-hand side must have the same batch dims: "
                            f"{ctx.inputs[0]} vs {ctx.inputs[1]}")
        batch = a[:-2]
    return [out_spec(ctx, (*batch, a[-1] if a[-1] is not None else b[-2], b[-1]))]


def _as_float64(x):
    return np.asarray(x, np.float64)


def _each_matrix(x, fn, out_shape):
    """fn over every innermost matrix of x (batch dims flattened), into out_shape."""
    if x.size == 0:
        return np.zeros(out_shape)
    return np.asarray([fn(m) for m in x.reshape(-1, *x.shape[-2:])], np.float64).reshape(out_shape)


# -- Cholesky ---------------------------------------------------------------------------------------


def _cholesky_lower(ctx, x):
    dtype = ctx.out().dtype
    a, batch = flatten_batch(x)
    b, n, _ = hlo.shape_of(a)
    col_shape = [b, n, 1]
    rows = positions(col_shape, 1)

    def body(j, l_):
        v = hlo.subtract(column(a, j), bmm(l_, row(l_, j), dtype, transpose_b=True))
        s = hlo.unary("sqrt", element(v, j, _zero_index()))
        jj = at(j, col_shape)
        col = hlo.select(hlo.compare("GT", rows, jj), hlo.divide(v, expand(s, col_shape)),
                         hlo.select(hlo.compare("EQ", rows, jj), expand(s, col_shape), hlo.splat(0, col_shape, dtype)))
        return [set_column(l_, col, j)]
    (factor,) = fori_loop(n, [hlo.splat(0, [b, n, n], dtype)], body)
    return restore_batch(_nan_where_failed(factor, dtype), batch)


def _zero_index():
    return hlo.constant(np.array(0, np.int64))


def _nan_where_failed(factor, dtype):
    """TF's CPU kernel: a matrix whose factorization fails (a diagonal element not > 0: not
    positive definite, or NaN) gives NaN in its whole lower triangle."""
    shape = hlo.shape_of(factor)
    b, n, _ = shape
    if n == 0:
        return factor
    rows, cols = positions(shape, 1), positions(shape, 2)
    diagonal = hlo.reduce(hlo.select(hlo.compare("EQ", rows, cols), factor, hlo.splat(0, shape, dtype)),
                          hlo.constant(np.array(0, dtype)), [2])
    positive = hlo.compare("GT", diagonal, hlo.splat(0, [b, n], dtype))
    ok = hlo.reduce(positive, hlo.constant(np.array(True)), [1], "and")
    nan_lower = hlo.select(hlo.compare("GE", rows, cols), hlo.splat(np.nan, shape, dtype), hlo.splat(0, shape, dtype))
    return hlo.select(hlo.broadcast_in_dim(ok, shape, [0]), factor, nan_lower)


def _cholesky_one(m):
    n = m.shape[0]
    try:
        factor = np.linalg.cholesky(np.tril(m) + np.tril(m, -1).T)
    except np.linalg.LinAlgError:
        factor = None
    if factor is None or not (np.diagonal(factor) > 0).all():
        return np.where(np.tri(n, dtype=bool), np.nan, 0.0)
    return factor


def _cholesky_kernel(ctx, x):
    return _each_matrix(_as_float64(x), _cholesky_one, x.shape).astype(ctx.out().dtype)


register("Cholesky", infer=_square_infer, attrs=("T",), dtypes=F32_F64, lower=_cholesky_lower,
         kernel=_cholesky_kernel)


# -- MatrixTriangularSolve ---------------------------------------------------------------------------


def _substitution(a, b, dtype, lower: bool):
    """X with A X = B for triangular A [B, M, M] (zeros in its other triangle), B [B, M, K]:
    forward substitution (lower), or backward, row M - 1 first (upper)."""
    nb, m, k = hlo.shape_of(b)

    def body(j, x):
        i = j if lower else hlo.subtract(index(m - 1), j)
        s = bmm(row(a, i), x, dtype)
        d = element(a, i, i)
        xi = hlo.divide(hlo.subtract(row(b, i), s), expand(d, [nb, 1, k]))
        return [set_row(x, xi, i)]
    return fori_loop(m, [hlo.splat(0, [nb, m, k], dtype)], body)[0]


def _triangular_solve_lower(ctx, matrix, rhs):
    dtype = ctx.out().dtype
    out = ctx.out().shape
    lower, adjoint = ctx.attr("lower", True), ctx.attr("adjoint", False)
    a = triangle(broadcast_batch(matrix, out[:-2]), lower, dtype)
    if adjoint:  # (real types: the adjoint is the transpose) A^T is triangular the other way
        a, lower = swap_last(a), not lower
    a, batch = flatten_batch(a)
    b, _ = flatten_batch(broadcast_batch(rhs, out[:-2]))
    return restore_batch(_substitution(a, b, dtype, lower), batch)


def _triangular_solve_kernel(ctx, matrix, rhs):
    out = ctx.out().shape
    lower, adjoint = ctx.attr("lower", True), ctx.attr("adjoint", False)
    a = np.broadcast_to(_as_float64(matrix), (*out[:-2], out[-2], out[-2]))
    b = np.broadcast_to(_as_float64(rhs), out)
    a = np.tril(a) if lower else np.triu(a)
    if adjoint:
        a, lower = np.swapaxes(a, -1, -2), not lower
    x = np.zeros(out)
    order = range(out[-2]) if lower else reversed(range(out[-2]))
    with np.errstate(all="ignore"):  # a zero on the diagonal gives inf/NaN, as TF's
        for i in order:
            s = np.einsum("...j,...jk->...k", a[..., i, :], x)
            x[..., i, :] = (b[..., i, :] - s) / a[..., i, i, None]
    return x.astype(ctx.out().dtype)


register("MatrixTriangularSolve", infer=lambda ctx: _solve_infer(ctx, broadcast=True), attrs=("T", "lower", "adjoint"),
         dtypes=F32_F64, lower=_triangular_solve_lower, kernel=_triangular_solve_kernel)


# -- MatrixSolve, MatrixInverse, TridiagonalSolve: Gauss-Jordan with partial pivoting ------------------------


def gauss_jordan(a, b, dtype):
    """X with A X = B, A [B, n, n], B [B, n, k]: elimination with partial pivoting on [A | B].

    Step j picks the row p >= j with the largest |A[p, j]| (the first of equals), swaps rows j
    and p (each matrix its own p: rows are picked by masks, not by index), scales row j by
    the pivot and subtracts it from every other row. A zero pivot gives inf/NaN."""
    nb, n, _ = hlo.shape_of(a)
    m = hlo.concatenate([a, b], 2)
    shape = hlo.shape_of(m)
    cols = shape[2]
    rows, col_rows = positions(shape, 1), positions([nb, n, 1], 1)
    zero = hlo.splat(0, shape, dtype)

    def body(j, m):
        jj = at(j, [nb, n, 1])
        magnitude = hlo.select(hlo.compare("GE", col_rows, jj), hlo.unary("abs", column(m, j)),
                               hlo.splat(-1, [nb, n, 1], dtype))
        best = hlo.reduce(magnitude, hlo.constant(np.array(-np.inf, dtype)), [1, 2], "maximum")
        is_best = hlo.compare("EQ", magnitude, hlo.broadcast_in_dim(best, [nb, n, 1], [0]))
        p = hlo.reduce(hlo.select(is_best, col_rows, hlo.splat(n, [nb, n, 1], np.int64)),
                       hlo.constant(np.array(n, np.int64)), [1, 2], "minimum")
        p = hlo.select(hlo.compare("EQ", p, hlo.splat(n, [nb], np.int64)), hlo.broadcast_in_dim(j, [nb], []), p)
        at_p = hlo.compare("EQ", rows, hlo.broadcast_in_dim(p, shape, [0]))
        at_j = hlo.compare("EQ", rows, at(j, shape))
        row_p = hlo.reshape(hlo.reduce(hlo.select(at_p, m, zero), hlo.constant(np.array(0, dtype)), [1]), [nb, 1, cols])
        swapped = hlo.select(at_j, expand(row_p, shape), hlo.select(at_p, expand(row(m, j), shape), m))
        pivot = element(row_p, _zero_index(), j)
        new_j = hlo.divide(row_p, expand(pivot, [nb, 1, cols]))
        eliminated = hlo.subtract(swapped, hlo.multiply(expand(column(swapped, j), shape), expand(new_j, shape)))
        return [hlo.select(at_j, expand(new_j, shape), eliminated)]
    (m,) = fori_loop(n, [m], body)
    return hlo.slice(m, [0, 0, n], shape)


def _solve_lower(ctx, matrix, rhs):
    dtype = ctx.out().dtype
    a, batch = flatten_batch(swap_last(matrix) if ctx.attr("adjoint", False) else matrix)
    b, _ = flatten_batch(rhs)
    return restore_batch(gauss_jordan(a, b, dtype), batch)


def _inverse_lower(ctx, x):
    dtype = ctx.out().dtype
    a, batch = flatten_batch(swap_last(x) if ctx.attr("adjoint", False) else x)
    nb, n, _ = hlo.shape_of(a)
    identity = hlo.constant(np.broadcast_to(np.eye(n, dtype=dtype), (nb, n, n)))
    return restore_batch(gauss_jordan(a, identity, dtype), batch)


def _checked(ctx, fn, message):
    """fn's result; a singular matrix stops the run with TF's message, naming the node."""
    try:
        return fn()
    except np.linalg.LinAlgError:
        raise ctx.error(message, cls=InputError) from None


def _solve_kernel(ctx, matrix, rhs):
    a = _as_float64(matrix)
    if ctx.attr("adjoint", False):
        a = np.swapaxes(a, -1, -2)
    if a.size == 0 or rhs.size == 0:
        return np.zeros(ctx.out().shape, ctx.out().dtype)
    x = _checked(ctx, lambda: np.linalg.solve(a, _as_float64(rhs)), "Input matrix is not invertible.")
    return x.astype(ctx.out().dtype)


def _inverse_kernel(ctx, x):
    a = _as_float64(x)
    if ctx.attr("adjoint", False):
        a = np.swapaxes(a, -1, -2)
    if a.size == 0:
        return np.zeros(ctx.out().shape, ctx.out().dtype)
    return _checked(ctx, lambda: np.linalg.inv(a), "Input is not invertible.").astype(ctx.out().dtype)


register("MatrixSolve", infer=lambda ctx: _solve_infer(ctx, broadcast=False), attrs=("T", "adjoint"),
         dtypes=F32_F64, lower=_solve_lower, kernel=_solve_kernel)
register("MatrixInverse", infer=_square_infer, attrs=("T", "adjoint"), dtypes=F32_F64,
         lower=_inverse_lower, kernel=_inverse_kernel)


# -- tridiagonal systems: diagonals [..., 3, M] (super, main, sub), or three [..., 1, M] -------------------
# Row i of the matrix is sub[i] at column i - 1, main[i] at i, super[i] at i + 1 (super's last
# element and sub's first are ignored).


def _tridiagonal_dense(sup, main, sub, dtype):
    """The dense [B, M, M] matrix of three [B, M] diagonals."""
    nb, m = hlo.shape_of(main)
    shape = [nb, m, m]
    rows, cols = positions(shape, 1), positions(shape, 2)
    by_row = [hlo.broadcast_in_dim(v, shape, [0, 1]) for v in (sup, main, sub)]
    dense = hlo.splat(0, shape, dtype)
    for offset, values in zip((1, 0, -1), by_row):
        on = hlo.compare("EQ", cols, hlo.add(rows, hlo.splat(offset, shape, np.int64)))
        dense = hlo.select(on, values, dense)
    return dense


def _np_tridiagonal_dense(sup, main, sub):
    m = main.shape[-1]
    dense = np.zeros((*main.shape, m))
    i = np.arange(m)
    dense[..., i, i] = main
    dense[..., i[:-1], i[:-1] + 1] = sup[..., :-1]
    dense[..., i[1:], i[1:] - 1] = sub[..., 1:]
    return dense


def _tridiagonal_solve_infer(ctx):
    d, rhs = ctx.inputs
    if d.shape is not None and (len(d.shape) < 2 or d.shape[-2] not in (None, 3)):
        raise ctx.error(f"diagonals must be [..., 3, M], got {d}")
    if d.shape is not None and rhs.shape is not None:
        if len(rhs.shape) != len(d.shape) or None not in (d.shape[-1], rhs.shape[-2]) and d.shape[-1] != rhs.shape[-2]:
            raise ctx.error(f"diagonals {d} and right-hand side {rhs} do not match ([..., 3, M] and [..., M, K])")
    return [out_spec(ctx, rhs.shape, i=1)]


def _tridiagonal_solve_lower(ctx, diagonals, rhs):
    dtype = ctx.out().dtype
    d, _ = flatten_batch(diagonals)
    nb, _, m = hlo.shape_of(d)
    sup, main, sub = (hlo.reshape(hlo.slice(d, [0, i, 0], [nb, i + 1, m]), [nb, m]) for i in range(3))
    b, batch = flatten_batch(rhs)
    return restore_batch(gauss_jordan(_tridiagonal_dense(sup, main, sub, dtype), b, dtype), batch)


def _tridiagonal_solve_kernel(ctx, diagonals, rhs):
    d = _as_float64(diagonals)
    if rhs.size == 0:
        return np.zeros(ctx.out().shape, ctx.out().dtype)
    dense = _np_tridiagonal_dense(d[..., 0, :], d[..., 1, :], d[..., 2, :])
    x = _checked(ctx, lambda: np.linalg.solve(dense, _as_float64(rhs)), "The matrix is not invertible.")
    return x.astype(ctx.out().dtype)


register("TridiagonalSolve", infer=_tridiagonal_solve_infer, attrs=("T", "partial_pivoting", "perturb_singular"),
         dtypes=F32_F64, lower=_tridiagonal_solve_lower, kernel=_tridiagonal_solve_kernel)


def _tridiagonal_matmul_infer(ctx):
    rhs = ctx.inputs[3]
    for i in range(3):
        s = ctx.inputs[i].shape
        if s is not None and (len(s) < 2 or s[-2] not in (None, 1)):
            raise ctx.error(f"input {i} must be [..., 1, M], got {ctx.inputs[i]}")
    require_rank(ctx, 3, range(2, 64))
    return [out_spec(ctx, rhs.shape, i=3)]


def _tridiagonal_matmul_lower(ctx, sup, main, sub, rhs):
    """out[i] = sub[i] rhs[i - 1] + main[i] rhs[i] + super[i] rhs[i + 1], rhs shifted by slice and pad."""
    dtype = ctx.out().dtype
    shape = hlo.shape_of(rhs)
    rank, m = len(shape), shape[-2]
    zero = hlo.constant(np.array(0, dtype))

    def by_row(v):  # [..., 1, M] -> [..., M, 1], broadcast over the columns
        return hlo.broadcast_to(hlo.reshape(v, [*hlo.shape_of(v)[:-2], m, 1]), shape)

    def shifted(up: bool):
        start, limit, lo, hi = [0] * rank, list(shape), [0] * rank, [0] * rank
        if up:  # row i holds rhs[i + 1]
            start[-2], hi[-2] = 1, 1
        else:
            limit[-2], lo[-2] = m - 1, 1
        return hlo.pad(hlo.slice(rhs, start, limit), zero, lo, hi)
    out = hlo.multiply(by_row(main), rhs)
    if m > 1:
        out = hlo.add(out, hlo.multiply(by_row(sup), shifted(True)))
        out = hlo.add(out, hlo.multiply(by_row(sub), shifted(False)))
    return out


def _tridiagonal_matmul_kernel(ctx, sup, main, sub, rhs):
    dense = _np_tridiagonal_dense(*(_as_float64(v)[..., 0, :] for v in (sup, main, sub)))
    return np.matmul(dense, _as_float64(rhs)).astype(ctx.out().dtype)


register("TridiagonalMatMul", infer=_tridiagonal_matmul_infer, attrs=("T",), dtypes=F32_F64,
         lower=_tridiagonal_matmul_lower, kernel=_tridiagonal_matmul_kernel)


# -- Cross --------------------------------------------------------------------------------------------


def _cross_infer(ctx):
    a, b = ctx.inputs
    if a.shape is not None and (not a.shape or a.shape[-1] not in (None, 3)):
        raise ctx.error(f"inputs must be [..., 3], got {a}")
    if a.shape is not None and b.shape is not None and len(a.shape) != len(b.shape):
        raise ctx.error(f"inputs must have the same shape, got {a} and {b}")
    return [out_spec(ctx, a.shape if a.shape is not None else b.shape)]


def _cross_lower(ctx, a, b):
    shape = hlo.shape_of(a)
    rank = len(shape)

    def part(v, i):
        return hlo.slice(v, [0] * (rank - 1) + [i], shape[:-1] + [i + 1])
    parts = [hlo.subtract(hlo.multiply(part(a, (i + 1) % 3), part(b, (i + 2) % 3)),
                          hlo.multiply(part(a, (i + 2) % 3), part(b, (i + 1) % 3))) for i in range(3)]
    return hlo.concatenate(parts, rank - 1)


register("Cross", infer=_cross_infer, attrs=("T",), dtypes=NUMBER, lower=_cross_lower,
         kernel=lambda ctx, a, b: np.cross(a, b).astype(ctx.out().dtype))
