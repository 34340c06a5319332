"""Reductions: Sum, Prod, Max, Min, All, Any, Mean, EuclideanNorm; ArgMax, ArgMin.

TensorFlow passes the axes as a tensor (reduction_indices, input 1); StableHLO's reduce
takes them as an attribute, so they must be a compile-time constant. One generic rule
(axes -> [prepare] -> reduce -> [finish] -> reshape for keep_dims) and a table row per op.
An empty axis list reduces nothing: the result is the input (TF copies it, for every op).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from hlobridge.dialects import dynamic_shapes
from hlobridge.dialects import stablehlo as hlo

from ... import dtypes
from ...spec import TensorSpec
from ..helpers import highest, lowest, normalize_axis
from ..registry import register
from ..typesets import BOOL, COMPLEX, FLOAT, NUMBER

REDUCE_ATTRS = ("T", "Tidx", "keep_dims")


def _trunc_div(total, count):
    """Mean's division: floats divide, integers truncate toward zero like TF (and stablehlo)."""
    if not dtypes.is_integer(total.dtype):
        return total / np.asarray(count, total.dtype)
    count = max(count, 1)
    return (np.sign(total) * (np.abs(total) // count)).astype(total.dtype)


def _fold_count(x, axes: list[int]):
    """How many elements each result folds: an int, or a tensor<i32> where a reduced dimension
    is `?` (its size read with get_dimension_size)."""
    shape = hlo.shape_of(x)
    count = int(np.prod([shape[a] for a in axes if shape[a] is not None]))
    sizes = [dynamic_shapes.dim_size(x, a) for a in axes if shape[a] is None]
    if not sizes:
        return count
    total = sizes[0]
    for size in sizes[1:]:
        total = hlo.multiply(total, size)
    return total if count == 1 else hlo.multiply(total, hlo.constant(np.int32(count)))


def _divide_by_count(ctx, total, count):
    """Mean's division on StableHLO (integer division truncates, as TF's does)."""
    if isinstance(count, int):
        return hlo.divide(total, hlo.scalar_like(count, total))
    count = hlo.convert(count, ctx.out().dtype)
    return hlo.divide(total, hlo.broadcast_in_dim(count, hlo.shape_of(total), []))


def _sqrt_lower(ctx, v):
    if not dtypes.is_floating(ctx.out().dtype):
        raise ctx.lowering_error("compiles for floating-point inputs only")
    return hlo.unary("sqrt", v)


@dataclass(frozen=True)
class Reduction:
    """A reductions table row: how to fold elements, on StableHLO and on NumPy."""
    combiner: str                 # the StableHLO op folding two elements
    ufunc: np.ufunc               # the same on NumPy arrays
    identity: Callable            # dtype -> the combiner's identity (the reduce's init)
    prepare: tuple | None = None  # (hlo fn(x), np fn(x)) applied to each element first
    finish: tuple | None = None   # (hlo fn(ctx, total, count), np fn(total, count)) after
    dtypes: tuple = NUMBER        # what it compiles for


REDUCTIONS = {
    "Sum": Reduction("add", np.add, lambda dt: 0, dtypes=NUMBER + COMPLEX),
    "Prod": Reduction("multiply", np.multiply, lambda dt: 1, dtypes=NUMBER + COMPLEX),
    "Max": Reduction("maximum", np.maximum, lowest),
    "Min": Reduction("minimum", np.minimum, highest),
    "All": Reduction("and", np.logical_and, lambda dt: True, dtypes=BOOL),
    "Any": Reduction("or", np.logical_or, lambda dt: False, dtypes=BOOL),
    "Mean": Reduction("add", np.add, lambda dt: 0,
                      finish=(_divide_by_count, _trunc_div),
                      dtypes=NUMBER + COMPLEX),
    "EuclideanNorm": Reduction("add", np.add, lambda dt: 0,
                               prepare=(lambda x: hlo.multiply(x, x), lambda x: x * x),
                               finish=(lambda ctx, v, n: _sqrt_lower(ctx, v),
                                       lambda v, n: np.sqrt(v).astype(v.dtype)),
                               dtypes=FLOAT),
}
# All and Any are bool-only: TF writes no T on them.
ATTRS = {"All": ("Tidx", "keep_dims"), "Any": ("Tidx", "keep_dims")}


def normalize_axes(ctx, values, rank: int) -> list[int]:
    """Sorted, de-duplicated, non-negative axes."""
    return sorted({normalize_axis(ctx, int(a), rank) for a in np.ravel(values)})


def reduction_axes(ctx, rank: int) -> list[int] | None:
    """The axes in input 1; None if it is not a constant."""
    value = ctx.inputs[1].value
    return None if value is None else normalize_axes(ctx, value, rank)


def _reduce_infer(ctx):
    x = ctx.inputs[0]
    keep = ctx.attr("keep_dims", False)
    if x.shape is None:
        return [TensorSpec(x.dtype, None)]
    axes = reduction_axes(ctx, x.rank)
    if axes is None:  # unknown axes: with keep_dims only the rank survives
        return [TensorSpec(x.dtype, (None,) * x.rank if keep else None)]
    if keep:
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    else:
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    return [TensorSpec(x.dtype, shape)]


def _reduce_lower(ctx, x, _axes, *, r: Reduction):
    shape = hlo.shape_of(x)
    axes = reduction_axes(ctx, len(shape))
    if not axes:
        return x
    count = _fold_count(x, axes) if r.finish else None
    if r.prepare:
        x = r.prepare[0](x)
    dtype = ctx.out().dtype
    total = hlo.reduce(x, hlo.constant(np.asarray(r.identity(dtype), dtype)), axes, r.combiner)
    if r.finish:
        total = r.finish[0](ctx, total, count)
    return hlo.reshape(total, ctx.out().shape)


def _reduce_kernel(ctx, x, axes, *, r: Reduction):
    axes = normalize_axes(ctx, axes, x.ndim)
    keep = ctx.attr("keep_dims", False)
    dtype = ctx.out().dtype
    if not axes:  # TF copies the input: even EuclideanNorm does not take |x|
        return x.astype(dtype)
    if r.prepare:
        x = r.prepare[1](x)
    total = r.ufunc.reduce(x, axis=tuple(axes), keepdims=keep, dtype=dtype,
                           initial=np.asarray(r.identity(dtype), dtype))
    total = np.asarray(total, dtype)
    if r.finish:
        total = r.finish[1](total, int(np.prod([x.shape[a] for a in axes])))
    return np.asarray(total).astype(dtype)


for _op, _r in REDUCTIONS.items():
    register(_op, infer=_reduce_infer, attrs=ATTRS.get(_op, REDUCE_ATTRS), const_inputs=(1,),
             dtypes=_r.dtypes,
             lower=lambda ctx, x, a, r=_r: _reduce_lower(ctx, x, a, r=r),
             kernel=lambda ctx, x, a, r=_r: _reduce_kernel(ctx, x, a, r=r))

# -- L2Loss: sum(t * t) / 2 over every element, a scalar --------------------------------------------


def _l2_loss_lower(ctx, t):
    dtype = ctx.out().dtype
    total = hlo.reduce(hlo.multiply(t, t), hlo.constant(np.zeros((), dtype)), range(len(hlo.shape_of(t))), "add")
    return hlo.multiply(total, hlo.scalar_like(0.5, total))


register("L2Loss", infer=lambda ctx: [TensorSpec(ctx.inputs[0].dtype, ())], attrs=("T",), dtypes=FLOAT,
         lower=_l2_loss_lower,
         kernel=lambda ctx, t: np.asarray((t.astype(np.float64) ** 2).sum() / 2).astype(ctx.out().dtype))

# -- ArgMax / ArgMin -------------------------------------------------------------------------------
# op -> (comparison that makes the left element win, its init value). Ties and NaNs go to the
# smallest index, as in TF and np.argmax: a NaN beats every number.
ARG_REDUCTIONS = {
    "ArgMax": ("GT", lowest, np.argmax),
    "ArgMin": ("LT", highest, np.argmin),
}


def _arg_axis(ctx, rank: int) -> int | None:
    value = ctx.inputs[1].value
    return None if value is None else normalize_axis(ctx, int(np.ravel(value)[0]), rank)


def _arg_infer(ctx):
    x = ctx.inputs[0]
    dtype = np.dtype(ctx.attr("output_type", np.int64))
    if x.shape is None:
        return [TensorSpec(dtype, None)]
    axis = _arg_axis(ctx, x.rank)
    if axis is None:
        return [TensorSpec(dtype, (None,) * (x.rank - 1))]
    return [TensorSpec(dtype, tuple(d for i, d in enumerate(x.shape) if i != axis))]


def _arg_body(direction: str, floating: bool):
    def body(a, ia, b, ib):
        wins = hlo.compare(direction, a, b)
        tie = hlo.compare("EQ", a, b)
        if floating:
            a_nan, b_nan = hlo.compare("NE", a, a), hlo.compare("NE", b, b)
            wins = hlo.binary("or", wins, hlo.binary("and", a_nan, hlo.unary("not", b_nan)))
            tie = hlo.binary("or", tie, hlo.binary("and", a_nan, b_nan))
        pick_a = hlo.binary("or", wins, hlo.binary("and", tie, hlo.compare("LT", ia, ib)))
        return [hlo.select(pick_a, a, b), hlo.select(pick_a, ia, ib)]
    return body


def _arg_lower(ctx, x, _dim, *, direction, init):
    shape = hlo.shape_of(x)
    axis = _arg_axis(ctx, len(shape))
    if axis is None:
        raise ctx.lowering_error("dimension (input 1) must be a compile-time constant")
    xdt, idt = ctx.inputs[0].dtype, ctx.out().dtype
    index = hlo.iota(shape, idt, axis)
    inits = [hlo.constant(np.asarray(init(xdt), xdt)), hlo.constant(np.asarray(0, idt))]
    _, result = hlo.reduce_multi([x, index], inits, [axis],
                                 _arg_body(direction, dtypes.is_floating(xdt)))
    return result


def _arg_kernel(ctx, x, dim, *, np_fn):
    axis = normalize_axis(ctx, int(np.ravel(dim)[0]), x.ndim)
    return np.asarray(np_fn(x, axis=axis)).astype(ctx.out().dtype)


for _op, (_dir, _init, _np_fn) in ARG_REDUCTIONS.items():
    register(_op, infer=_arg_infer, attrs=("T", "Tidx", "output_type"), const_inputs=(1,), dtypes=NUMBER,
             lower=lambda ctx, x, d, dr=_dir, i=_init: _arg_lower(ctx, x, d, direction=dr, init=i),
             kernel=lambda ctx, x, d, f=_np_fn: _arg_kernel(ctx, x, d, np_fn=f))
