"""SparseFillEmptyRows: every row of a SparseTensor gets at least one entry, as
`tf.sparse.fill_empty_rows` and `tf.nn.safe_embedding_lookup_sparse` (feature columns'
embedding_column) write it before a sparse embedding lookup.

A reference kernel only: its output size depends on the data (how many rows are empty), and
XLA does not compile it either. Follows TF 2.21's CPU kernel (sparse_fill_empty_rows_op.cc):
entries are grouped by row in row order, keeping their input order within a row; an empty
row gets one entry [row, 0, ...] holding `default_value`; `reverse_index_map[i]` is where
input entry i went. Input already ordered by row with no empty row passes through as is.
"""

from __future__ import annotations

import numpy as np

from ...errors import InputError
from ...spec import TensorSpec
from ..registry import register

INT64 = np.dtype(np.int64)


def _infer(ctx):
    indices, values, shape = ctx.inputs[0], ctx.inputs[1], ctx.inputs[2]
    rank = indices.shape[1] if indices.shape is not None and len(indices.shape) == 2 else None
    rows = None if shape.value is None or np.size(shape.value) == 0 else int(np.ravel(shape.value)[0])
    n = values.shape[0] if values.shape is not None and len(values.shape) == 1 else None
    return [TensorSpec(INT64, (None, rank)), TensorSpec(values.dtype, (None,)),
            TensorSpec(np.dtype(bool), (rows,)), TensorSpec(INT64, (n,))]


def _check(ctx, indices, values, dense_shape, default) -> None:
    if indices.ndim != 2:
        raise ctx.error(f"indices must be a matrix, got shape {list(indices.shape)}", cls=InputError)
    if values.ndim != 1 or values.shape[0] != indices.shape[0]:
        raise ctx.error(f"values must be a vector of {indices.shape[0]} elements (one per index), "
                        f"got shape {list(values.shape)}", cls=InputError)
    if dense_shape.ndim != 1 or dense_shape.shape[0] != indices.shape[1] or dense_shape.size == 0:
        raise ctx.error(f"dense_shape must be a vector of the indices' rank {indices.shape[1]}, got "
                        f"{dense_shape.tolist()}", cls=InputError)
    if np.ndim(default) != 0:
        raise ctx.error(f"default_value must be a scalar, got shape {list(np.shape(default))}", cls=InputError)


def _kernel(ctx, indices, values, dense_shape, default_value):
    indices, values = np.asarray(indices, INT64), np.asarray(values)
    dense_shape = np.asarray(dense_shape, INT64)
    _check(ctx, indices, values, dense_shape, default_value)
    n, rows = indices.shape[0], int(dense_shape[0])
    if rows == 0:
        if n:
            raise ctx.error(f"Received SparseTensor with dense_shape[0] = 0 but indices.shape[0] = {n}",
                            cls=InputError)
        return [indices.copy(), values.copy(), np.zeros(0, bool), np.zeros(0, INT64)]
    row = indices[:, 0]
    bad = np.nonzero((row < 0) | (row >= rows))[0]
    if bad.size:
        raise ctx.error(f"indices({int(bad[0])}, 0) is invalid: {int(row[bad[0]])} is not in [0, {rows})",
                        cls=InputError)
    counts = np.bincount(row, minlength=rows)
    empty = counts == 0
    if not empty.any() and np.all(np.diff(row) >= 0):
        return [indices.copy(), values.copy(), empty, np.arange(n, dtype=INT64)]
    slots = np.maximum(counts, 1)
    starts = np.concatenate([[0], np.cumsum(slots)[:-1]])
    order = np.argsort(row, kind="stable")  # input order kept within each row
    position = np.empty(n, INT64)
    position[order] = starts[row[order]] + (np.arange(n) - np.concatenate([[0], np.cumsum(counts)[:-1]])[row[order]])
    out_indices = np.zeros((int(slots.sum()), indices.shape[1]), INT64)
    out_values = np.empty(int(slots.sum()), values.dtype)
    out_indices[position], out_values[position] = indices, values
    out_indices[starts[empty], 0] = np.nonzero(empty)[0]
    out_values[starts[empty]] = np.asarray(default_value, values.dtype)
    return [out_indices, out_values, empty, position]


register("SparseFillEmptyRows", infer=_infer, kernel=_kernel, attrs=("T",),
         output_args=("output_indices", "output_values", "empty_row_indicator", "reverse_index_map"))
