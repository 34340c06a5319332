"""StableHLO building blocks for the matrix algorithms (solve.py, factor.py).

IREE 3.13 legalizes neither stablehlo.cholesky nor stablehlo.triangular_solve ("failed to
legalize operation ... explicitly marked illegal"; probed in a subprocess, docs/linalg.md), so
the algorithms are written out as XLA's builder libraries write them: a stablehlo.while over
the columns, each step a few elementwise ops, a reduction and a batched matrix product.
Matrices are batched as [B, rows, cols] (the op's batch dims flattened); a loop's index is a
0-d i64 tensor, so rows and columns are picked with dynamic_slice and written back with
dynamic_update_slice, the same index for every matrix of the batch.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ..helpers import num_elements

I64 = np.int64


def flatten_batch(x):
    """A [..., r, c] Value as [B, r, c] and the batch shape."""
    shape = hlo.shape_of(x)
    batch = shape[:-2]
    return hlo.reshape(x, [num_elements(batch), *shape[-2:]]), batch


def restore_batch(x, batch):
    """A [B, r, c] Value back as [*batch, r, c]."""
    return hlo.reshape(x, [*batch, *hlo.shape_of(x)[1:]])


def broadcast_batch(x, batch: Sequence[int]):
    """x [..., r, c] broadcast to [*batch, r, c] (TF's BCast of matrix batch dims)."""
    shape = hlo.shape_of(x)
    return hlo.broadcast_to(x, [*batch, *shape[-2:]])


def index(i: int):
    """A 0-d i64 constant (a dynamic_slice start)."""
    return hlo.constant(np.array(i, I64))


def fori_loop(n: int, state: Sequence, body: Callable) -> list:
    """for j in range(n): state = body(j, *state), j a 0-d i64 Value; returns the final state."""
    if n == 0:
        return list(state)

    def cond(j, *_):
        return hlo.compare("LT", j, index(n))

    def step(j, *values):
        return [hlo.add(j, index(1)), *body(j, *values)]
    return hlo.while_([index(0), *state], cond, step)[1:]


def column(x, j):
    """Column j of every matrix: [B, r, 1]."""
    b, r, _ = hlo.shape_of(x)
    return hlo.dynamic_slice(x, [index(0), index(0), j], [b, r, 1])


def row(x, j):
    """Row j of every matrix: [B, 1, c]."""
    b, _, c = hlo.shape_of(x)
    return hlo.dynamic_slice(x, [index(0), j, index(0)], [b, 1, c])


def element(x, i, j):
    """Element (i, j) of every matrix: [B, 1, 1]."""
    return hlo.dynamic_slice(x, [index(0), i, j], [hlo.shape_of(x)[0], 1, 1])


def set_column(x, col, j):
    return hlo.dynamic_update_slice(x, col, [index(0), index(0), j])


def set_row(x, r, i):
    return hlo.dynamic_update_slice(x, r, [index(0), i, index(0)])


def positions(shape, dim: int):
    """An i64 iota over `dim` of `shape` (row or column numbers)."""
    return hlo.iota(shape, I64, dim)


def at(j, shape):
    """The 0-d index j broadcast to `shape`, to compare with `positions`."""
    return hlo.broadcast_in_dim(j, list(shape), [])


def expand(v, shape):
    """A [B, 1, c] or [B, r, 1] Value broadcast to [B, r, c] (size-1 dims stretch)."""
    return hlo.broadcast_in_dim(v, list(shape), [0, 1, 2])


def bmm(a, b, dtype, *, transpose_a=False, transpose_b=False):
    """Batched matrix product of [B, n, k] and [B, k, m] (either transposed), at HIGHEST precision."""
    sa, sb = hlo.shape_of(a), hlo.shape_of(b)
    n = sa[2] if transpose_a else sa[1]
    m = sb[1] if transpose_b else sb[2]
    return hlo.dot_general(a, b, [sa[0], n, m], dtype, lhs_batch=[0], rhs_batch=[0],
                           lhs_contract=[1 if transpose_a else 2], rhs_contract=[2 if transpose_b else 1],
                           precision="HIGHEST")


def swap_last(x):
    """The matrices transposed: [..., r, c] -> [..., c, r]."""
    rank = len(hlo.shape_of(x))
    return hlo.transpose(x, [*range(rank - 2), rank - 1, rank - 2])


def triangle(x, lower: bool, dtype):
    """The lower (or upper) triangle of every matrix, diagonal included, zero elsewhere."""
    shape = hlo.shape_of(x)
    rank = len(shape)
    i, j = positions(shape, rank - 2), positions(shape, rank - 1)
    keep = hlo.compare("GE" if lower else "LE", i, j)
    return hlo.select(keep, x, hlo.splat(0, shape, dtype))
