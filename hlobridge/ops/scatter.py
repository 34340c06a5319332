"""Scatters: ScatterNd and TensorScatterUpdate/Add/Sub/Max/Min.

indices [..., K] name positions in the first K dimensions of the output; updates has shape
indices.shape[:-1] + output.shape[K:]. ScatterNd starts from zeros and adds (duplicate
indices add up); the TensorScatter ops start from their `tensor` input and combine with
replace, add, subtract, max or min (TensorScatterUpdate with duplicate indices keeps one of
the updates: TensorFlow does not say which; the kernel keeps the last).

An index outside the output is an error on TensorFlow's CPU kernels, and so on the
reference kernel (unless bad_indices_policy is IGNORE); compiled, it is dropped, as
stablehlo.scatter specifies (and TensorFlow's XLA path does). IREE 3.13 does not bounds-check
its scatter (an index of -1 writes out of bounds and kills the process), so the lowering does:
the operand gets one extra trailing element in each indexed dimension, invalid index vectors
are sent there, and it is sliced away after.
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ..errors import InputError
from ..spec import TensorSpec
from .registry import register
from .shape_ops import ints, value_of
from .typesets import ANY, NUMBER

# op -> (StableHLO combiner, or None to replace; NumPy ufunc to apply at the indices)
COMBINERS = {
    "TensorScatterUpdate": (None, None),
    "TensorScatterAdd": ("add", np.add),
    "TensorScatterSub": ("subtract", np.subtract),
    "TensorScatterMax": ("maximum", np.maximum),
    "TensorScatterMin": ("minimum", np.minimum),
}
ATTRS = ("T", "Tindices", "bad_indices_policy")


def _check_updates(ctx, out_shape, indices, updates):
    if out_shape is None or indices.shape is None or updates.shape is None or indices.shape[-1] is None:
        return
    k = indices.shape[-1]
    if k > len(out_shape):
        raise ctx.error(f"indices.shape[-1] = {k} is larger than the output's rank {len(out_shape)}")
    want = tuple(indices.shape[:-1]) + tuple(out_shape[k:])
    if len(want) != len(updates.shape) or any(a is not None and b is not None and a != b
                                              for a, b in zip(want, updates.shape)):
        raise ctx.error(f"updates {updates} must have shape {list(want)} (indices {indices}, output "
                        f"{list(out_shape)})")


def _scatter_nd_infer(ctx):
    indices, updates = ctx.inputs[:2]
    shape = value_of(ctx, 2)
    out = None if shape is None else tuple(ints(shape))
    _check_updates(ctx, out, indices, updates)
    return [TensorSpec(updates.dtype, out)]


def _tensor_scatter_infer(ctx):
    tensor, indices, updates = ctx.inputs
    _check_updates(ctx, tensor.shape, indices, updates)
    return [TensorSpec(tensor.dtype, tensor.shape)]


def scatter_in_bounds(operand, indices, updates, *, dtype, index_dtype, combiner):
    """stablehlo.scatter of updates [batch..., window...] at indices [batch..., K] into the first K
    dims of operand, where an index vector outside the operand changes nothing (see above)."""
    shape, ishape = hlo.shape_of(operand), hlo.shape_of(indices)
    irank, urank, k = len(ishape), len(hlo.shape_of(updates)), ishape[-1]
    limits = hlo.broadcast_in_dim(hlo.constant(np.asarray(shape[:k], index_dtype)), ishape, [irank - 1])
    inside = hlo.binary("and", hlo.compare("GE", indices, hlo.scalar_like(0, indices)), hlo.compare("LT", indices, limits))
    whole = hlo.reduce(inside, hlo.constant(np.array(True)), [irank - 1], "and")
    indices = hlo.select(hlo.broadcast_in_dim(whole, ishape, range(irank - 1)), indices, limits)
    zero = hlo.constant(np.zeros((), dtype))
    padded = hlo.pad(operand, zero, [0] * len(shape), [1] * k + [0] * (len(shape) - k))
    out = hlo.scatter(padded, indices, updates, update_window_dims=range(irank - 1, urank),
                      inserted_window_dims=range(k), scatter_dims_to_operand_dims=range(k),
                      index_vector_dim=irank - 1, op=combiner)
    return hlo.slice(out, [0] * len(shape), shape)


def _scatter(ctx, operand, indices, updates, combiner):
    return scatter_in_bounds(operand, indices, updates, dtype=ctx.out().dtype,
                             index_dtype=ctx.inputs[0 if ctx.op == "ScatterNd" else 1].dtype, combiner=combiner)


def _np_scatter(ctx, out, indices, updates, ufunc):
    """Apply updates at indices in order; an index outside `out` is TensorFlow's error."""
    k = indices.shape[-1]
    flat_idx = indices.reshape(-1, k)
    flat_upd = updates.reshape((flat_idx.shape[0],) + out.shape[k:])
    ignore = ctx.attr("bad_indices_policy", "") == "IGNORE"
    for i, (idx, upd) in enumerate(zip(flat_idx, flat_upd)):
        if any(not 0 <= v < d for v, d in zip(idx, out.shape)):
            if ignore:
                continue
            raise ctx.error(f"indices[{i}] = {idx.tolist()} does not index into shape {list(out.shape)}",
                            cls=InputError)
        where = tuple(int(v) for v in idx)
        out[where] = upd if ufunc is None else ufunc(out[where], upd)
    return out


register("ScatterNd", infer=_scatter_nd_infer, const_inputs=(2,), attrs=ATTRS, dtypes=NUMBER,
         lower=lambda ctx, indices, updates, _shape: _scatter(
             ctx, hlo.constant(np.zeros(ctx.out().shape, ctx.out().dtype)), indices, updates, "add"),
         kernel=lambda ctx, indices, updates, shape: _np_scatter(
             ctx, np.zeros(ints(shape), ctx.out().dtype), indices, updates, np.add))

for _op, (_combiner, _ufunc) in COMBINERS.items():
    register(_op, infer=_tensor_scatter_infer, attrs=ATTRS, dtypes=ANY if _combiner is None else NUMBER,
             lower=lambda ctx, tensor, indices, updates, c=_combiner: _scatter(ctx, tensor, indices, updates, c),
             kernel=lambda ctx, tensor, indices, updates, f=_ufunc: _np_scatter(
                 ctx, tensor.copy(), indices, updates, f))
