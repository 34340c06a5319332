"""Joining and splitting along an axis: Concat, ConcatV2, Pack, Unpack, Split, SplitV."""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ...spec import TensorSpec
from ..helpers import as_out, ints, merge_dims, normalize_axis, out_spec, reshape_to_out, value_of
from ..registry import register



# -- Concat, ConcatV2, Pack, Unpack ---------------------------------------------------------------
# ConcatV2's axis is its last input, whose index depends on N: it cannot be listed in
# const_inputs, so the lowering receives it as a (constant) Value and reads ctx.const instead.

def _concat_layout(ctx):
    """(indices of the value inputs, index of the axis input)."""
    n = len(ctx.inputs) - 1
    return (list(range(n)), n) if ctx.op == "ConcatV2" else (list(range(1, n + 1)), 0)

def _concat_infer(ctx):
    parts, axis_input = _concat_layout(ctx)
    specs = [ctx.inputs[i] for i in parts]
    ranked = [s for s in specs if s.shape is not None]
    if not ranked:
        return [out_spec(ctx, None, parts[0])]
    rank = ranked[0].rank
    axis = value_of(ctx, axis_input)
    if axis is None:
        return [out_spec(ctx, (None,) * rank, parts[0])]
    axis = normalize_axis(ctx, ints(axis)[0], rank)
    shape = []
    for d in range(rank):
        dims = [s.shape[d] if s.shape is not None else None for s in specs]
        if d == axis:
            shape.append(None if None in dims else sum(dims))
        else:
            shape.append(merge_dims(ctx, *dims))
    return [out_spec(ctx, shape, parts[0])]


def _concat_axis(ctx, rank):
    _, axis_input = _concat_layout(ctx)
    return normalize_axis(ctx, ints(ctx.const(axis_input))[0], rank)


def _concat_lower(ctx, *operands):
    parts, _ = _concat_layout(ctx)
    values = [operands[i] for i in parts]
    return hlo.concatenate(values, _concat_axis(ctx, len(hlo.shape_of(values[0]))))


def _concat_kernel(ctx, *arrays):
    parts, axis_input = _concat_layout(ctx)
    values = [arrays[i] for i in parts]
    axis = normalize_axis(ctx, ints(arrays[axis_input])[0], values[0].ndim)
    return as_out(ctx, np.concatenate(values, axis))


register("ConcatV2", infer=_concat_infer, attrs=("T", "N", "Tidx"), lower=_concat_lower,
         kernel=_concat_kernel)
register("Concat", infer=_concat_infer, attrs=("T", "N"), const_inputs=(0,), lower=_concat_lower,
         kernel=_concat_kernel)


def _pack_infer(ctx):
    shapes = [s.shape for s in ctx.inputs if s.shape is not None]
    if not shapes:
        return [out_spec(ctx, None)]
    shape = [merge_dims(ctx, *dims) for dims in zip(*shapes)]
    axis = normalize_axis(ctx, ctx.attr("axis", 0), len(shape) + 1)
    return [out_spec(ctx, shape[:axis] + [len(ctx.inputs)] + shape[axis:])]


def _pack_lower(ctx, *xs):
    out = list(ctx.out().shape)
    axis = normalize_axis(ctx, ctx.attr("axis", 0), len(out))
    return hlo.concatenate([hlo.reshape(x, out[:axis] + [1] + out[axis + 1:]) for x in xs], axis)


register("Pack", infer=_pack_infer, attrs=("T", "N", "axis"), lower=_pack_lower,
         kernel=lambda ctx, *xs: np.stack(xs, normalize_axis(ctx, ctx.attr("axis", 0), xs[0].ndim + 1)))


def _unpack_infer(ctx):
    x, num = ctx.inputs[0], ctx.attr("num")
    if x.shape is None:
        return [out_spec(ctx, None)] * num
    axis = normalize_axis(ctx, ctx.attr("axis", 0), x.rank)
    if x.shape[axis] not in (None, num):
        raise ctx.error(f"num={num} but dimension {axis} of {x} has size {x.shape[axis]}")
    return [out_spec(ctx, x.shape[:axis] + x.shape[axis + 1:])] * num


