"""XlaGather and XlaScatter: XLA's general gather and scatter, with their dimension numbers as
serialized GatherDimensionNumbers / ScatterDimensionNumbers (protos.py) and XlaScatter's update
computation as a library function (tf2xla/kernels/gather_scatter_ops.cc).

Both are StableHLO's gather and scatter with the same dimension numbers. The kernels follow
XLA's operation semantics: a gather start is clamped so the slice fits the operand; a scatter
update whose window does not fit is skipped (both written out in the lowerings too: IREE reads
and writes out of bounds there); scatter applies the update computation element by
element (in index order, which is the order XLA's CPU backend uses for duplicates).
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ..helpers import ints, out_spec, value_of
from ..registry import register
from . import protos
from .common import check_results, region_body, scalar_call


def _dims(ctx, schema):
    try:
        return protos.parse(ctx.attr("dimension_numbers"), schema)
    except protos.ProtoError as e:
        raise ctx.error(f"dimension_numbers is not a serialized XLA proto: {e}") from None


def _batch_position(dim: int, index_vector_dim: int) -> int:
    """The position of indices dimension `dim` among the batch dims (the index vector's removed)."""
    return dim if dim < index_vector_dim else dim - 1


def _index_rows(indices, index_vector_dim: int):
    """indices with the index vector last (an implicit trailing 1 when index_vector_dim == rank)."""
    indices = np.asarray(indices)
    if index_vector_dim == indices.ndim:
        return indices[..., None]
    return np.moveaxis(indices, index_vector_dim, -1)


def _starts(rank, row, batch_index, index_map, batching_pairs, index_vector_dim) -> list[int]:
    start = [0] * rank
    for k, dim in enumerate(index_map):
        start[dim] = int(row[k])
    for operand_dim, indices_dim in batching_pairs:
        start[operand_dim] = batch_index[_batch_position(indices_dim, index_vector_dim)]
    return start


# -- XlaGather(operand, start_indices, slice_sizes) -------------------------------------------------

def _gather_shape(ctx, dn, operand_rank, indices_shape, sizes):
    ivd = dn["index_vector_dim"]
    batch = [d for i, d in enumerate(indices_shape) if i != ivd]
    dropped = set(dn["collapsed_slice_dims"]) | set(dn["operand_batching_dims"])
    offsets = [sizes[i] for i in range(operand_rank) if i not in dropped]
    if len(offsets) != len(dn["offset_dims"]):
        raise ctx.error(f"offset_dims {dn['offset_dims']} do not match the {len(offsets)} slice dimension(s) kept")
    shape, b, o = [], iter(batch), iter(offsets)
    for d in range(len(batch) + len(offsets)):
        shape.append(next(o) if d in dn["offset_dims"] else next(b))
    return shape


def _gather_infer(ctx):
    dn = _dims(ctx, protos.GATHER)
    operand, indices, sizes = ctx.inputs[0], ctx.inputs[1], value_of(ctx, 2)
    if operand.shape is None or indices.shape is None or sizes is None:
        return [out_spec(ctx, None)]
    sizes = ints(sizes)
    if len(sizes) != operand.rank:
        raise ctx.error(f"slice_sizes {sizes} must have one entry per operand dimension ({operand.rank})")
    return [out_spec(ctx, _gather_shape(ctx, dn, operand.rank, indices.shape, sizes))]


def _index_components(ctx, indices, ivd: int):
    """(indices with an explicit index vector dim, that dim, the shape of one component, and a
    function returning component k)."""
    shape = list(ctx.inputs[1].shape)
    if ivd == len(shape):  # an implicit trailing index vector of one
        indices, shape = hlo.reshape(indices, shape + [1]), shape + [1]
    one = list(shape)
    one[ivd] = 1

    def component(k):
        return hlo.slice(indices, [k if i == ivd else 0 for i in range(len(shape))],
                         [k + 1 if i == ivd else s for i, s in enumerate(shape)])
    return indices, ivd, one, component


def _clamped_starts(ctx, dn, indices, sizes):
    """XLA clamps a gather's start so that the slice fits; StableHLO says so too, but IREE reads
    out of bounds, so the lowering clamps the indices itself."""
    indices, ivd, one, component = _index_components(ctx, indices, dn["index_vector_dim"])
    dtype, shape = ctx.inputs[1].dtype, ctx.inputs[0].shape
    parts = [hlo.clamp(hlo.splat(0, one, dtype), component(k), hlo.splat(shape[d] - sizes[d], one, dtype))
             for k, d in enumerate(dn["start_index_map"])]
    return (hlo.concatenate(parts, ivd) if parts else indices), ivd


def _gather_lower(ctx, operand, indices, _sizes):
    dn, sizes = _dims(ctx, protos.GATHER), ints(ctx.const(2))
    indices, ivd = _clamped_starts(ctx, dn, indices, sizes)
    return hlo.gather(operand, indices, ctx.out().shape, offset_dims=dn["offset_dims"],
                      collapsed_slice_dims=dn["collapsed_slice_dims"], start_index_map=dn["start_index_map"],
                      index_vector_dim=ivd, slice_sizes=sizes,
                      operand_batching_dims=dn["operand_batching_dims"],
                      start_indices_batching_dims=dn["start_indices_batching_dims"])


def _gather_kernel(ctx, operand, indices, sizes):
    dn, sizes = _dims(ctx, protos.GATHER), ints(sizes)
    ivd = dn["index_vector_dim"]
    rows = _index_rows(indices, ivd)
    out = np.empty(ctx.out().shape, operand.dtype)
    batch_positions = [d for d in range(out.ndim) if d not in dn["offset_dims"]]
    dropped = set(dn["collapsed_slice_dims"]) | set(dn["operand_batching_dims"])
    kept = [sizes[i] for i in range(operand.ndim) if i not in dropped]
    pairs = list(zip(dn["operand_batching_dims"], dn["start_indices_batching_dims"]))
    for g in np.ndindex(rows.shape[:-1]):
        start = _starts(operand.ndim, rows[g], g, dn["start_index_map"], pairs, ivd)
        start = [min(max(s, 0), d - z) for s, d, z in zip(start, operand.shape, sizes)]
        piece = operand[tuple(slice(s, s + z) for s, z in zip(start, sizes))].reshape(kept)
        where = [slice(None)] * out.ndim
        for pos, i in zip(batch_positions, g):
            where[pos] = i
        out[tuple(where)] = piece
    return out


register("XlaGather", infer=_gather_infer, lower=_gather_lower, kernel=_gather_kernel,
         attrs=("dimension_numbers", "indices_are_sorted", "T", "Tindices"), const_inputs=(2,))


# -- XlaScatter(operand, scatter_indices, updates) ------------------------------------------------------

def _scatter_infer(ctx):
    _dims(ctx, protos.SCATTER)
    dtype = ctx.inputs[0].dtype
    check_results(ctx, "update_computation", [dtype, dtype], 1)
    return [ctx.inputs[0]]


def _window_sizes(dn, operand_rank: int, updates_shape) -> list[int]:
    """The update window's size along each operand dimension (1 where a dimension is inserted)."""
    skipped = set(dn["inserted_window_dims"]) | set(dn["input_batching_dims"])
    window = [1] * operand_rank
    for od, ud in zip([i for i in range(operand_rank) if i not in skipped], dn["update_window_dims"]):
        window[od] = updates_shape[ud]
    return window


def _in_bounds_scatter(ctx, dn, operand, indices):
    """(padded operand, indices) such that StableHLO's scatter does what XLA's does with a window
    that does not fit: skip it. StableHLO leaves that to the implementation, and IREE writes out
    of bounds (garbage, or a crash). The operand gets a high margin as wide as the window on each
    indexed dimension, and a window that does not fit is sent there whole (every indexed component
    set to its dimension's size); the caller slices the margin off."""
    shape = ctx.inputs[0].shape
    window = _window_sizes(dn, len(shape), ctx.inputs[2].shape)
    dims = dn["scatter_dims_to_operand_dims"]
    indices, ivd, one, component = _index_components(ctx, indices, dn["index_vector_dim"])
    parts, valid, dtype = [], None, ctx.inputs[1].dtype
    for k, d in enumerate(dims):
        comp = component(k)
        fits = hlo.binary("and", hlo.compare("GE", comp, hlo.splat(0, one, dtype)),
                          hlo.compare("LE", comp, hlo.splat(shape[d] - window[d], one, dtype)))
        valid = fits if valid is None else hlo.binary("and", valid, fits)
        parts.append((comp, d))
    fixed = [hlo.select(valid, comp, hlo.splat(shape[d], one, dtype)) for comp, d in parts]
    indices = hlo.concatenate(fixed, ivd) if fixed else indices
    margin = [window[d] if d in dims else 0 for d in range(len(shape))]
    padded = hlo.pad(operand, hlo.constant(np.zeros((), ctx.inputs[0].dtype)), [0] * len(shape), margin)
    return padded, indices, ivd


def _scatter_lower(ctx, operand, indices, updates):
    dn, dtype = _dims(ctx, protos.SCATTER), ctx.inputs[0].dtype
    body = region_body(ctx, "update_computation", [dtype, dtype])
    padded, indices, ivd = _in_bounds_scatter(ctx, dn, operand, indices)
    shape = list(ctx.inputs[0].shape)
    return hlo.slice(_scatter(ctx, dn, body, padded, indices, updates, ivd), [0] * len(shape), shape)


def _scatter(ctx, dn, body, operand, indices, updates, ivd):
    return hlo.scatter(operand, indices, updates, update_window_dims=dn["update_window_dims"],
                       inserted_window_dims=dn["inserted_window_dims"],
                       scatter_dims_to_operand_dims=dn["scatter_dims_to_operand_dims"],
                       index_vector_dim=ivd, op=lambda a, b: body(a, b)[0],
                       input_batching_dims=dn["input_batching_dims"],
                       scatter_indices_batching_dims=dn["scatter_indices_batching_dims"],
                       indices_are_sorted=bool(ctx.attr("indices_are_sorted", False)))


def _scatter_kernel(ctx, operand, indices, updates):
    dn = _dims(ctx, protos.SCATTER)
    combine = scalar_call(ctx, "update_computation")
    ivd, window_dims = dn["index_vector_dim"], dn["update_window_dims"]
    rows = _index_rows(indices, ivd)
    out = np.array(operand, copy=True)
    scatter_dims = [d for d in range(updates.ndim) if d not in window_dims]
    skipped = set(dn["inserted_window_dims"]) | set(dn["input_batching_dims"])
    window_operand_dims = [i for i in range(out.ndim) if i not in skipped]
    window = _window_sizes(dn, out.ndim, updates.shape)
    pairs = list(zip(dn["input_batching_dims"], dn["scatter_indices_batching_dims"]))
    for u in np.ndindex(updates.shape):
        g = tuple(u[d] for d in scatter_dims)
        start = _starts(out.ndim, rows[g], g, dn["scatter_dims_to_operand_dims"], pairs, ivd)
        if any(not 0 <= s <= d - w for s, d, w in zip(start, out.shape, window)):
            continue  # XLA skips an update whose window does not fit
        full = list(start)
        for od, ud in zip(window_operand_dims, window_dims):
            full[od] += u[ud]
        full = tuple(full)
        out[full] = combine(out[full], updates[u])[0]
    return out


register("XlaScatter", infer=_scatter_infer, lower=_scatter_lower, kernel=_scatter_kernel,
         attrs=("update_computation", "dimension_numbers", "indices_are_sorted", "T", "Tindices"))
