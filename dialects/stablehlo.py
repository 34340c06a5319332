"""Python builders for the StableHLO ops hlobridge emits.

IREE ships no `stablehlo` Python module; the dialect is registered in every context,
so ops are built with `ir.Operation.create`. This module is the only place that does
so: every other module calls these builders, which take and return `ir.Value`s and
must run inside an active `ir.Context`, `ir.Location` and `ir.InsertionPoint`.

`Operation.create` does not verify; the lowering driver verifies the whole module
before IREE sees it (see iree-notes: invalid IR can crash the compiler).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from iree.compiler import ir

from hlobridge import dtypes

from . import dynamic_shapes

Value = ir.Value


# -- types and attributes ---------------------------------------------------------------

def element_type(dtype) -> ir.Type:
    """numpy dtype -> MLIR element type (f32, bf16, ui8, i1, ...); TypeError when it has none."""
    spelling = dtypes.mlir_name(dtype)
    if spelling is None:
        raise TypeError(f"dtype {dtypes.name(dtype)} has no StableHLO element type")
    return ir.Type.parse(spelling)


def tensor_type(shape: Sequence[int], dtype) -> ir.RankedTensorType:
    """The ranked tensor type of `shape` and `dtype`, e.g. tensor<4x3xf32>; a None dimension
    is dynamic (tensor<?x3xf32>)."""
    return dynamic_shapes.ranked_type(shape, element_type(dtype))


def shape_of(v: Value) -> list[int]:
    """The shape of a ranked tensor Value, as a list (None for a dynamic dimension)."""
    t = ir.RankedTensorType(v.type)
    return [None if t.is_dynamic_dim(i) else d for i, d in enumerate(t.shape)]


def element_type_of(v: Value) -> ir.Type:
    """The element type of a ranked tensor Value."""
    return ir.RankedTensorType(v.type).element_type


def i64_array(values: Sequence[int]) -> ir.DenseI64ArrayAttr:
    """ints -> DenseI64ArrayAttr, the form of StableHLO's dimension-list attributes."""
    return ir.DenseI64ArrayAttr.get([int(v) for v in values])


def i64_elements(values, shape=None) -> ir.DenseIntElementsAttr:
    """ints -> i64 DenseIntElementsAttr, reshaped to `shape` if given."""
    arr = np.asarray(values, dtype=np.int64)
    if shape is not None:
        arr = arr.reshape(shape)
    return ir.DenseIntElementsAttr.get(arr)


def _attr(text: str) -> ir.Attribute:
    return ir.Attribute.parse(text)


def _i64(value: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(value))


def _create(name: str, operands: Sequence[Value], results=None, attrs=None, regions=0):
    return ir.Operation.create(name, results=results, operands=list(operands),
                               attributes=attrs or {}, regions=regions,
                               infer_type=results is None)


def _one(name, operands, results=None, attrs=None) -> Value:
    return _create(name, operands, results, attrs).result


# -- constants ----------------------------------------------------------------------------

def dense_attr(array: np.ndarray, dtype=None) -> ir.DenseElementsAttr:
    """A DenseElementsAttr holding `array` as `dtype` (default: the array's own)."""
    dtype = np.dtype(dtype if dtype is not None else array.dtype)
    array = np.asarray(array).astype(dtype, order="C")  # (ascontiguousarray would make 0-d 1-d)
    ttype = tensor_type(array.shape, dtype)
    if array.size and (array == array.flat[0]).all() and dtype.kind not in "bc":
        return ir.DenseElementsAttr.get_splat(ttype, _scalar_attr(array.flat[0], dtype))
    if dtype == np.bool_:
        return ir.DenseElementsAttr.get(array.astype(np.bool_), type=ir.IntegerType.get_signless(1),
                                        shape=list(array.shape))
    if dtypes.name(dtype) in ("bfloat16", "float16", "float8_e5m2", "float8_e4m3fn"):
        raw = array.view({1: np.uint8, 2: np.uint16}[dtype.itemsize])
        return ir.DenseElementsAttr.get(raw, type=element_type(dtype), shape=list(array.shape))
    return ir.DenseElementsAttr.get(array, signless=not dtypes.is_unsigned(dtype),
                                    type=element_type(dtype), shape=list(array.shape))


