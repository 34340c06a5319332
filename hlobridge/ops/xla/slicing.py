"""tf2xla's slicing ops: XlaDynamicSlice, XlaDynamicUpdateSlice, XlaPad, and the SPMD
helpers XlaSplitND / XlaConcatND (tf2xla/kernels/dynamic_slice_ops.cc, pad_op.cc,
sharding_util_ops.cc).

Keras 3's TensorFlow backend writes `keras.ops.slice_update` as XlaDynamicUpdateSlice, and
keras-hub's attention caches call it once per layer and decoding step: the op is the KV cache's
write. XLA clamps a start index into [0, dim - size] (no error, no wrap): StableHLO's dynamic
ops clamp the same way, and the kernels here clamp as XLA does.
"""

from __future__ import annotations

import itertools

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ..helpers import ints, out_spec, value_of
from ..registry import register
from .common import index_scalars


def _clamped(starts, dims, sizes) -> list[int]:
    """XLA's rule for a start index: clamped into [0, dim - size]."""
    return [int(min(max(int(s), 0), d - z)) for s, d, z in zip(np.asarray(starts).reshape(-1), dims, sizes)]


def _check_rank(ctx, i: int, what: str) -> None:
    x, vec = ctx.inputs[0], ctx.inputs[i]
    if x.shape is not None and vec.shape is not None and vec.shape not in ((x.rank,), (None,)):
        raise ctx.error(f"{what} must be a vector of {x.rank} element(s) (one per dimension of the input), "
                        f"got {vec}")


# -- XlaDynamicSlice(input, start_indices, size_indices) ------------------------------------------

def _dynamic_slice_infer(ctx):
    _check_rank(ctx, 1, "start_indices")
    sizes = value_of(ctx, 2)
    x = ctx.inputs[0]
    if sizes is None:
        return [out_spec(ctx, None if x.shape is None else (None,) * x.rank)]
    sizes = ints(sizes)
    if x.shape is not None:
        if len(sizes) != x.rank:
            raise ctx.error(f"size_indices has {len(sizes)} element(s) for an input of rank {x.rank}")
        bad = [(z, d) for z, d in zip(sizes, x.shape) if d is not None and not 0 <= z <= d]
        if bad:
            raise ctx.error(f"slice size {bad[0][0]} is out of range for a dimension of size {bad[0][1]}")
    return [out_spec(ctx, sizes)]


def _dynamic_slice_lower(ctx, x, starts, _sizes):
    sizes = ints(ctx.const(2))
    return hlo.dynamic_slice(x, index_scalars(starts, len(sizes)), sizes)


def _dynamic_slice_kernel(ctx, x, starts, sizes):
    sizes = ints(sizes)
    begin = _clamped(starts, x.shape, sizes)
    return x[tuple(slice(b, b + z) for b, z in zip(begin, sizes))].copy()


register("XlaDynamicSlice", infer=_dynamic_slice_infer, lower=_dynamic_slice_lower, kernel=_dynamic_slice_kernel,
         attrs=("T", "Tindices"), const_inputs=(2,))


# -- XlaDynamicUpdateSlice(input, update, indices) -------------------------------------------------

def _dynamic_update_infer(ctx):
    x, update = ctx.inputs[0], ctx.inputs[1]
    _check_rank(ctx, 2, "indices")
    if x.shape is not None and update.shape is not None:
        if update.rank != x.rank:
            raise ctx.error(f"update {update} must have the input's rank {x.rank}")
        bad = [(u, d) for u, d in zip(update.shape, x.shape) if None not in (u, d) and u > d]
        if bad:
            raise ctx.error(f"update dimension {bad[0][0]} is larger than the input's {bad[0][1]}")
    return [out_spec(ctx, x.shape)]


def _dynamic_update_lower(ctx, x, update, indices):
    return hlo.dynamic_update_slice(x, update, index_scalars(indices, ctx.inputs[0].rank))


def _dynamic_update_kernel(ctx, x, update, indices):
    begin = _clamped(indices, x.shape, update.shape)
    out = np.array(x, copy=True)
    out[tuple(slice(b, b + z) for b, z in zip(begin, update.shape))] = update
    return out


register("XlaDynamicUpdateSlice", infer=_dynamic_update_infer, lower=_dynamic_update_lower,
         kernel=_dynamic_update_kernel, attrs=("T", "Tindices"))


# -- XlaPad(input, padding_value, padding_low, padding_high, padding_interior) ---------------------

def _pad_amounts(ctx):
    low, high, interior = (ints(ctx.const(i)) for i in (2, 3, 4))
    if len({len(low), len(high), len(interior)}) != 1 or (ctx.inputs[0].shape is not None
                                                          and len(low) != ctx.inputs[0].rank):
        raise ctx.error(f"padding_low/high/interior must have one element per input dimension, "
                        f"got {len(low)}, {len(high)}, {len(interior)}")
    if any(i < 0 for i in interior):
        raise ctx.error(f"interior padding must not be negative, got {interior}")
    return low, high, interior


def _padded_dim(d, lo, hi, it):
    return None if d is None else d + lo + hi + max(d - 1, 0) * it


def _pad_infer(ctx):
    x = ctx.inputs[0]
    if any(value_of(ctx, i) is None for i in (2, 3, 4)):
        return [out_spec(ctx, None if x.shape is None else (None,) * x.rank)]
    low, high, interior = _pad_amounts(ctx)
    if x.shape is None:
        return [out_spec(ctx, (None,) * len(low))]
    shape = [_padded_dim(d, lo, hi, it) for d, lo, hi, it in zip(x.shape, low, high, interior)]
    if any(d is not None and d < 0 for d in shape):
        raise ctx.error(f"negative padding crops more than the input's {x.shape}")
    return [out_spec(ctx, shape)]


