"""Shape queries: Shape, ShapeN, Size, Rank, and BroadcastGradientArgs and BroadcastArgs (shape arithmetic).

Shape, ShapeN, Size and Rank set `value` in their specs whenever the input's shape is
known, so that downstream shape arithmetic folds (TensorFlow's grappler does the same).
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import dynamic_shapes
from hlobridge.dialects import stablehlo as hlo

from ...spec import TensorSpec
from ..helpers import as_out, ints, num_elements, value_of
from ..registry import register



# -- Shape, ShapeN, Size, Rank --------------------------------------------------------------------
# op -> (value from a spec, or None when not known; output shape from the spec)

def _shape_value(spec):
    return spec.shape if spec.is_static else None


def _size_value(spec):
    if spec.is_static:
        return num_elements(spec.shape)
    return 0 if spec.shape is not None and 0 in spec.shape else None


QUERIES = {
    "Shape": (_shape_value, lambda spec: (spec.rank,), lambda x: x.shape),
    "Size": (_size_value, lambda spec: (), lambda x: x.size),
    "Rank": (lambda spec: spec.rank, lambda spec: (), lambda x: x.ndim),
}


def _query_infer(ctx, query):
    value_fn, shape_fn, _ = QUERIES[query]
    dtype = np.dtype(ctx.attr("out_type", np.int32))
    out = []
    for spec in ctx.inputs:
        v = value_fn(spec)
        out.append(TensorSpec(dtype, shape_fn(spec), None if v is None else np.asarray(v, dtype)))
    return out


def _query_lower(ctx, *xs):
    return [hlo.constant(ctx.out(i).value, ctx.out(i).dtype) if ctx.out(i).value is not None
            else _runtime_query(ctx.op, x, ctx.out(i).dtype) for i, x in enumerate(xs)]


def _runtime_query(op: str, x, dtype):
    """Shape/Size of a tensor with `?` dimensions, computed: get_dimension_size per `?`."""
    dims = [hlo.convert(dynamic_shapes.dim_size(x, i), dtype) if d is None else hlo.constant(np.asarray(d, dtype))
            for i, d in enumerate(hlo.shape_of(x))]
    if op == "Size":
        total = dims[0]
        for d in dims[1:]:
            total = hlo.binary("multiply", total, d)
        return total
    return hlo.concatenate([hlo.reshape(d, [1]) for d in dims], 0)


def _query_kernel(ctx, *xs, query):
    return [as_out(ctx, QUERIES[query][2](x), i) for i, x in enumerate(xs)]


for _op, _attrs in {"Shape": ("T", "out_type"), "ShapeN": ("N", "T", "out_type"),
                    "Size": ("T", "out_type"), "Rank": ("T",)}.items():
    _q = "Shape" if _op == "ShapeN" else _op
    register(_op, infer=lambda ctx, q=_q: _query_infer(ctx, q), attrs=_attrs, lower=_query_lower,
             kernel=lambda ctx, *xs, q=_q: _query_kernel(ctx, *xs, query=q))


# -- BroadcastGradientArgs -----------------------------------------------------------------------

def broadcast_gradient_args(s0, s1):
    """TF's BCast reduction indices: the output dims each input was broadcast along.

    Both shapes are 1-padded on the left; input i reduces over every dim where its padded
    size is 1 (including dims where every input is 1), ascending.
    """
    s0, s1 = ints(s0), ints(s1)
    n = max(len(s0), len(s1))
    p0, p1 = [1] * (n - len(s0)) + s0, [1] * (n - len(s1)) + s1
    for a, b in zip(p0, p1):
        if a != b and 1 not in (a, b):
            raise ValueError(f"incompatible shapes {s0} and {s1}")
    return [k for k in range(n) if p0[k] == 1], [k for k in range(n) if p1[k] == 1]


def _bga_infer(ctx):
    dtype = ctx.inputs[0].dtype
    s0, s1 = value_of(ctx, 0), value_of(ctx, 1)
    if s0 is None or s1 is None:
        return [TensorSpec(dtype, (None,)), TensorSpec(dtype, (None,))]
    r0, r1 = _bga_kernel(ctx, s0, s1)
    return [TensorSpec(dtype, r0.shape, r0), TensorSpec(dtype, r1.shape, r1)]


def _bga_kernel(ctx, s0, s1):
    try:
        r0, r1 = broadcast_gradient_args(s0, s1)
    except ValueError as e:
        raise ctx.error(str(e)) from None
    dtype = ctx.inputs[0].dtype
    return [np.asarray(r0, dtype), np.asarray(r1, dtype)]


register("BroadcastGradientArgs", infer=_bga_infer, attrs=("T",), const_inputs=(0, 1),
         dtypes=("int32", "int64"),
         lower=lambda ctx, *_: [hlo.constant(o.value, o.dtype) for o in ctx.outputs],
         kernel=_bga_kernel, output_args=("r0", "r1"))


# -- BroadcastArgs ---------------------------------------------------------------------------------

def broadcast_args(s0, s1):
    """TF's BCast output shape (tf.broadcast_dynamic_shape): both shapes 1-padded on the left,
    each dim the one that is not 1 (equal dims stay; a 0 against a 1 is 0)."""
    s0, s1 = ints(s0), ints(s1)
    n = max(len(s0), len(s1))
    p0, p1 = [1] * (n - len(s0)) + s0, [1] * (n - len(s1)) + s1
    if any(a != b and 1 not in (a, b) for a, b in zip(p0, p1)):
        raise ValueError(f"Incompatible shapes: [{','.join(map(str, s0))}] vs. [{','.join(map(str, s1))}]")
    return [b if a == 1 else a for a, b in zip(p0, p1)]


def _ba_kernel(ctx, s0, s1):
    try:
        return np.asarray(broadcast_args(s0, s1), ctx.inputs[0].dtype)
    except ValueError as e:
        raise ctx.error(str(e)) from None


def _ba_infer(ctx):
    dtype = ctx.inputs[0].dtype
    s0, s1 = value_of(ctx, 0), value_of(ctx, 1)
    if s0 is not None and s1 is not None:
        r = _ba_kernel(ctx, s0, s1)
        return [TensorSpec(dtype, r.shape, r)]
    lengths = [spec.shape[0] if spec.shape else None for spec in ctx.inputs]
    return [TensorSpec(dtype, (None if None in lengths else max(lengths),))]


# XLA compiles it with both shapes as compile-time constants (tf2xla bcast_ops.cc).
register("BroadcastArgs", infer=_ba_infer, attrs=("T",), const_inputs=(0, 1), dtypes=("int32", "int64"),
         lower=lambda ctx, *_: hlo.constant(ctx.outputs[0].value, ctx.outputs[0].dtype), kernel=_ba_kernel)
