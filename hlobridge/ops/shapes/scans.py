"""Ops along one axis that see the rest of it: Cumsum, Cumprod (scans) and TopKV2 (a sort)."""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ... import dtypes
from ...spec import TensorSpec
from ..helpers import as_out, ints, normalize_axis, out_spec, value_of
from ..registry import register
from ..typesets import NUMBER, SIGNED_NUMBER



# -- Cumsum, Cumprod ----------------------------------------------------------------------------------
# op -> (StableHLO combiner, NumPy cumulative fn, identity). Lowered as a reduce_window whose
# window spans the whole axis, padded with the identity on the side the sum comes from.
CUMULATIVE = {
    "Cumsum": ("add", np.cumsum, 0),
    "Cumprod": ("multiply", np.cumprod, 1),
}


def _cumulative_lower(ctx, x, _axis, *, combiner, identity):
    dtype = ctx.out().dtype
    if dtypes.is_unsigned(dtype):
        # IREE 3.13 cannot lower reduce_window on unsigned types; add and multiply are the
        # same bits on the signed type of that width.
        signed = np.dtype(f"int{8 * dtype.itemsize}")
        x = hlo.bitcast_convert(x, hlo.shape_of(x), signed)
        y = _cumulative_lower_typed(ctx, x, combiner=combiner, identity=identity, dtype=signed)
        return hlo.bitcast_convert(y, hlo.shape_of(y), dtype)
    return _cumulative_lower_typed(ctx, x, combiner=combiner, identity=identity, dtype=dtype)


def _cumulative_lower_typed(ctx, x, *, combiner, identity, dtype):
    shape = hlo.shape_of(x)
    rank = len(shape)
    axis = normalize_axis(ctx, ints(ctx.const(1))[0], rank)
    d = shape[axis]
    reverse, exclusive = ctx.attr("reverse", False), ctx.attr("exclusive", False)
    init = hlo.constant(np.asarray(identity, dtype))
    if exclusive and d:  # shift by one, bringing the identity in
        start, limit = [0] * rank, list(shape)
        lo, hi = [0] * rank, [0] * rank
        if reverse:
            start[axis], hi[axis] = 1, 1
        else:
            limit[axis], lo[axis] = d - 1, 1
        x = hlo.pad(hlo.slice(x, start, limit), init, lo, hi)
    window = [1] * rank
    window[axis] = max(d, 1)
    padding = [(0, 0)] * rank
    padding[axis] = (0, d - 1) if reverse else (d - 1, 0)
    if d == 0:
        return x
    return hlo.reduce_window(x, init, window, [1] * rank, padding, combiner)


def _cumulative_kernel(ctx, x, axis, *, np_fn, identity):
    axis = normalize_axis(ctx, ints(axis)[0], x.ndim)
    dtype = ctx.out().dtype
    if ctx.attr("reverse", False):
        x = np.flip(x, axis)
    y = np_fn(x, axis=axis, dtype=dtype)
    if ctx.attr("exclusive", False):
        y = np.concatenate([np.full_like(np.take(y, [0], axis), identity), np.delete(y, -1, axis)], axis) \
            if x.shape[axis] else y
    if ctx.attr("reverse", False):
        y = np.flip(y, axis)
    return as_out(ctx, y)


for _op, (_comb, _np_fn, _ident) in CUMULATIVE.items():
    register(_op, infer=lambda ctx: [out_spec(ctx, ctx.inputs[0].shape)],
             attrs=("T", "Tidx", "exclusive", "reverse"), const_inputs=(1,), dtypes=NUMBER,
             lower=lambda ctx, x, a, c=_comb, i=_ident: _cumulative_lower(ctx, x, a, combiner=c, identity=i),
             kernel=lambda ctx, x, a, f=_np_fn, i=_ident: _cumulative_kernel(ctx, x, a, np_fn=f, identity=i))


# -- TopKV2 ------------------------------------------------------------------------------------------
# The k largest along the last dimension, largest first; equal values in index order (TF's
# sorted=True order, which we give for sorted=False too).

def _top_k_infer(ctx):
    x, k = ctx.inputs[0], value_of(ctx, 1)
    index_type = np.dtype(ctx.attr("index_type", np.int32))
    if x.shape is None:
        return [out_spec(ctx, None), TensorSpec(index_type, None)]
    k = None if k is None else ints(k)[0]
    if k is not None and x.shape[-1] is not None and not 0 <= k <= x.shape[-1]:
        raise ctx.error(f"k = {k} is out of range for the last dimension of {x}")
    shape = x.shape[:-1] + (k,)
    return [out_spec(ctx, shape), TensorSpec(index_type, shape)]


def _top_k_lower(ctx, x, _k):
    shape = hlo.shape_of(x)
    last = len(shape) - 1
    index = hlo.iota(shape, ctx.out(1).dtype, last)

    def before(a, b, ia, ib):  # ascending; equal values by descending index
        return hlo.binary("or", hlo.compare("LT", a, b),
                          hlo.binary("and", hlo.compare("EQ", a, b), hlo.compare("GT", ia, ib)))
    # Sorted ascending then reversed, not sorted descending and sliced: IREE rewrites the
    # latter into its own top-k, which drops the comparator's tie-break (ties would come out
    # in any order; TF puts the lower index first).
    limit = shape[:-1] + [ints(ctx.const(1))[0]]
    return [hlo.slice(hlo.reverse(v, [last]), [0] * len(shape), limit)
            for v in hlo.sort([x, index], last, before)]


def _top_k_kernel(ctx, x, k):
    k, n = ints(k)[0], x.shape[-1]
    # A stable ascending sort of the reversed row, reversed back: descending, ties by index.
    order = (n - 1 - np.argsort(x[..., ::-1], axis=-1, kind="stable"))[..., ::-1][..., :k]
    return [as_out(ctx, np.take_along_axis(x, order, -1)), as_out(ctx, order, 1)]


register("TopKV2", infer=_top_k_infer, attrs=("T", "Tk", "sorted", "index_type"), const_inputs=(1,),
         dtypes=SIGNED_NUMBER,  # IREE 3.13 cannot lower its sort on unsigned types
         lower=_top_k_lower, kernel=_top_k_kernel, output_args=("values", "indices"))
