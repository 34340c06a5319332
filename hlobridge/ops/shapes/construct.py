"""Tensors built from a shape or an index: Tile, BroadcastTo, Fill, Range, OneHot."""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import dynamic_shapes
from hlobridge.dialects import stablehlo as hlo
from hlobridge.dialects.dynamic_shapes import DynamicDimError

from ... import dtypes
from ...spec import TensorSpec
from ..helpers import (as_out, broadcast_shapes, ints, normalize_axis, out_spec, reshape_to_out,
                       unknown_vector_dims, value_of)
from ..registry import register
from ..traced import Traced
from ...analysis.symbolic_dims import shape_from
from ..typesets import SIGNED_NUMBER



# -- Tile, BroadcastTo, Fill, Range ---------------------------------------------------------------

def _tile_infer(ctx):
    x, multiples = ctx.inputs[0], value_of(ctx, 1)
    if multiples is None:
        return [out_spec(ctx, None if x.shape is None else (None,) * x.rank)]
    m = ints(multiples)
    if x.shape is not None and len(m) != x.rank:
        raise ctx.error(f"multiples {m} must have one entry per dimension of {x}")
    shape = x.shape if x.shape is not None else (None,) * len(m)
    return [out_spec(ctx, [None if d is None else d * k for d, k in zip(shape, m)])]


def _tile_lower(ctx, x, _):
    shape, m = hlo.shape_of(x), ints(ctx.const(1))
    # [m0, d0, m1, d1, ...] with x on the odd dims, then merge each pair.
    wide = [v for pair in zip(m, shape) for v in pair]
    return reshape_to_out(ctx, hlo.broadcast_in_dim(x, wide, range(1, 2 * len(shape), 2)))


register("Tile", infer=_tile_infer, attrs=("T", "Tmultiples"), const_inputs=(1,), lower=_tile_lower,
         kernel=lambda ctx, x, m: np.tile(x, ints(m)))


def _sized(x, shape, dims, vector):
    """x broadcast to `shape`; `?`s sized by the run-time shape `vector` where it is a Value."""
    if vector is None or None not in shape:
        return hlo.broadcast_in_dim(x, shape, dims)
    return dynamic_shapes.broadcast_in_dim(x, shape, dims, dynamic_shapes.vector_sizes(vector, shape))


def _broadcast_to_infer(ctx):
    x, target = ctx.inputs[0], value_of(ctx, 1)
    if target is None and ctx.inputs[1].partial is not None:  # a shape from tf.shape(x): ? entries
        return [out_spec(ctx, shape_from(ctx.inputs[1]))]
    if target is None:
        return [out_spec(ctx, unknown_vector_dims(ctx, 1))]
    target = tuple(ints(target))
    if x.shape is not None and broadcast_shapes(ctx, x.shape, target) != target:
        raise ctx.error(f"cannot broadcast {x} to {list(target)}")
    return [out_spec(ctx, target)]


def _broadcast_to_lower(ctx, x, shape=None):
    out = ctx.out().shape
    rank = len(hlo.shape_of(x))
    return _sized(x, out, range(len(out) - rank, len(out)), shape) if hlo.shape_of(x) != list(out) else x


register("BroadcastTo", infer=_broadcast_to_infer, attrs=("T", "Tidx"), const_inputs=(1,), dynamic_inputs=(1,),
         lower=_broadcast_to_lower,
         kernel=lambda ctx, x, shape: np.broadcast_to(x, ints(shape)).copy())


def _fill_infer(ctx):
    dims = value_of(ctx, 0)
    shape = unknown_vector_dims(ctx, 0) if dims is None else ints(dims)
    if dims is None and ctx.inputs[0].partial is not None:  # tf.fill(tf.shape(x), v): ? entries
        shape = shape_from(ctx.inputs[0])
    return [out_spec(ctx, shape, 1)]


register("Fill", infer=_fill_infer, attrs=("T", "index_type"), const_inputs=(0,), dynamic_inputs=(0,),
         lower=lambda ctx, dims, v: _sized(v, ctx.out().shape, [], dims),
         kernel=lambda ctx, dims, v: np.full(ints(dims), v, ctx.out().dtype))