def _scalar_attr(value, dtype) -> ir.Attribute:
    et = element_type(dtype)
    if np.dtype(dtype).kind == "c":  # IntegerAttr.get of a complex type segfaults the process
        raise TypeError(f"no scalar attribute of dtype {dtypes.name(dtype)}: build complex constants densely")
    if dtypes.is_floating(dtype):
        return ir.FloatAttr.get(et, float(value))
    if dtype == np.bool_:
        return ir.IntegerAttr.get(et, int(bool(value)))
    if dtypes.is_unsigned(dtype):
        # IntegerAttr of an unsigned type takes the value's bit pattern as signed int64
        return ir.IntegerAttr.get(et, int(np.asarray(value, dtype).astype(np.int64)))
    return ir.IntegerAttr.get(et, int(value))


def constant(array, dtype=None) -> Value:
    """stablehlo.constant of `array` (as `dtype` if given); a uniform array becomes a splat.
    A complex one is stablehlo.complex of two real constants: iree-compile 3.13 turns a uniform
    complex<f64> constant into an i128 splat it cannot lower ("stream.async.splat"), and the
    Python bindings cannot read complex attributes back."""
    array = np.asarray(array) if dtype is None else np.asarray(array).astype(dtype)
    if array.dtype.kind == "c":
        return complex_(constant(array.real), constant(array.imag))
    return _one("stablehlo.constant", [], attrs={"value": dense_attr(array, dtype)})


def splat(value, shape: Sequence[int], dtype) -> Value:
    """stablehlo.constant of `shape`, every element the scalar `value` as `dtype` (broadcast
    where `shape` has a `?`)."""
    if dynamic_shapes.is_dynamic(shape):
        return broadcast_in_dim(splat(value, [], dtype), shape, [])
    if np.dtype(dtype).kind == "c":  # no complex scalar attribute in the bindings: a dense one
        return constant(np.full(list(shape), value, dtype))
    attr = ir.DenseElementsAttr.get_splat(tensor_type(shape, dtype), _scalar_attr(value, dtype))
    return _one("stablehlo.constant", [], attrs={"value": attr})


# Ops that keep a constant a constant: the constant folder (passes/ir/constant_fold.py) folds them.
_LAYOUT_OPS = ("stablehlo.reshape", "stablehlo.transpose", "stablehlo.reverse", "stablehlo.convert")


def is_constant(v: Value) -> bool:
    """Whether `v` is a stablehlo.constant, or a reshape, transpose, reverse or convert of one
    (a weight TensorFlow froze into the graph, as lowering sees it before the folds)."""
    while True:
        owner = v.owner
        if not isinstance(owner, ir.OpView):
            return False  # a block argument
        name = owner.operation.name
        if name == "stablehlo.constant":
            return True
        if name not in _LAYOUT_OPS:
            return False
        v = owner.operation.operands[0]


def scalar_like(value, v: Value) -> Value:
    """A constant of `value` with the shape and element type of `v` (a scalar broadcast to
    v's shape where it has `?` dimensions)."""
    ttype = ir.RankedTensorType(v.type)
    shape = shape_of(v)
    if dynamic_shapes.is_dynamic(shape):
        ttype = dynamic_shapes.ranked_type([], ttype.element_type)
    et = ttype.element_type
    if isinstance(et, ir.FloatType):
        attr = ir.FloatAttr.get(et, float(value))
    elif isinstance(et, ir.ComplexType):  # IntegerAttr.get of a complex type segfaults the process
        dtype = np.complex64 if str(et.element_type) == "f32" else np.complex128
        c = constant(np.full(list(ttype.shape), value, dtype))
        return broadcast_in_dim(c, shape, []) if dynamic_shapes.is_dynamic(shape) else c
    elif isinstance(et, ir.IntegerType):
        attr = ir.IntegerAttr.get(et, int(value))
    else:
        raise TypeError(f"no scalar constant of element type {et}")
    c = _one("stablehlo.constant", [], attrs={"value": ir.DenseElementsAttr.get_splat(ttype, attr)})
    return broadcast_in_dim(c, shape, []) if dynamic_shapes.is_dynamic(shape) else c


# -- elementwise --------------------------------------------------------------------------

def unary(op: str, x: Value) -> Value:
    """stablehlo.<op> with the operand's type (exponential, tanh, negate, abs, ...)."""
    return _one(f"stablehlo.{op}", [x])


def chlo_unary(op: str, x: Value) -> Value:
    """chlo.<op> (erf, erfc, lgamma, ...): decomposed into StableHLO by IREE's input pipeline."""
    return _one(f"chlo.{op}", [x], [x.type])


def binary(op: str, a: Value, b: Value) -> Value:
    """stablehlo.<op> of two same-typed operands (add, subtract, maximum, power, and, ...)."""
    return _one(f"stablehlo.{op}", [a, b])


