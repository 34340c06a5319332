"""Ops that keep the data and change its shape or order: Reshape, ExpandDims, Squeeze,
Transpose, InvertPermutation, Reverse/ReverseV2."""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import dynamic_shapes
from hlobridge.dialects import stablehlo as hlo

from ..helpers import (ints, normalize_axis, num_elements, out_spec, reshape_to_out, unknown_vector_dims,
                       value_of)
from ..registry import register
from ...analysis.symbolic_dims import shape_from
from .gather_scatter import scatter_in_bounds


# -- Reshape, ExpandDims, Squeeze: the data is unchanged, only the shape --------------------------

def _empty_target(shape, dims: list) -> list:
    """A target shape with a 0 and a -1: TF (reshape_op.h) sizes the -1 by the ratio of the
    non-zero dims on both sides ([2, 0] -> [-1, 0] is [2, 0]), where NumPy refuses."""
    if 0 not in dims or -1 not in dims:
        return dims
    missing = num_elements([d for d in shape if d]) // num_elements([d for d in dims if d not in (0, -1)])
    return [missing if d == -1 else d for d in dims]


def _reshape_infer(ctx):
    x = ctx.inputs[0]
    target = value_of(ctx, 1)
    if target is None and ctx.inputs[1].partial is not None:  # [b, 1568] from tf.shape(x)
        return [out_spec(ctx, _partial_target(x, shape_from(ctx.inputs[1])))]
    if target is None:
        return [out_spec(ctx, unknown_vector_dims(ctx, 1))]
    dims = ints(target)
    if dims.count(-1) > 1:
        raise ctx.error(f"shape {dims} has more than one -1")
    known = num_elements([d for d in dims if d != -1])
    if -1 in dims:
        where = dims.index(-1)
        if not x.is_static:
            dims[where] = None
        elif 0 in dims:
            dims = _empty_target(x.shape, dims)
        elif known == 0 or x.num_elements % known:
            raise ctx.error(f"cannot reshape {x} to {ints(target)}")
        else:
            dims[where] = x.num_elements // known
    elif x.is_static and x.num_elements != known:
        raise ctx.error(f"cannot reshape {x} ({x.num_elements} elements) to {dims} ({known} elements)")
    return [out_spec(ctx, dims)]


def _partial_target(x, dims: list) -> list:
    """A shape with `?` entries (symbolic_dims.py): a -1 beside them is sized where x's static
    dims divide out (x = [?, 7, 7, 32] to [?, -1]: -1 is 1568 when the `?`s are one symbol,
    taken to be so where both are the only `?`, in the same place: tf.shape(x)[0])."""
    if (-1 in dims and x.shape is not None and sum(d is None for d in x.shape) == sum(d is None for d in dims) == 1
            and x.shape.index(None) == dims.index(None)):  # (the same place: [b*s, 128] to [-1, s, 128] is not)
        have = num_elements([d for d in x.shape if d is not None])
        known = num_elements([d for d in dims if d not in (None, -1)])
        dims[dims.index(-1)] = have // known if known and have % known == 0 else None
    return [None if d == -1 else d for d in dims]


def _expand_dims_infer(ctx):
    x, axis = ctx.inputs[0], value_of(ctx, 1)
    if x.shape is None:
        return [out_spec(ctx, None)]
    if axis is None:
        return [out_spec(ctx, (None,) * (x.rank + 1))]
    a = normalize_axis(ctx, ints(axis)[0], x.rank + 1)
    return [out_spec(ctx, x.shape[:a] + (1,) + x.shape[a:])]


def _squeeze_infer(ctx):
    x = ctx.inputs[0]
    if x.shape is None:
        return [out_spec(ctx, None)]
    dims = {normalize_axis(ctx, int(d), x.rank) for d in ctx.attr("squeeze_dims", []) or []}
    if not dims:
        if None in x.shape:  # which dims are 1 is not known yet
            return [out_spec(ctx, None)]
        dims = {i for i, d in enumerate(x.shape) if d == 1}
    for d in dims:
        if x.shape[d] not in (1, None):
            raise ctx.error(f"cannot squeeze dimension {d} of {x}: its size is not 1")
    return [out_spec(ctx, [d for i, d in enumerate(x.shape) if i not in dims])]


def _squeeze_kernel(ctx, x):
    dims = tuple(int(d) for d in ctx.attr("squeeze_dims", []) or [])
    return np.squeeze(x, axis=dims or None)


