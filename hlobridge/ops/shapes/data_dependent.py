"""Ops whose output shape depends on the input's values: Where (one input), Unique.

They have no lowering (StableHLO needs static shapes): they run on their kernels.
"""

from __future__ import annotations

import numpy as np

from ...spec import TensorSpec
from ..registry import register
from ..typesets import ANY

I64 = np.dtype(np.int64)


def _where_infer(ctx):
    if len(ctx.inputs) != 1:
        raise ctx.error("Where with 3 inputs is not supported here; TF writes SelectV2 for it")
    return [TensorSpec(I64, (None, ctx.inputs[0].rank))]


register("Where", infer=_where_infer, attrs=("T",),
         kernel=lambda ctx, x: np.argwhere(x).astype(I64))


def _unique_infer(ctx):
    x = ctx.inputs[0]
    if x.rank not in (None, 1):
        raise ctx.error(f"expects a vector, got {x}")
    n = x.shape[0] if x.shape is not None else None
    return [TensorSpec(x.dtype, (None,)), TensorSpec(np.dtype(ctx.attr("out_idx", np.int32)), (n,))]


def _unique_kernel(ctx, x):
    """Unique values in order of first appearance (TF), and each element's position among them."""
    _, first, inverse = np.unique(x, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank_of = np.empty_like(order)
    rank_of[order] = np.arange(order.size)
    return [x[np.sort(first)], rank_of[inverse.ravel()].astype(ctx.out(1).dtype)]


register("Unique", infer=_unique_infer, attrs=("T", "out_idx"), kernel=_unique_kernel,
         dtypes=ANY + ("string",),
         output_args=("y", "idx"))