def _pad_lower(ctx, x, value, *_):
    return hlo.pad(x, value, *_pad_amounts(ctx))


def _pad_kernel(ctx, x, value, low, high, interior):
    """XLA's pad: interior padding between elements, then edges; a negative edge crops."""
    low, high, interior = _pad_amounts(ctx)
    shape = [_padded_dim(d, max(lo, 0), max(hi, 0), it) for d, lo, hi, it in zip(x.shape, low, high, interior)]
    out = np.full(shape, value, x.dtype)
    out[tuple(slice(max(lo, 0), max(lo, 0) + (d - 1) * (it + 1) + 1 if d else max(lo, 0), it + 1)
              for d, lo, it in zip(x.shape, low, interior))] = x
    return out[tuple(slice(-min(lo, 0), n + min(hi, 0)) for n, lo, hi in zip(shape, low, high))].copy()


register("XlaPad", infer=_pad_infer, lower=_pad_lower, kernel=_pad_kernel, attrs=("T", "Tindices"),
         const_inputs=(2, 3, 4))


# -- XlaSplitND / XlaConcatND: a tensor as a grid of equal shards -----------------------------------

def _grid(ctx, attr: str, rank: int) -> tuple[list[int], list[int]]:
    counts, paddings = ints(ctx.attr(attr)), ints(ctx.attr("paddings", []) or [0] * rank)
    if len(counts) != rank or len(paddings) != rank or any(c < 1 for c in counts) or any(p < 0 for p in paddings):
        raise ctx.error(f"{attr} {counts} and paddings {paddings} must have one positive (non-negative) "
                        f"entry per dimension of a rank-{rank} tensor")
    if int(np.prod(counts)) != ctx.attr("N"):
        raise ctx.error(f"{attr} {counts} makes {int(np.prod(counts))} shards, N is {ctx.attr('N')}")
    return counts, paddings


def _cells(counts, shard) -> list[tuple]:
    """Each shard's slices of the padded whole, in row-major order (TF's order)."""
    return [tuple(slice(i * s, (i + 1) * s) for i, s in zip(index, shard))
            for index in itertools.product(*(range(c) for c in counts))]


def _split_infer(ctx):
    x = ctx.inputs[0]
    if x.shape is None:
        return [out_spec(ctx, None)] * ctx.attr("N")
    counts, paddings = _grid(ctx, "num_splits", x.rank)
    shard = []
    for d, c, p in zip(x.shape, counts, paddings):
        if d is not None and (d + p) % c:
            raise ctx.error(f"a dimension of {d} (+{p} padding) does not split into {c} equal shards")
        shard.append(None if d is None else (d + p) // c)
    return [out_spec(ctx, shard)] * ctx.attr("N")


def _split_lower(ctx, x):
    counts, paddings = _grid(ctx, "num_splits", ctx.inputs[0].rank)
    rank = len(counts)
    if any(paddings):
        x = hlo.pad(x, hlo.constant(np.zeros((), ctx.inputs[0].dtype)), [0] * rank, paddings)
    shard = ctx.out(0).shape
    return [hlo.slice(x, [s.start for s in cell], [s.stop for s in cell]) for cell in _cells(counts, shard)]


def _split_kernel(ctx, x):
    counts, paddings = _grid(ctx, "num_splits", x.ndim)
    x = np.pad(x, [(0, p) for p in paddings])
    return [x[cell].copy() for cell in _cells(counts, ctx.out(0).shape)]


register("XlaSplitND", infer=_split_infer, lower=_split_lower, kernel=_split_kernel,
         attrs=("T", "N", "num_splits", "paddings"), output_args=("outputs",))


def _concat_infer(ctx):
    shapes = [s.shape for s in ctx.inputs]
    if any(s is None for s in shapes) or len(set(shapes)) != 1 or None in shapes[0]:
        raise ctx.error(f"the shards must have one known shape, got {', '.join(str(s) for s in ctx.inputs)}")
    counts, paddings = _grid(ctx, "num_concats", len(shapes[0]))
    full = [c * s - p for c, s, p in zip(counts, shapes[0], paddings)]
    if any(d < 0 for d in full):
        raise ctx.error(f"paddings {paddings} remove more than the concatenated shape holds")
    return [out_spec(ctx, full)]


def _concat_parts(ctx, shards, join, crop):
    counts, _ = _grid(ctx, "num_concats", ctx.inputs[0].rank)
    rows = list(shards)
    for axis in reversed(range(len(counts))):  # join the innermost grid axis first
        step = counts[axis]
        rows = [join(rows[i:i + step], axis) for i in range(0, len(rows), step)]
    return crop(rows[0], ctx.out(0).shape)


def _concat_lower(ctx, *shards):
    return _concat_parts(ctx, shards, hlo.concatenate,
                         lambda x, shape: hlo.slice(x, [0] * len(shape), list(shape)))


def _concat_kernel(ctx, *shards):
    return _concat_parts(ctx, shards, lambda parts, axis: np.concatenate(parts, axis),
                         lambda x, shape: x[tuple(slice(0, d) for d in shape)].copy())


register("XlaConcatND", infer=_concat_infer, lower=_concat_lower, kernel=_concat_kernel,
         attrs=("T", "N", "num_concats", "paddings"))