def _same_data_lower(ctx, x, *_):
    return reshape_to_out(ctx, x)


def _reshape_lower(ctx, x, shape=None):
    """A Reshape; one whose shape is computed at run time (a `?` split in two: [b*s, 32] to
    [b, s, 32]) takes the result's `?` sizes from that shape (dialects/dynamic_shapes.py)."""
    if shape is not None and None in ctx.out().shape:
        partial = ctx.inputs[1].partial
        minus_one = list(partial).index(-1) if partial is not None and -1 in partial else None
        return dynamic_shapes.reshape(x, ctx.out().shape, sizes=shape, minus_one=minus_one)
    return reshape_to_out(ctx, x)


register("Reshape", infer=_reshape_infer, attrs=("T", "Tshape"), const_inputs=(1,), dynamic_inputs=(1,),
         lower=_reshape_lower, kernel=lambda ctx, x, shape: x.reshape(_empty_target(x.shape, ints(shape))))
register("ExpandDims", infer=_expand_dims_infer, attrs=("T", "Tdim"), const_inputs=(1,),
         lower=_same_data_lower, kernel=lambda ctx, x, axis: np.expand_dims(x, ints(axis)[0]))
register("Squeeze", infer=_squeeze_infer, attrs=("T", "squeeze_dims"), lower=_same_data_lower,
         kernel=_squeeze_kernel)


# -- Transpose, InvertPermutation -----------------------------------------------------------------

def _transpose_infer(ctx):
    x, perm = ctx.inputs[0], value_of(ctx, 1)
    if perm is None:
        return [out_spec(ctx, None if x.shape is None else (None,) * x.rank)]
    perm = ints(perm)
    if x.shape is None:
        return [out_spec(ctx, (None,) * len(perm))]
    if sorted(perm) != list(range(x.rank)):
        raise ctx.error(f"perm {perm} is not a permutation of the {x.rank} dimensions of {x}")
    return [out_spec(ctx, [x.shape[p] for p in perm])]


register("Transpose", infer=_transpose_infer, attrs=("T", "Tperm"), const_inputs=(1,),
         lower=lambda ctx, x, _: hlo.transpose(x, ints(ctx.const(1))),
         kernel=lambda ctx, x, perm: np.transpose(x, ints(perm)))


def _invert_permutation_kernel(ctx, x):
    if sorted(ints(x)) != list(range(x.size)):
        raise ctx.error(f"{ints(x)} is not a permutation")
    out = np.empty_like(x)
    out[x] = np.arange(x.size, dtype=x.dtype)
    return out


def _invert_permutation_lower(ctx, x):
    (n,) = hlo.shape_of(x)
    dtype = ctx.out().dtype
    return scatter_in_bounds(hlo.splat(0, [n], dtype), hlo.reshape(x, [n, 1]), hlo.iota([n], dtype, 0),
                             dtype=dtype, index_dtype=dtype, combiner=None)


register("InvertPermutation", infer=lambda ctx: [out_spec(ctx, ctx.inputs[0].shape)], attrs=("T",),
         dtypes=("int32", "int64"),
         lower=_invert_permutation_lower, kernel=_invert_permutation_kernel)


# -- Reverse, ReverseV2 -------------------------------------------------------------------------------

def _reverse_axes(ctx, values, rank):
    values = np.ravel(values)
    if ctx.op == "Reverse":  # v1: one bool per dimension
        return [i for i, flip in enumerate(values) if flip]
    return sorted({normalize_axis(ctx, int(a), rank) for a in values})


register("Reverse", infer=lambda ctx: [out_spec(ctx, ctx.inputs[0].shape)], attrs=("T",),
         const_inputs=(1,),
         lower=lambda ctx, x, _: hlo.reverse(x, _reverse_axes(ctx, ctx.const(1), len(hlo.shape_of(x)))),
         kernel=lambda ctx, x, a: np.flip(x, _reverse_axes(ctx, a, x.ndim)).copy())
register("ReverseV2", infer=lambda ctx: [out_spec(ctx, ctx.inputs[0].shape)], attrs=("T", "Tidx"),
         const_inputs=(1,),
         lower=lambda ctx, x, _: hlo.reverse(x, _reverse_axes(ctx, ctx.const(1), len(hlo.shape_of(x)))),
         kernel=lambda ctx, x, a: np.flip(x, _reverse_axes(ctx, a, x.ndim)).copy())
