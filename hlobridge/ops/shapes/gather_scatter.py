"""Indexed reads and writes: Gather, GatherV2, GatherNd, DynamicStitch, ScatterNd,
TensorScatterUpdate/Add/Sub/Max/Min.

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

from ...errors import InputError
from ...spec import TensorSpec
from ..helpers import as_out, ints, merge_dims, normalize_axis, num_elements, out_spec, value_of
from ..registry import register
from ..typesets import ANY, NUMBER



# -- helpers --------------------------------------------------------------------------------------

def take(x, indices, axis: int, batch_dims: int, out_shape):
    """TF GatherV2 as stablehlo.gather: out = params[:axis] + indices[batch_dims:] + params[axis+1:]."""
    pshape = hlo.shape_of(x)
    ir_rank = len(hlo.shape_of(indices))
    b = batch_dims
    out_rank = len(out_shape)
    sizes = [1 if (i == axis or i < b) else d for i, d in enumerate(pshape)]
    return hlo.gather(x, indices, out_shape,
                      offset_dims=list(range(b, axis)) + list(range(axis + ir_rank - b, out_rank)),
                      collapsed_slice_dims=[axis], start_index_map=[axis], index_vector_dim=ir_rank,
                      slice_sizes=sizes, operand_batching_dims=list(range(b)),
                      start_indices_batching_dims=list(range(b)))


# -- Gather, GatherV2, GatherNd -----------------------------------------------------------------------
# layout: op -> (axis input or None for axis 0, has batch_dims)

def _gather_params(ctx, axis_value=None):
    """(axis, batch_dims) of GatherV2/Gather, normalised; axis None when not constant."""
    p, ind = ctx.inputs[0], ctx.inputs[1]
    batch = ctx.attr("batch_dims", 0) if ctx.op == "GatherV2" else 0
    if batch < 0 and ind.rank is not None:
        batch += ind.rank
    if ctx.op != "GatherV2":
        return 0, batch
    axis = value_of(ctx, 2) if axis_value is None else axis_value
    if axis is None or p.rank is None:
        return None, batch
    axis = normalize_axis(ctx, ints(axis)[0], p.rank)
    if axis < batch:
        raise ctx.error(f"axis {axis} must not be less than batch_dims {batch}")
    return axis, batch


def _gather_infer(ctx):
    p, ind = ctx.inputs[0], ctx.inputs[1]
    axis, batch = _gather_params(ctx)
    if p.shape is None or ind.shape is None:
        return [out_spec(ctx, None)]
    if axis is None:
        return [out_spec(ctx, (None,) * (p.rank + ind.rank - 1 - batch))]
    for i in range(batch):
        merge_dims(ctx, p.shape[i], ind.shape[i])
    return [out_spec(ctx, p.shape[:axis] + ind.shape[batch:] + p.shape[axis + 1:])]


def _gather_lower(ctx, params, indices, *_):
    axis, batch = _gather_params(ctx)
    return take(params, indices, axis, batch, ctx.out().shape)


def _gather_kernel(ctx, params, indices, *axis):
    axis, batch = _gather_params(ctx, axis[0] if axis else None)
    lead = params.shape[:batch]
    rows = [np.take(params[b], indices[b], axis - batch) for b in np.ndindex(*lead)]
    out = np.stack(rows).reshape(lead + rows[0].shape) if lead else rows[0]
    return as_out(ctx, out)


register("GatherV2", infer=_gather_infer, attrs=("Tparams", "Tindices", "Taxis", "batch_dims"),
         const_inputs=(2,), lower=_gather_lower, kernel=_gather_kernel)
register("Gather", infer=_gather_infer, attrs=("Tparams", "Tindices", "validate_indices"),
         lower=_gather_lower, kernel=_gather_kernel)


def _gather_nd_infer(ctx):
    p, ind = ctx.inputs
    if p.shape is None or ind.shape is None or ind.shape[-1] is None:
        return [out_spec(ctx, None)]
    k = ind.shape[-1]
    if k > p.rank:
        raise ctx.error(f"indices.shape[-1] = {k} must be <= params rank {p.rank}")
    return [out_spec(ctx, ind.shape[:-1] + p.shape[k:])]


def _gather_nd_lower(ctx, params, indices):
    pshape, ishape = hlo.shape_of(params), hlo.shape_of(indices)
    k, batch_rank = ishape[-1], len(ishape) - 1
    return hlo.gather(params, indices, ctx.out().shape,
                      offset_dims=list(range(batch_rank, batch_rank + len(pshape) - k)),
                      collapsed_slice_dims=list(range(k)), start_index_map=list(range(k)),
                      index_vector_dim=batch_rank, slice_sizes=[1] * k + pshape[k:])


def _gather_nd_kernel(ctx, params, indices):
    k = indices.shape[-1]
    return as_out(ctx, params[tuple(indices[..., i] for i in range(k))])


register("GatherNd", infer=_gather_nd_infer, attrs=("Tparams", "Tindices", "bad_indices_policy"),
         lower=_gather_nd_lower, kernel=_gather_nd_kernel)


# -- DynamicStitch ---------------------------------------------------------------------------------
# Inputs: N index tensors, then N data tensors. merged[indices[m][i]] = data[m][i], later
# pairs winning; the indices must be constants. Lowered as one gather from the concatenation
# of the flattened data (plus a zero row for positions no index names).

def _stitch_parts(ctx):
    n = len(ctx.inputs) // 2
    return list(range(n)), list(range(n, 2 * n))


def _stitch_infer(ctx):
    idx_in, data_in = _stitch_parts(ctx)
    first_idx, first_data = ctx.inputs[idx_in[0]], ctx.inputs[data_in[0]]
    rest = None
    if first_idx.shape is not None and first_data.shape is not None:
        rest = first_data.shape[first_idx.rank:]
    values = [value_of(ctx, i) for i in idx_in]
    size = None if any(v is None for v in values) else max(
        [int(v.max()) + 1 for v in values if v.size], default=0)
    return [out_spec(ctx, None if rest is None else (size,) + rest, data_in[0])]


def _stitch_sources(values) -> tuple[np.ndarray, int]:
    """For each output row, its row in the concatenated flattened data (-1: none)."""
    flat = [np.ravel(v) for v in values]
    size = max([int(f.max()) + 1 for f in flat if f.size], default=0)
    source = np.full(size, -1, np.int64)
    offset = 0
    for f in flat:
        source[f] = offset + np.arange(f.size)  # assignment order: later entries win
        offset += f.size
    return source, offset


def _stitch_lower(ctx, *operands):
    idx_in, data_in = _stitch_parts(ctx)
    source, total = _stitch_sources([ctx.const(i) for i in idx_in])
    out_shape = list(ctx.out().shape)
    rest = out_shape[1:]
    rows = [hlo.reshape(operands[d], [num_elements(ctx.inputs[i].shape)] + rest)
            for i, d in zip(idx_in, data_in)]
    rows.append(hlo.splat(0, [1] + rest, ctx.out().dtype))
    table = hlo.concatenate(rows, 0)
    picks = hlo.constant(np.where(source < 0, total, source).astype(np.int32))
    return take(table, picks, 0, 0, out_shape)


def _stitch_kernel(ctx, *arrays):
    idx_in, data_in = _stitch_parts(ctx)
    first = arrays[idx_in[0]]
    rest = arrays[data_in[0]].shape[first.ndim:]
    source, total = _stitch_sources([arrays[i] for i in idx_in])
    table = np.concatenate([arrays[d].reshape((-1,) + rest) for d in data_in]
                           + [np.zeros((1,) + rest, arrays[data_in[0]].dtype)])
    return as_out(ctx, table[np.where(source < 0, total, source)])


for _op in ("DynamicStitch", "ParallelDynamicStitch"):
    register(_op, infer=_stitch_infer, attrs=("T", "N"), lower=_stitch_lower, kernel=_stitch_kernel)


# -- ScatterNd, TensorScatter* ------------------------------------------------------------------------

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