def _binary_builder(op: str):
    """A named builder for one binary op (`hlo.add(a, b)` reads better than `binary("add", a, b)`)."""
    def build(a: Value, b: Value) -> Value:
        return binary(op, a, b)
    build.__name__ = build.__qualname__ = op
    build.__doc__ = f"stablehlo.{op} of two same-typed operands; the result type is inferred."
    return build


add, subtract, multiply, divide, maximum, minimum = map(
    _binary_builder, ("add", "subtract", "multiply", "divide", "maximum", "minimum"))


def _compare_type(et: ir.Type) -> str:
    if isinstance(et, ir.FloatType):
        return "FLOAT"
    if isinstance(et, ir.IntegerType):
        it = ir.IntegerType(et)
        return "UNSIGNED" if (it.is_unsigned or it.width == 1) else "SIGNED"
    return "FLOAT"


def compare(direction: str, a: Value, b: Value) -> Value:
    """direction: EQ NE LT LE GT GE."""
    ct = _compare_type(element_type_of(a))
    return _one("stablehlo.compare", [a, b], attrs={
        "comparison_direction": _attr(f"#stablehlo<comparison_direction {direction}>"),
        "compare_type": _attr(f"#stablehlo<comparison_type {ct}>")})


def select(pred: Value, on_true: Value, on_false: Value) -> Value:
    """stablehlo.select: on_true where the i1 `pred` is true, else on_false; the result type is inferred."""
    return _one("stablehlo.select", [pred, on_true, on_false])


def clamp(lo: Value, x: Value, hi: Value) -> Value:
    """stablehlo.clamp of x into [lo, hi] (StableHLO's operand order: lo, x, hi); the type is inferred."""
    return _one("stablehlo.clamp", [lo, x, hi])


def rng_bit_generator(state: Value, shape: Sequence[int], dtype, algorithm: str) -> list[Value]:
    """stablehlo.rng_bit_generator: (new state, random bits of `shape` and `dtype`) by
    `algorithm` (DEFAULT, THREE_FRY, PHILOX)."""
    op = _create("stablehlo.rng_bit_generator", [state], [state.type, tensor_type(shape, dtype)],
                 {"rng_algorithm": _attr(f"#stablehlo<rng_algorithm {algorithm}>")})
    return list(op.results)


def reduce_precision(x: Value, exponent_bits: int, mantissa_bits: int) -> Value:
    """stablehlo.reduce_precision: x rounded to a float format of these exponent and mantissa bits."""
    i32 = ir.IntegerType.get_signless(32)
    return _one("stablehlo.reduce_precision", [x], [x.type], {
        "exponent_bits": ir.IntegerAttr.get(i32, int(exponent_bits)),
        "mantissa_bits": ir.IntegerAttr.get(i32, int(mantissa_bits))})


def convert(x: Value, dtype) -> Value:
    """stablehlo.convert of x's elements to `dtype`, keeping its shape."""
    return _one("stablehlo.convert", [x], [tensor_type(shape_of(x), dtype)])


def bitcast_convert(x: Value, shape: Sequence[int], dtype) -> Value:
    """stablehlo.bitcast_convert: x's bits reinterpreted as a `shape` tensor of `dtype`."""
    return _one("stablehlo.bitcast_convert", [x], [tensor_type(shape, dtype)])


# -- shape ----------------------------------------------------------------------------------

def reshape(x: Value, shape: Sequence[int]) -> Value:
    """stablehlo.reshape to `shape`; x itself when it already has that shape."""
    if shape_of(x) == list(shape):
        return x
    if dynamic_shapes.is_dynamic(shape) or dynamic_shapes.is_dynamic(shape_of(x)):
        return dynamic_shapes.reshape(x, shape)
    return _one("stablehlo.reshape", [x], [dynamic_shapes.ranked_type(list(shape), element_type_of(x))])


def broadcast_in_dim(x: Value, shape: Sequence[int], dims: Sequence[int]) -> Value:
    """stablehlo.broadcast_in_dim to `shape`, x's dimension i becoming result dimension dims[i]
    (dynamic_broadcast_in_dim where `shape` has a None: dynamic_shapes.py)."""
    if dynamic_shapes.is_dynamic(shape):
        return dynamic_shapes.broadcast_in_dim(x, shape, dims)
    return _one("stablehlo.broadcast_in_dim", [x],
                [dynamic_shapes.ranked_type(list(shape), element_type_of(x))],
                {"broadcast_dimensions": i64_array(dims)})


def broadcast_to(x: Value, shape: Sequence[int]) -> Value:
    """NumPy-style broadcast of x to `shape` (trailing dimensions aligned)."""
    src = shape_of(x)
    if src == list(shape):
        return x
    offset = len(shape) - len(src)
    return broadcast_in_dim(x, shape, range(offset, len(shape)))


