"""XLA's reductions with a user's computation: XlaReduce, XlaVariadicReduce (N inputs of one
type), XlaVariadicReduceV2 (a list of types), XlaReduceWindow and XlaSelectAndScatter
(tf2xla/kernels/reduce_window_op.cc, reduction_ops_common.cc's XlaReduce, select_and_scatter_op.cc).

The reducer, window computation, `select` and `scatter` are library functions of scalars,
lowered into the StableHLO op's regions (common.region_body). XLA's computations take the
accumulators first, then the inputs: (acc_0 .. acc_n-1, x_0 .. x_n-1) -> (acc_0 .. acc_n-1),
which is also StableHLO's region signature. The kernels fold in row-major order from the init
values, calling the function per element on reference kernels: an oracle, slow by design.
XLA pads a window with the init value (reduce_window) and never selects a padding element
(select_and_scatter), as the kernels do.
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ..helpers import ints, out_spec, value_of
from ..registry import register
from .common import check_results, region_body, scalar_call


def _split(ctx):
    """(inputs, init specs) of a variadic reduce: the first half of the inputs, then their inits."""
    n = len(ctx.inputs) // 2
    return ctx.inputs[:n], ctx.inputs[n:]


def _reduce_infer(ctx):
    inputs, inits = _split(ctx)
    dims = ints(ctx.attr("dimensions_to_reduce"))
    dtypes = [s.dtype for s in inputs]
    check_results(ctx, "reducer", dtypes + dtypes, len(inputs))
    if any(s.shape not in ((), None) for s in inits):
        raise ctx.error(f"init values must be scalars, got {', '.join(str(s) for s in inits)}")
    out = []
    for s in inputs:
        if s.shape is None:
            out.append(out_spec(ctx, None, dtype=s.dtype))
            continue
        if any(not 0 <= d < s.rank for d in dims) or len(set(dims)) != len(dims):
            raise ctx.error(f"dimensions_to_reduce {dims} are not distinct dimensions of {s}")
        out.append(out_spec(ctx, [d for i, d in enumerate(s.shape) if i not in dims], dtype=s.dtype))
    return out


def _reduce_lower(ctx, *values):
    n = len(values) // 2
    dtypes = [s.dtype for s in ctx.inputs[:n]]
    body = region_body(ctx, "reducer", dtypes + dtypes)
    results = hlo.reduce_multi(values[:n], values[n:], ints(ctx.attr("dimensions_to_reduce")), body)
    return results if len(ctx.outputs) > 1 else results[0]


def _reduce_kernel(ctx, *arrays):
    n = len(arrays) // 2
    xs, inits = [np.asarray(a) for a in arrays[:n]], arrays[n:]
    dims = ints(ctx.attr("dimensions_to_reduce"))
    reducer = scalar_call(ctx, "reducer")
    keep = [i for i in range(xs[0].ndim) if i not in dims]
    moved = [np.transpose(x, keep + sorted(dims)) for x in xs]
    outs = [np.empty(ctx.out(i).shape, ctx.out(i).dtype) for i in range(n)]
    for pos in np.ndindex(*outs[0].shape):
        acc = [np.asarray(v) for v in inits]
        for inner in np.ndindex(*moved[0].shape[len(keep):]):
            acc = reducer(*acc, *[m[pos + inner] for m in moved])
        for o, a in zip(outs, acc):
            o[pos] = a
    return outs if n > 1 else outs[0]


register("XlaReduce", infer=_reduce_infer, lower=_reduce_lower, kernel=_reduce_kernel,
         attrs=("T", "dimensions_to_reduce", "reducer"))
register("XlaVariadicReduce", infer=_reduce_infer, lower=_reduce_lower, kernel=_reduce_kernel,
         attrs=("N", "T", "dimensions_to_reduce", "reducer"))
register("XlaVariadicReduceV2", infer=_reduce_infer, lower=_reduce_lower, kernel=_reduce_kernel,
         attrs=("T", "dimensions_to_reduce", "reducer"), output_args=("outputs",))


# -- XlaReduceWindow(input, init, window_dimensions, window_strides, base_dilations, window_dilations,
#                   padding) -------------------------------------------------------------------------

def _window_geometry(ctx, first: int, names: tuple):
    """The window's integer vectors (const inputs from `first`) and the padding pairs (the last)."""
    vectors = [ints(ctx.const(first + i)) for i in range(len(names))]
    padding = [tuple(p) for p in np.asarray(ctx.const(first + len(names)), np.int64).reshape(-1, 2).tolist()]
    rank = ctx.inputs[0].rank
    if any(len(v) != rank for v in vectors) or len(padding) != rank:
        raise ctx.error(f"{', '.join(names)} and padding must have one entry per input dimension ({rank})")
    return (*vectors, padding)