def _unpack_lower(ctx, x):
    shape = hlo.shape_of(x)
    axis = normalize_axis(ctx, ctx.attr("axis", 0), len(shape))
    outs = []
    for i in range(ctx.attr("num")):
        start = [0] * len(shape)
        start[axis] = i
        limit = shape[:axis] + [i + 1] + shape[axis + 1:]
        outs.append(reshape_to_out(ctx, hlo.slice(x, start, limit), i))
    return outs


register("Unpack", infer=_unpack_infer, attrs=("T", "num", "axis"), lower=_unpack_lower,
         kernel=lambda ctx, x: [np.take(x, i, normalize_axis(ctx, ctx.attr("axis", 0), x.ndim))
                                for i in range(ctx.attr("num"))])


# -- Split, SplitV ----------------------------------------------------------------------------------
# layout: op -> (value input, axis input, size_splits input or None)
SPLITS = {"Split": (1, 0, None), "SplitV": (0, 2, 1)}


def _split_sizes(ctx, dim, sizes_value):
    """Sizes of the pieces (None where unknown), resolving SplitV's one -1."""
    n = ctx.attr("num_split")
    if sizes_value is None:  # Split: equal pieces
        if dim is not None and dim % n:
            raise ctx.error(f"dimension of size {dim} does not split into {n} equal pieces")
        return [None if dim is None else dim // n] * n
    sizes = ints(sizes_value)
    if len(sizes) != n or sizes.count(-1) > 1:
        raise ctx.error(f"size_splits {sizes} must have num_split={n} entries, at most one -1")
    if -1 in sizes:
        rest = dim - sum(s for s in sizes if s != -1) if dim is not None else None
        sizes = [rest if s == -1 else s for s in sizes]
    return sizes


def _split_plan(ctx, x_shape):
    """(axis, sizes) from constant inputs, or None when the axis is not known."""
    x_in, axis_in, sizes_in = SPLITS[ctx.op]
    axis = value_of(ctx, axis_in)
    if axis is None or x_shape is None:
        return None
    axis = normalize_axis(ctx, ints(axis)[0], len(x_shape))
    sizes_value = None
    if sizes_in is not None:
        sizes_value = value_of(ctx, sizes_in)
        if sizes_value is None:
            return axis, [None] * ctx.attr("num_split")
    return axis, _split_sizes(ctx, x_shape[axis], sizes_value)


def _split_infer(ctx):
    x = ctx.inputs[SPLITS[ctx.op][0]]
    n = ctx.attr("num_split")
    plan = _split_plan(ctx, x.shape)
    if plan is None:
        return [out_spec(ctx, None if x.shape is None else (None,) * x.rank, dtype=x.dtype)] * n
    axis, sizes = plan
    return [TensorSpec(x.dtype, x.shape[:axis] + (s,) + x.shape[axis + 1:]) for s in sizes]


def _split_lower(ctx, *operands):
    x = operands[SPLITS[ctx.op][0]]
    shape = hlo.shape_of(x)
    axis, sizes = _split_plan(ctx, tuple(shape))
    outs, offset = [], 0
    for s in sizes:
        start = [0] * len(shape)
        start[axis] = offset
        outs.append(hlo.slice(x, start, shape[:axis] + [offset + s] + shape[axis + 1:]))
        offset += s
    return outs


def _split_kernel(ctx, *arrays):
    x_in, axis_in, sizes_in = SPLITS[ctx.op]
    x = arrays[x_in]
    axis = normalize_axis(ctx, ints(arrays[axis_in])[0], x.ndim)
    sizes = _split_sizes(ctx, x.shape[axis], None if sizes_in is None else arrays[sizes_in])
    return np.split(x, np.cumsum(sizes)[:-1], axis)


register("Split", infer=_split_infer, attrs=("T", "num_split"), const_inputs=(0,),
         lower=_split_lower, kernel=_split_kernel)
register("SplitV", infer=_split_infer, attrs=("T", "num_split", "Tlen"), const_inputs=(1, 2),
         lower=_split_lower, kernel=_split_kernel)
