"""Softmax and cross entropy: Softmax, LogSoftmax, SoftmaxCrossEntropyWithLogits,
SparseSoftmaxCrossEntropyWithLogits.

As TensorFlow: the max is subtracted first, and softmax multiplies by the reciprocal of the sum.
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ...spec import TensorSpec
from ..helpers import broadcast_shapes, known_dims, require_rank, same_as_input, scalar
from ..registry import register
from ..typesets import FLOAT


def _reduce_keep(x, init, axis: int, op: str):
    """Reduce over one axis and broadcast the result back to x's shape (softmax's max and sum)."""
    shape = hlo.shape_of(x)
    r = hlo.reduce(x, init, [axis], op)
    return r, hlo.broadcast_in_dim(r, shape, [d for d in range(len(shape)) if d != axis])


def _softmax_parts(x, axis: int, dtype):
    """(x - max, exp(x - max), sum of exp, that sum broadcast back) along `axis`."""
    _, m = _reduce_keep(x, scalar(-np.inf, dtype), axis, "maximum")
    shifted = hlo.subtract(x, m)
    e = hlo.unary("exponential", shifted)
    total, total_b = _reduce_keep(e, scalar(0, dtype), axis, "add")
    return shifted, e, total, total_b


def _softmax_lower(ctx, x):
    axis = len(hlo.shape_of(x)) - 1
    shifted, e, _, s = _softmax_parts(x, axis, ctx.out().dtype)
    if ctx.op == "LogSoftmax":
        return hlo.subtract(shifted, hlo.unary("log", s))
    return hlo.multiply(e, hlo.divide(hlo.scalar_like(1, s), s))


def _np_softmax(ctx, x):
    xd = x.astype(np.float64)
    shifted = xd - xd.max(axis=-1, keepdims=True)
    e = np.exp(shifted)
    s = e.sum(axis=-1, keepdims=True)
    y = shifted - np.log(s) if ctx.op == "LogSoftmax" else e / s
    return y.astype(x.dtype)


def _softmax_infer(ctx):
    require_rank(ctx, 0, range(1, 64))
    return same_as_input(ctx)


register("Softmax", infer=_softmax_infer, lower=_softmax_lower, kernel=_np_softmax, attrs=("T",), dtypes=FLOAT)
register("LogSoftmax", infer=_softmax_infer, lower=_softmax_lower, kernel=_np_softmax, attrs=("T",), dtypes=FLOAT)


def _xent_infer(ctx):
    logits, labels = ctx.inputs
    shape = broadcast_shapes(ctx, logits.shape, labels.shape)
    if shape is not None and len(shape) != 2:
        raise ctx.error(f"logits and labels must broadcast to rank 2, got {list(shape)}")
    shape = shape or (None, None)
    return [TensorSpec(logits.dtype, shape[:1]), TensorSpec(logits.dtype, shape)]


def _xent_lower(ctx, logits, labels):
    """loss = sum(labels * (log(sum exp) - shifted)), backprop = softmax - labels."""
    shape = ctx.out(1).shape
    logits, labels = hlo.broadcast_to(logits, shape), hlo.broadcast_to(labels, shape)
    dtype = ctx.out().dtype
    shifted, e, _, s = _softmax_parts(logits, 1, dtype)
    loss = hlo.reduce(hlo.multiply(labels, hlo.subtract(hlo.unary("log", s), shifted)), scalar(0, dtype), [1])
    return [loss, hlo.subtract(hlo.divide(e, s), labels)]


def _np_xent(ctx, logits, labels):
    shape = ctx.out(1).shape
    lg = np.broadcast_to(logits, shape).astype(np.float64)
    lb = np.broadcast_to(labels, shape).astype(np.float64)
    shifted = lg - lg.max(axis=1, keepdims=True)
    s = np.exp(shifted).sum(axis=1, keepdims=True)
    loss = (lb * (np.log(s) - shifted)).sum(axis=1)
    return [loss.astype(logits.dtype), (np.exp(shifted) / s - lb).astype(logits.dtype)]


register("SoftmaxCrossEntropyWithLogits", infer=_xent_infer, lower=_xent_lower, kernel=_np_xent, dtypes=FLOAT,
         attrs=("T",), output_args=("loss", "backprop"))


def _sparse_xent_infer(ctx):
    logits, labels = ctx.inputs
    require_rank(ctx, 0, (2,))
    require_rank(ctx, 1, (1,))
    b, c = known_dims(logits, 2)
    b = b if b is not None else known_dims(labels, 1)[0]
    return [TensorSpec(logits.dtype, (b,)), TensorSpec(logits.dtype, (b, c))]


def _sparse_xent_lower(ctx, logits, labels):
    """Like the dense op with one-hot labels; out-of-range labels give NaN rows (as XLA does)."""
    b, c = hlo.shape_of(logits)
    dtype = ctx.out().dtype
    shifted, e, total, s = _softmax_parts(logits, 1, dtype)
    label_dtype = ctx.inputs[1].dtype
    hot = hlo.compare("EQ", hlo.iota([b, c], label_dtype, 1), hlo.broadcast_in_dim(labels, [b, c], [0]))
    zero = hlo.scalar_like(0, shifted)
    picked = hlo.reduce(hlo.select(hot, shifted, zero), scalar(0, dtype), [1])
    loss = hlo.subtract(hlo.unary("log", total), picked)
    backprop = hlo.subtract(hlo.divide(e, s), hlo.convert(hot, ctx.out(1).dtype))
    valid = hlo.binary("and", hlo.compare("GE", labels, hlo.scalar_like(0, labels)),
                       hlo.compare("LT", labels, hlo.scalar_like(c, labels)))
    nan = hlo.scalar_like(np.nan, loss)
    return [hlo.select(valid, loss, nan),
            hlo.select(hlo.broadcast_in_dim(valid, [b, c], [0]), backprop, hlo.scalar_like(np.nan, backprop))]


def _np_sparse_xent(ctx, logits, labels):
    lg = logits.astype(np.float64)
    b, c = lg.shape
    shifted = lg - lg.max(axis=1, keepdims=True)
    s = np.exp(shifted).sum(axis=1, keepdims=True)
    valid = (labels >= 0) & (labels < c)
    hot = np.arange(c)[None, :] == labels[:, None]
    # the label's logit, picked (a one-hot product would turn a -inf logit elsewhere into NaN)
    picked = np.take_along_axis(shifted, np.where(valid, labels, 0)[:, None].astype(np.int64), 1)[:, 0]
    loss = np.log(s[:, 0]) - picked
    backprop = np.exp(shifted) / s - hot
    loss = np.where(valid, loss, np.nan)
    backprop = np.where(valid[:, None], backprop, np.nan)
    return [loss.astype(logits.dtype), backprop.astype(logits.dtype)]


register("SparseSoftmaxCrossEntropyWithLogits", infer=_sparse_xent_infer, lower=_sparse_xent_lower, dtypes=FLOAT,
         kernel=_np_sparse_xent, attrs=("T", "Tlabels"), output_args=("loss", "backprop"))