def _range_size(ctx, start, limit, delta) -> int:
    start, limit, delta = (np.ravel(v)[0] for v in (start, limit, delta))
    if delta == 0:
        raise ctx.error("delta must not be 0")
    if (delta > 0 and start > limit) or (delta < 0 and start < limit):
        raise ctx.error(f"start {start} cannot reach limit {limit} with delta {delta}")
    if dtypes.is_integer(np.asarray(start).dtype):
        return int((abs(int(limit) - int(start)) + abs(int(delta)) - 1) // abs(int(delta)))
    return int(np.ceil(abs((float(limit) - float(start)) / float(delta))))


def _range_infer(ctx):
    dtype = np.dtype(ctx.attr("Tidx", ctx.inputs[0].dtype))
    values = [value_of(ctx, i) for i in range(3)]
    size = None if any(v is None for v in values) else _range_size(ctx, *values)
    return [TensorSpec(dtype, (size,))]


def _range_lower(ctx, _start, limit, _delta):
    dtype, (n,) = ctx.out().dtype, ctx.out().shape
    start, delta = (np.ravel(ctx.const(i))[0] for i in (0, 2))
    if n is None:  # a limit known at run time (tf.range(tf.shape(x)[1])): a dynamic_iota
        return _runtime_range(limit, start, delta, dtype)
    steps = hlo.multiply(hlo.iota([n], dtype, 0), hlo.splat(delta, [n], dtype))
    return hlo.add(steps, hlo.splat(start, [n], dtype))


def _runtime_range(limit, start, delta, dtype):
    """start, start + delta, ... below a run-time integer `limit`, as dynamic_iota * delta + start."""
    dtype = np.dtype(dtype)
    if not dtypes.is_integer(dtype) or delta <= 0:
        raise DynamicDimError("a Range with a run-time limit needs an integer type and a positive delta")
    c = lambda v: hlo.constant(np.asarray(v, dtype))  # noqa: E731
    span = hlo.binary("maximum", hlo.binary("subtract", hlo.reshape(limit, []), c(start)), c(0))
    count = hlo.binary("divide", hlo.binary("add", span, c(delta - 1)), c(delta))
    size = hlo.convert(count, np.int32)
    steps = dynamic_shapes.iota([None], hlo.element_type(dtype), 0, {0: size})
    return (Traced(steps, dtype) * dtype.type(delta) + dtype.type(start)).value


def _range_kernel(ctx, start, limit, delta):
    dtype = ctx.out().dtype
    n = _range_size(ctx, start, limit, delta)
    return np.arange(n).astype(dtype) * np.ravel(delta)[0].astype(dtype) + np.ravel(start)[0].astype(dtype)


register("Range", infer=_range_infer, attrs=("Tidx",), const_inputs=(0, 1, 2), dynamic_inputs=(1,),
         dtypes=SIGNED_NUMBER, dtype_attrs=("Tidx",),
         lower=_range_lower, kernel=_range_kernel)


# -- OneHot -------------------------------------------------------------------------------------------

def _one_hot_infer(ctx):
    ind, depth = ctx.inputs[0], value_of(ctx, 1)
    if ind.shape is None:
        return [out_spec(ctx, None, 2)]
    axis = normalize_axis(ctx, ctx.attr("axis", -1), ind.rank + 1)
    d = None if depth is None else ints(depth)[0]
    return [out_spec(ctx, ind.shape[:axis] + (d,) + ind.shape[axis:], 2)]


def _one_hot_lower(ctx, indices, _d, on, off):
    shape = list(ctx.out().shape)
    axis = normalize_axis(ctx, ctx.attr("axis", -1), len(shape))
    kept = [i for i in range(len(shape)) if i != axis]
    spread = hlo.broadcast_in_dim(indices, shape, kept)
    with dynamic_shapes.dim_sources([spread]):  # `?` sizes from the result's own shape, not aligned
        hot = hlo.compare("EQ", spread, hlo.iota(shape, ctx.inputs[0].dtype, axis))  # to the indices'
        return hlo.select(hot, hlo.broadcast_in_dim(on, shape, []), hlo.broadcast_in_dim(off, shape, []))


def _one_hot_kernel(ctx, indices, depth, on, off):
    axis = normalize_axis(ctx, ctx.attr("axis", -1), indices.ndim + 1)
    positions = np.arange(ints(depth)[0]).reshape((-1,) + (1,) * (indices.ndim - axis))
    hot = np.expand_dims(indices, axis) == positions
    return as_out(ctx, np.where(hot, on, off))


register("OneHot", infer=_one_hot_infer, attrs=("T", "TI", "axis"), const_inputs=(1,),
         lower=_one_hot_lower, kernel=_one_hot_kernel)