_REDUCE_WINDOW = ("window_dimensions", "window_strides", "base_dilations", "window_dilations")


def _window_out(d, w, s, pad, b, wd):
    padded = (d - 1) * b + 1 + pad[0] + pad[1] if d else pad[0] + pad[1]
    eff = (w - 1) * wd + 1
    return (padded - eff) // s + 1 if padded >= eff else 0


def _reduce_window_infer(ctx):
    x = ctx.inputs[0]
    check_results(ctx, "computation", [x.dtype, x.dtype], 1)
    if x.shape is None or None in x.shape or any(value_of(ctx, i) is None for i in range(2, 7)):
        return [out_spec(ctx, None if x.shape is None else (None,) * x.rank)]
    window, strides, base, wdil, padding = _window_geometry(ctx, 2, _REDUCE_WINDOW)
    return [out_spec(ctx, [_window_out(*a) for a in zip(x.shape, window, strides, padding, base, wdil)])]


def _reduce_window_lower(ctx, x, init, *_):
    window, strides, base, wdil, padding = _window_geometry(ctx, 2, _REDUCE_WINDOW)
    body = region_body(ctx, "computation", [ctx.inputs[0].dtype] * 2)
    return hlo.reduce_window(x, init, window, strides, padding, op=lambda a, b: body(a, b)[0],
                             base_dilations=base if any(b != 1 for b in base) else None,
                             window_dilations=wdil if any(d != 1 for d in wdil) else None)


def _reduce_window_kernel(ctx, x, init, *_):
    window, strides, base, wdil, padding = _window_geometry(ctx, 2, _REDUCE_WINDOW)
    combine = scalar_call(ctx, "computation")
    dilated = np.full([(d - 1) * b + 1 if d else 0 for d, b in zip(x.shape, base)], init, x.dtype)
    dilated[tuple(slice(None, None, b) for b in base)] = x
    padded = np.full([d + lo + hi for d, (lo, hi) in zip(dilated.shape, padding)], init, x.dtype)
    padded[tuple(slice(lo, lo + d) for d, (lo, _) in zip(dilated.shape, padding))] = dilated
    out = np.empty(ctx.out().shape, x.dtype)
    for pos in np.ndindex(*out.shape):
        acc = np.asarray(init)
        for w in np.ndindex(*window):
            acc = combine(acc, padded[tuple(p * s + i * d for p, s, i, d in zip(pos, strides, w, wdil))])[0]
        out[pos] = acc
    return out


register("XlaReduceWindow", infer=_reduce_window_infer, lower=_reduce_window_lower, kernel=_reduce_window_kernel,
         attrs=("T", "Tindices", "computation"), const_inputs=(2, 3, 4, 5, 6))


# -- XlaSelectAndScatter(operand, window_dimensions, window_strides, padding, source, init_value) -------

def _select_scatter_infer(ctx):
    x = ctx.inputs[0]
    check_results(ctx, "select", [x.dtype, x.dtype], 1)
    check_results(ctx, "scatter", [x.dtype, x.dtype], 1)
    return [out_spec(ctx, x.shape)]


def _select_scatter_lower(ctx, operand, _w, _s, _p, source, init):
    window, strides, padding = _window_geometry(ctx, 1, ("window_dimensions", "window_strides"))
    dtype = ctx.inputs[0].dtype
    select, scatter = (region_body(ctx, f, [dtype, dtype]) for f in ("select", "scatter"))
    return hlo.select_and_scatter(operand, source, init, window, strides, padding,
                                  select=lambda a, b: select(a, b)[0], scatter=lambda a, b: scatter(a, b)[0])


def _select_scatter_kernel(ctx, operand, _w, _s, _p, source, init):
    window, strides, padding = _window_geometry(ctx, 1, ("window_dimensions", "window_strides"))
    select, scatter = scalar_call(ctx, "select"), scalar_call(ctx, "scatter")
    out = np.full(operand.shape, init, operand.dtype)
    for pos in np.ndindex(*source.shape):
        chosen = None
        for w in np.ndindex(*window):
            at = tuple(p * s + i - lo for p, s, i, (lo, _) in zip(pos, strides, w, padding))
            if any(not 0 <= a < d for a, d in zip(at, operand.shape)):
                continue  # a padding element is never selected
            if chosen is None or not bool(select(operand[chosen], operand[at])[0]):
                chosen = at
        if chosen is not None:
            out[chosen] = scatter(out[chosen], source[pos])[0]
    return out


register("XlaSelectAndScatter", infer=_select_scatter_infer, lower=_select_scatter_lower,
         kernel=_select_scatter_kernel, attrs=("T", "Tindices", "select", "scatter"), const_inputs=(1, 2, 3))
