"""XlaSort, XlaKeyValueSort and XlaVariadicSort (tf2xla/kernels/sort_ops.cc).

XlaSort and XlaKeyValueSort sort along the last dimension with XLA's `CreateScalarLtComputation`,
which orders floats totally (LtTotalOrder: -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN), as
the integer order of their bits with the sign-magnitude flipped; both sides here compare that
key. XLA's sort is not stable by default: equal keys may come out in either order, and the
kernels keep them in input order (a valid answer). XlaVariadicSort takes the comparator as a
library function (a0, b0, a1, b1, ...) -> bool, lowered into stablehlo.sort's region; its
kernel sorts each row with Python's stable merge sort, calling the comparator on reference
kernels.
"""

from __future__ import annotations

import functools

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ... import dtypes as hb_dtypes
from ..helpers import out_spec
from ..registry import register
from .common import check_results, region_body, scalar_call


def _bits_dtype(dtype):
    return np.dtype(f"int{np.dtype(dtype).itemsize * 8}")


def _order_key_value(x, dtype):
    """A Value whose signed integer order is XLA's total order of float x (x itself otherwise)."""
    if not hb_dtypes.is_floating(np.dtype(dtype)):
        return x
    bits_dtype = _bits_dtype(dtype)
    bits = hlo.bitcast_convert(x, hlo.shape_of(x), bits_dtype)
    magnitude = hlo.constant(np.array(np.iinfo(bits_dtype).max, bits_dtype))
    zero = hlo.constant(np.array(0, bits_dtype))
    return hlo.select(hlo.compare("LT", bits, zero), hlo.binary("xor", bits, magnitude), bits)


def order_key(x: np.ndarray) -> np.ndarray:
    """NumPy's side of _order_key_value."""
    if not hb_dtypes.is_floating(x.dtype):
        return x
    bits = x.view(_bits_dtype(x.dtype))
    return np.where(bits < 0, bits ^ np.iinfo(bits.dtype).max, bits)


def _less(dtype):
    return lambda a, b, *_: hlo.compare("LT", _order_key_value(a, dtype), _order_key_value(b, dtype))


def _sort_last(ctx, *values):
    rank = ctx.inputs[0].rank
    return hlo.sort(list(values), rank - 1, _less(ctx.inputs[0].dtype), is_stable=True)


def _kernel_last(ctx, keys, *rest):
    order = np.argsort(order_key(np.asarray(keys)), axis=-1, kind="stable")
    out = [np.take_along_axis(a, order, -1) for a in (keys, *rest)]
    return out if rest else out[0]


def _key_value_infer(ctx):
    keys, values = ctx.inputs
    if keys.shape is not None and values.shape is not None and keys.shape != values.shape:
        raise ctx.error(f"keys {keys} and values {values} must have one shape")
    return [out_spec(ctx, keys.shape), out_spec(ctx, keys.shape, dtype=values.dtype)]


register("XlaSort", infer=lambda ctx: [ctx.inputs[0]], lower=lambda ctx, x: _sort_last(ctx, x)[0],
         kernel=_kernel_last, attrs=("T",))
register("XlaKeyValueSort", infer=_key_value_infer, lower=_sort_last, kernel=_kernel_last, attrs=("K", "V"),
         output_args=("sorted_keys", "sorted_values"))


# -- XlaVariadicSort(inputs, dimension; comparator, is_stable) ---------------------------------------

def _variadic_infer(ctx):
    specs = ctx.inputs[:-1]
    check_results(ctx, "comparator", [s.dtype for s in specs for _ in (0, 1)], 1)
    return [out_spec(ctx, s.shape, dtype=s.dtype) for s in specs]


def _dimension(ctx, rank: int) -> int:
    """The `dimension` input: the last one, after the list of inputs, so not at a fixed index
    that `const_inputs` could name; TF requires it constant, and a Const it is."""
    d = int(np.asarray(ctx.const(len(ctx.inputs) - 1)))
    if not -rank <= d < rank:
        raise ctx.error(f"dimension {d} is out of range for rank {rank}")
    return d % rank


def _variadic_lower(ctx, *values):
    specs = ctx.inputs[:-1]
    body = region_body(ctx, "comparator", [s.dtype for s in specs for _ in (0, 1)])
    return hlo.sort(list(values[:-1]), _dimension(ctx, specs[0].rank), lambda *a: body(*a)[0],
                    is_stable=bool(ctx.attr("is_stable", False)))


def _variadic_kernel(ctx, *arrays):
    xs = [np.asarray(a) for a in arrays[:-1]]
    axis = _dimension(ctx, xs[0].ndim)
    compare = scalar_call(ctx, "comparator")
    moved = [np.moveaxis(x, axis, -1) for x in xs]
    outs = [np.empty_like(m) for m in moved]
    for pos in np.ndindex(*moved[0].shape[:-1]):
        rows = [m[pos] for m in moved]

        def cmp(i, j, rows=rows):
            if bool(compare(*[v for r in rows for v in (r[i], r[j])])[0]):
                return -1
            return 1 if bool(compare(*[v for r in rows for v in (r[j], r[i])])[0]) else 0
        order = sorted(range(rows[0].shape[0]), key=functools.cmp_to_key(cmp))
        for o, r in zip(outs, rows):
            o[pos] = r[order]
    return [np.moveaxis(o, -1, axis) for o in outs]


register("XlaVariadicSort", infer=_variadic_infer, lower=_variadic_lower, kernel=_variadic_kernel,
         attrs=("T", "comparator", "is_stable"), output_args=("outputs",))