def transpose(x: Value, perm: Sequence[int]) -> Value:
    """stablehlo.transpose by `perm` (the result type is inferred); x itself for the identity permutation."""
    if list(perm) == list(range(len(perm))):
        return x
    return _one("stablehlo.transpose", [x], attrs={"permutation": i64_array(perm)})


def concatenate(values: Sequence[Value], dim: int) -> Value:
    """stablehlo.concatenate of `values` along `dim`; a single value is returned as is."""
    if len(values) == 1:
        return values[0]
    shape = shape_of(values[0])
    shape[dim] = sum(shape_of(v)[dim] for v in values)
    return _one("stablehlo.concatenate", list(values),
                [dynamic_shapes.ranked_type(shape, element_type_of(values[0]))],
                {"dimension": _i64(dim)})


def slice(x: Value, start: Sequence[int], limit: Sequence[int], strides: Sequence[int] | None = None) -> Value:
    """stablehlo.slice of [start, limit) with `strides` (default 1); the result shape is computed here."""
    strides = list(strides) if strides is not None else [1] * len(start)
    if not any(start) and set(strides) <= {1} and list(limit) == shape_of(x):
        return x  # the whole of x (a 1x1 convolution's one patch): no real_dynamic_slice to fold
    if None in limit:  # the whole of a `?` dimension: real_dynamic_slice
        return dynamic_shapes.slice(x, start, limit, strides)
    shape = [max(0, -(-(hi - lo) // st)) for lo, hi, st in zip(start, limit, strides)]
    return _one("stablehlo.slice", [x], [dynamic_shapes.ranked_type(shape, element_type_of(x))],
                {"start_indices": i64_array(start), "limit_indices": i64_array(limit),
                 "strides": i64_array(strides)})


def dynamic_slice(x: Value, starts: Sequence[Value], sizes: Sequence[int]) -> Value:
    """starts: one scalar (0-d tensor) index Value per dimension."""
    return _one("stablehlo.dynamic_slice", [x, *starts],
                [dynamic_shapes.ranked_type(list(sizes), element_type_of(x))],
                {"slice_sizes": i64_array(sizes)})


def dynamic_update_slice(x: Value, update: Value, starts: Sequence[Value]) -> Value:
    """stablehlo.dynamic_update_slice: x with `update` written at the scalar index Values `starts`."""
    return _one("stablehlo.dynamic_update_slice", [x, update, *starts], [x.type])


def pad(x: Value, value: Value, low: Sequence[int], high: Sequence[int],
        interior: Sequence[int] | None = None) -> Value:
    """stablehlo.pad of x with the scalar `value`: low/high edge padding and interior padding (default 0).
    A complex x is padded part by part: iree-compile 3.13 segfaults on a complex pad (linalg.fill)."""
    if is_complex(x):
        return complex_(*(pad(part(x), part(value), low, high, interior) for part in (real, imag)))
    interior = list(interior) if interior is not None else [0] * len(low)
    shape = [None if d is None and lo == hi == it == 0 else d + lo + hi + max(d - 1, 0) * it
             for d, lo, hi, it in zip(shape_of(x), low, high, interior)]
    return _one("stablehlo.pad", [x, value], [dynamic_shapes.ranked_type(shape, element_type_of(x))],
                {"edge_padding_low": i64_array(low), "edge_padding_high": i64_array(high),
                 "interior_padding": i64_array(interior)})


def reverse(x: Value, dims: Sequence[int]) -> Value:
    """stablehlo.reverse along `dims`; x itself when there are none."""
    if not dims:
        return x
    return _one("stablehlo.reverse", [x], attrs={"dimensions": i64_array(dims)})


def iota(shape: Sequence[int], dtype, dim: int) -> Value:
    """stablehlo.iota of `shape` and `dtype`, counting 0, 1, ... along `dim` (dynamic_iota
    where `shape` has a None)."""
    if dynamic_shapes.is_dynamic(shape):
        return dynamic_shapes.iota(shape, element_type(dtype), dim)
    return _one("stablehlo.iota", [], [tensor_type(shape, dtype)], {"iota_dimension": _i64(dim)})


# -- contractions -------------------------------------------------------------------------------

def dot_general(lhs: Value, rhs: Value, out_shape: Sequence[int], dtype, *,
                lhs_batch=(), rhs_batch=(), lhs_contract=(), rhs_contract=(),
                precision: str = "DEFAULT") -> Value:
    """stablehlo.dot_general with the given batch and contracting dims; the caller gives the
    result shape and dtype, and `precision` applies to both operands (default DEFAULT)."""
    if 0 in [shape_of(lhs)[d] for d in lhs_contract] and 0 not in out_shape:
        return splat(0, out_shape, dtype)  # an empty sum; iree-compile 3.13 crashes (SIGFPE) on it
    if not lhs_batch and dynamic_shapes.is_dynamic(shape_of(lhs)):  # several `?` free dims: 2-D
        flat = dynamic_shapes.flattened_dot(lhs, rhs, out_shape, lambda a, b, s, lc, rc: dot_general(
            a, b, s, dtype, lhs_contract=lc, rhs_contract=rc, precision=precision), lhs_contract, rhs_contract)
        if flat is not None:
            return flat
    lhs, rhs = dynamic_shapes.pack_barriers(lhs, rhs, batched=bool(lhs_batch))

    def dims(name, values):
        return f"{name} = [{', '.join(str(int(v)) for v in values)}]"
    parts = []
    if lhs_batch:
        parts += [dims("lhs_batching_dimensions", lhs_batch), dims("rhs_batching_dimensions", rhs_batch)]
    parts += [dims("lhs_contracting_dimensions", lhs_contract),
              dims("rhs_contracting_dimensions", rhs_contract)]
    return _one("stablehlo.dot_general", [lhs, rhs], [tensor_type(out_shape, dtype)], {
        "dot_dimension_numbers": _attr(f"#stablehlo.dot<{', '.join(parts)}>"),
        "precision_config": _attr(f"[#stablehlo<precision {precision}>, #stablehlo<precision {precision}>]"),
    })


def convolution(lhs: Value, rhs: Value, out_shape: Sequence[int], dtype, *, layout: str,
                strides: Sequence[int], padding: Sequence[tuple[int, int]],
                lhs_dilation: Sequence[int] | None = None, rhs_dilation: Sequence[int] | None = None,
                feature_group_count: int = 1, batch_group_count: int = 1,
                window_reversal: Sequence[bool] | None = None) -> Value:
    """layout: StableHLO's short form, e.g. "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]";
    `window_reversal` flips the kernel on those spatial axes (the attribute is left out without it)."""
    n = len(strides)
    pad_attr = ir.DenseIntElementsAttr.get(np.asarray(padding, dtype=np.int64).reshape(n, 2))
    extra = {"window_reversal": ir.DenseBoolArrayAttr.get(list(window_reversal))} if window_reversal else {}
    return _one("stablehlo.convolution", [lhs, rhs], [tensor_type(out_shape, dtype)], {**extra,
        "dimension_numbers": _attr(f"#stablehlo.conv<{layout}>"),
        "window_strides": i64_array(strides),
        "padding": pad_attr,
        "lhs_dilation": i64_array(lhs_dilation or [1] * n),
        "rhs_dilation": i64_array(rhs_dilation or [1] * n),
        "feature_group_count": _i64(feature_group_count),
        "batch_group_count": _i64(batch_group_count),
    })


# -- reductions and windows -------------------------------------------------------------------

def _scalar_body(region: ir.Region, et: ir.Type, n: int, body: Callable) -> None:
    scalar = dynamic_shapes.ranked_type([], et)
    block = region.blocks.append(*([scalar] * (2 * n)))
    with ir.InsertionPoint(block):
        results = body(*block.arguments)
        _create("stablehlo.return", results if isinstance(results, (list, tuple)) else [results], [])


def _body_for(op: str) -> Callable:
    return lambda a, b: binary(op, a, b)


def reduce(x: Value, init: Value, dims: Sequence[int], op: str = "add") -> Value:
    """Reduce x over `dims` with stablehlo.<op> (add, maximum, minimum, multiply, and, or)."""
    shape = [d for i, d in enumerate(shape_of(x)) if i not in set(dims)]
    et = element_type_of(x)
    red = _create("stablehlo.reduce", [x, init], [dynamic_shapes.ranked_type(shape, et)],
                  {"dimensions": i64_array(sorted(dims))}, regions=1)
    _scalar_body(red.regions[0], et, 1, _body_for(op))
    return red.result


def reduce_multi(inputs: Sequence[Value], inits: Sequence[Value], dims: Sequence[int],
                 body: Callable) -> list[Value]:
    """Variadic reduce (e.g. argmax over (value, index) pairs); body(acc..., x...) -> [Value]."""
    dimset = set(dims)
    results = [dynamic_shapes.ranked_type([d for i, d in enumerate(shape_of(v)) if i not in dimset],
                                       element_type_of(v)) for v in inputs]
    red = _create("stablehlo.reduce", [*inputs, *inits], results,
                  {"dimensions": i64_array(sorted(dims))}, regions=1)
    scalars = [dynamic_shapes.ranked_type([], element_type_of(v)) for v in inputs]
    block = red.regions[0].blocks.append(*(scalars + scalars))
    with ir.InsertionPoint(block):
        _create("stablehlo.return", body(*block.arguments), [])
    return list(red.results)


def reduce_window(x: Value, init: Value, window: Sequence[int], strides: Sequence[int],
                  padding: Sequence[tuple[int, int]], op: str | Callable = "add",
                  base_dilations: Sequence[int] | None = None,
                  window_dilations: Sequence[int] | None = None) -> Value:
    """stablehlo.reduce_window combining with stablehlo.<op> (default add), or the region a
    callable (acc, x) -> Value builds, from `init`; the output shape is computed here, and
    dilations (default 1) are set only when given."""
    shape = shape_of(x)
    bd = list(base_dilations or [1] * len(shape))
    wd = list(window_dilations or [1] * len(shape))
    out, padding, keep = [], [tuple(p) for p in padding], list(shape)
    for i, (d, w, s, (lo, hi), b, dil) in enumerate(zip(shape, window, strides, padding, bd, wd)):
        if d is None and w == s == 1 and lo == hi == 0 and b == dil == 1:  # a `?` batch, untouched
            out.append(None)
            continue
        padded = (d - 1) * b + 1 + lo + hi
        eff = (w - 1) * dil + 1
        out.append(0 if padded < eff else (padded - eff) // s + 1)
        # The tail no window reaches is cut off (high padding first, then input): IREE 3.13
        # miscompiles a window whose output dimension is 1 over an input it does not cover
        # ("linalg.generic op inferred input/output operand ... dimension"), e.g. a 2x2/2 max
        # pool of a 3x3 image.
        excess = padded - ((out[-1] - 1) * s + eff) if out[-1] > 0 and b == 1 else 0
        if excess > 0:
            cut = min(hi, excess)
            padding[i] = (lo, hi - cut)
            keep[i] = d - (excess - cut)
    if keep != list(shape):
        x = slice(x, [0] * len(shape), keep)
    et = element_type_of(x)
    attrs = {"window_dimensions": i64_array(window), "window_strides": i64_array(strides),
             "padding": ir.DenseIntElementsAttr.get(np.asarray(padding, dtype=np.int64).reshape(-1, 2))}
    if base_dilations:
        attrs["base_dilations"] = i64_array(bd)
    if window_dilations:
        attrs["window_dilations"] = i64_array(wd)
    rw = _create("stablehlo.reduce_window", [x, init], [dynamic_shapes.ranked_type(out, et)], attrs,
                 regions=1)
    _scalar_body(rw.regions[0], et, 1, op if callable(op) else _body_for(op))
    return rw.result


def select_and_scatter(operand: Value, source: Value, init: Value, window: Sequence[int],
                       strides: Sequence[int], padding: Sequence[tuple[int, int]],
                       select: Callable | None = None, scatter: Callable | None = None) -> Value:
    """MaxPool's gradient by default: scatter `source` onto the argmax (first GE) of each window,
    adding; `select` (a, b) -> i1 and `scatter` (old, new) -> Value build other regions."""
    et = element_type_of(operand)
    op = _create("stablehlo.select_and_scatter", [operand, source, init], [operand.type], {
        "window_dimensions": i64_array(window), "window_strides": i64_array(strides),
        "padding": ir.DenseIntElementsAttr.get(np.asarray(padding, dtype=np.int64).reshape(-1, 2)),
    }, regions=2)
    scalar = dynamic_shapes.ranked_type([], et)
    sel = op.regions[0].blocks.append(scalar, scalar)
    with ir.InsertionPoint(sel):
        chosen = (select or (lambda a, b: compare("GE", a, b)))(sel.arguments[0], sel.arguments[1])
        _create("stablehlo.return", [chosen], [])
    _scalar_body(op.regions[1], et, 1, scatter or _body_for("add"))
    return op.result


# -- indexing -------------------------------------------------------------------------------------

def gather(operand: Value, indices: Value, out_shape: Sequence[int], *, offset_dims, collapsed_slice_dims,
           start_index_map, index_vector_dim: int, slice_sizes,
           operand_batching_dims=(), start_indices_batching_dims=()) -> Value:
    """stablehlo.gather with the given dimension numbers (batching dims only when set); the result
    is `out_shape` of the operand's element type."""
    def lst(v):
        return "[" + ", ".join(str(int(i)) for i in v) + "]"
    parts = [f"offset_dims = {lst(offset_dims)}", f"collapsed_slice_dims = {lst(collapsed_slice_dims)}"]
    if operand_batching_dims:
        parts += [f"operand_batching_dims = {lst(operand_batching_dims)}",
                  f"start_indices_batching_dims = {lst(start_indices_batching_dims)}"]
    parts += [f"start_index_map = {lst(start_index_map)}", f"index_vector_dim = {int(index_vector_dim)}"]
    return _one("stablehlo.gather", [operand, indices],
                [dynamic_shapes.ranked_type(list(out_shape), element_type_of(operand))], {
                    "dimension_numbers": _attr(f"#stablehlo.gather<{', '.join(parts)}>"),
                    "slice_sizes": i64_array(slice_sizes)})


def scatter(operand: Value, indices: Value, updates: Value, *, update_window_dims,
            inserted_window_dims, scatter_dims_to_operand_dims, index_vector_dim: int,
            op: str | Callable | None = "add", input_batching_dims=(), scatter_indices_batching_dims=(),
            indices_are_sorted: bool = False) -> Value:
    """Scatter `updates` into `operand`; op=None replaces, a name combines with stablehlo.<op>, a
    callable (old, new) -> Value builds the combining region (XlaScatter's update computation)."""
    def lst(v):
        return "[" + ", ".join(str(int(i)) for i in v) + "]"
    batching = (f"input_batching_dims = {lst(input_batching_dims)}, "
                f"scatter_indices_batching_dims = {lst(scatter_indices_batching_dims)}, "
                if input_batching_dims else "")
    dn = (f"#stablehlo.scatter<update_window_dims = {lst(update_window_dims)}, "
          f"inserted_window_dims = {lst(inserted_window_dims)}, {batching}"
          f"scatter_dims_to_operand_dims = {lst(scatter_dims_to_operand_dims)}, "
          f"index_vector_dim = {int(index_vector_dim)}>")
    attrs = {"scatter_dimension_numbers": _attr(dn)}
    if indices_are_sorted:
        attrs["indices_are_sorted"] = ir.BoolAttr.get(True)
    sc = _create("stablehlo.scatter", [operand, indices, updates], [operand.type], attrs, regions=1)
    body = (lambda old, new: new) if op is None else op if callable(op) else _body_for(op)
    _scalar_body(sc.regions[0], element_type_of(operand), 1, body)
    return sc.result


# -- functions ------------------------------------------------------------------------------------------

def return_(values: Sequence[Value]) -> None:
    """func.return of `values`, ending the function body being built."""
    _create("func.return", list(values), [])


# -- sorting (appended for TopKV2) ------------------------------------------------------------------

def sort(inputs: Sequence[Value], dim: int, comparator: Callable, is_stable: bool = True) -> list[Value]:
    """stablehlo.sort of same-shaped `inputs` along `dim`, permuted together.

    comparator(a0, b0, a1, b1, ...) -> i1 Value: whether element a goes before element b.
    """
    op = _create("stablehlo.sort", list(inputs), [v.type for v in inputs],
                 {"dimension": _i64(dim), "is_stable": ir.BoolAttr.get(is_stable)}, regions=1)
    scalars = []
    for v in inputs:
        scalars += [dynamic_shapes.ranked_type([], element_type_of(v))] * 2
    block = op.regions[0].blocks.append(*scalars)
    with ir.InsertionPoint(block):
        _create("stablehlo.return", [comparator(*block.arguments)], [])
    return list(op.results)


# -- control flow (If, Case, While) ------------------------------------------------------------------

def case(index: Value, result_types: Sequence[ir.Type], branches: Sequence[Callable]) -> list[Value]:
    """stablehlo.case: runs branches[index] (the last one when index is out of range, as
    TensorFlow's Case does); each branch() builds its region and returns its results."""
    op = _create("stablehlo.case", [index], list(result_types), regions=len(branches))
    for region, build in zip(op.regions, branches):
        with ir.InsertionPoint(region.blocks.append()):
            _create("stablehlo.return", list(build()), [])
    return list(op.results)


def while_(inits: Sequence[Value], cond: Callable, body: Callable) -> list[Value]:
    """stablehlo.while over loop-carried `inits`: cond(*vars) -> tensor<i1>, body(*vars) -> vars."""
    types = [v.type for v in inits]
    op = _create("stablehlo.while", list(inits), types, regions=2)
    for region, build in zip(op.regions, (lambda *a: [cond(*a)], body)):
        block = region.blocks.append(*types)
        with ir.InsertionPoint(block):
            _create("stablehlo.return", list(build(*block.arguments)), [])
    return list(op.results)


# -- host scalars: checks IREE runs on the host, beside the loads it makes anyway ------------

def to_scalar(x: Value) -> Value:
    """The element of a 0-d tensor as a host scalar (`tensor.extract`): IREE loads it on the host
    (as it loads a loop's bound), so arithmetic on it costs no dispatch."""
    et = element_type_of(x)
    if isinstance(et, ir.IntegerType) and not ir.IntegerType(et).is_signless:
        raise TypeError(f"no host scalar of element type {et}")
    return _one("tensor.extract", [x], [et])


def scalar_i64(x: Value) -> Value:
    """A signless host integer widened to i64 (sign-extended), or i64 as it is."""
    width = ir.IntegerType(x.type).width
    return x if width == 64 else _one("arith.extsi", [x], [ir.IntegerType.get_signless(64)])


def int_scalar(value: int, width: int = 64) -> Value:
    """A host integer constant of `width` bits (1: a bool)."""
    t = ir.IntegerType.get_signless(width)
    return _one("arith.constant", [], [t], {"value": ir.IntegerAttr.get(t, int(value))})


def scalar_op(op: str, a: Value, b: Value) -> Value:
    """arith.<op> of two host scalars (addi, subi, andi, ori, ...)."""
    return _one(f"arith.{op}", [a, b], [a.type])


def scalar_compare(predicate: str, a: Value, b: Value) -> Value:
    """arith.cmpi `predicate` (slt, sle, sgt, sge, eq, ne) of two host integers: an i1."""
    names = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
    return _one("arith.cmpi", [a, b], [ir.IntegerType.get_signless(1)],
                {"predicate": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), names.index(predicate))})


def assert_(flag: Value, message: str) -> None:
    """Fail the call at run time with `message` unless `flag` holds: an i1 host scalar or a
    tensor<i1>. IREE runs `cf.assert` on the host; the invocation fails with
    FAILED_PRECONDITION and the message (StableHLO has no op for this)."""
    if isinstance(flag.type, ir.RankedTensorType):
        flag = to_scalar(flag)
    _create("cf.assert", [flag], [], {"msg": ir.StringAttr.get(message)})


def fresh_copy(x: Value) -> Value:
    """`x` in a buffer of its own: x + optimization_barrier(0) (`or` for i1), which no folder
    removes (passes/ir/separate_loop_inits.py says why a While's initial values need one)."""
    et = element_type_of(x)
    is_bool = isinstance(et, ir.IntegerType) and ir.IntegerType(et).width == 1
    zero = _one("stablehlo.optimization_barrier", [scalar_like(0, x)])
    return binary("or" if is_bool else "add", x, zero)


# -- complex numbers (appended for Real, Imag, Complex, ComplexAbs, the FFTs) ----------------------

def complex_(re: Value, im: Value) -> Value:
    """stablehlo.complex of two same-typed f32/f64 tensors: a complex<f32>/complex<f64> tensor."""
    return _one("stablehlo.complex", [re, im])


def real(x: Value) -> Value:
    """stablehlo.real: the real parts of a complex tensor (its element type's float type)."""
    return _one("stablehlo.real", [x])


def imag(x: Value) -> Value:
    """stablehlo.imag: the imaginary parts of a complex tensor (its element type's float type)."""
    return _one("stablehlo.imag", [x])


def is_complex(x: Value) -> bool:
    """Whether x's element type is complex<...>."""
    return isinstance(element_type_of(x), ir.ComplexType)


def conj(x: Value) -> Value:
    """The complex conjugate, complex(real, -imag) (StableHLO has no conjugate op); x itself
    when it is real."""
    if not is_complex(x):
        return x
    return complex_(real(x), unary("negate", imag(x)))


def fft(x: Value, fft_type: str, lengths: Sequence[int], out_shape: Sequence[int], dtype) -> Value:
    """stablehlo.fft of type FFT, IFFT, RFFT or IRFFT over x's innermost len(lengths) dimensions
    (IREE 3.13 lowers only one power-of-two dimension of complex<f32>: see ops/math/fft.py)."""
    return _one("stablehlo.fft", [x], [tensor_type(out_shape, dtype)],
                {"fft_type": _attr(f"#stablehlo<fft_type {fft_type}>"), "fft_length": i64_array(lengths)})
# -- chlo ops of two operands (appended for the special functions: polygamma, zeta, next_after) --------

def chlo_binary(op: str, a: Value, b: Value) -> Value:
    """chlo.<op> of two same-typed operands (polygamma, zeta, next_after): decomposed into
    StableHLO by IREE's input pipeline."""
    return _one(f"chlo.{op}", [a, b], [a.type])
