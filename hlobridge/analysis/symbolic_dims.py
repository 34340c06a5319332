"""Unknown dimensions as symbols: what shape inference knows about a graph with a `?` batch.

A TF graph with an unknown batch (or sequence length) computes with its shape: Keras'
Flatten and Dense on 3-D inputs, attention's head split and a position embedding's `range`
read `tf.shape(x)`, slice it, multiply it and pack it back into a shape for Reshape, Fill or
BroadcastTo. TensorFlow's own shape inference follows those values partially; so does this.

The rules, and the public names other modules use (stable: the static-bucket work builds on them):

- a `?` is a symbol, and a `?` at the same position of two operands of an elementwise op,
  or the batch of a matmul's rows and its result's, is the same symbol; a `?` is never 1,
  so a broadcast keeps a `?` as itself (non-expanding) and expands only static 1s
  (ops/traced.py `broadcast_shapes`, dialects/dynamic_shapes.py);
- products and quotients: a Reshape of [?, 7, 7, 32] to [-1, 1568] or to [?, 1568] is a merge
  of neighbouring dimensions (b*49*32 / 1568 = b), and [?, 8] to [?, 2, 4] a split:
  `dialects.dynamic_shapes.reshape` writes them as tensor.collapse_shape / expand_shape;
- `TensorSpec.partial` (float64, NaN for unknown entries) is the partly known value of an
  integer shape tensor: `Shape` of a `?`-batch tensor is [NaN, 7, 7, 32], and the shape
  arithmetic after it (`PARTIAL_OPS`: StridedSlice, Pack, ConcatV2, Prod, Mul, ...) runs on
  it through each op's own NumPy kernel (NaN propagates: an unknown times 7 stays unknown).
  Where the result has no NaN left it is an ordinary constant `value` (a reduction's axes,
  `Shape(x)[1:]`), so everything downstream folds as before; where it has, Reshape, Fill
  and BroadcastTo take its known entries as their output's dimensions and its NaNs as `?`
  (`shape_from`), and the tensor itself is computed at run time (`Shape` lowers to
  `get_dimension_size`).

`partial_outputs(entry, ctx, inputs, outputs)` is the hook shape inference calls for a node
that did not fold; `shape_from(spec)` gives the dims a shape-taking op reads.
"""

from __future__ import annotations

import numpy as np

from ..spec import TensorSpec

# Ops whose kernels are index and integer arithmetic: run on a partial value, NaN propagates.
PARTIAL_OPS = frozenset({
    "StridedSlice", "Slice", "GatherV2", "Pack", "ConcatV2", "Prod", "Mul", "Identity", "Squeeze",
    "ExpandDims", "Reshape", "Unpack", "Add", "AddV2", "Sub", "FloorDiv", "Maximum", "Minimum",
})
SHAPE_OPS = frozenset({"Shape", "ShapeN"})


def _is_int(dtype) -> bool:
    return np.issubdtype(np.dtype(dtype), np.integer)


def _known(spec: TensorSpec):
    """The spec's value or partial value as float64, or None."""
    if spec.value is not None:
        return np.asarray(spec.value, np.float64) if _is_int(spec.dtype) else None
    return spec.partial


def partial_outputs(entry, ctx, inputs: list[TensorSpec], outputs: list[TensorSpec]) -> list[TensorSpec]:
    """`outputs` with the partial values (or, where every entry is known, the values) that the
    node's op computes from its inputs' values and partial values."""
    op = entry.name
    if op in SHAPE_OPS:
        return [_with(o, np.asarray([np.nan if d is None else d for d in s.shape], np.float64))
                if s.shape is not None and not s.is_static and o.value is None else o
                for s, o in zip(inputs, outputs)]
    if op == "Cast" and inputs and inputs[0].partial is not None and _is_int(outputs[0].dtype):
        return [_with(outputs[0], inputs[0].partial)]
    if op not in PARTIAL_OPS or entry.kernel is None or not any(s.partial is not None for s in inputs):
        return outputs
    if not all(o.dtype is not None and _is_int(o.dtype) and o.shape is not None and None not in o.shape
               for o in outputs):
        return outputs
    args = [s.partial if s.partial is not None else s.value for s in inputs]
    if any(a is None for a in args):
        return outputs
    saved = ctx.outputs
    ctx.outputs = [TensorSpec(np.float64, o.shape) for o in outputs]
    try:
        with np.errstate(all="ignore"):
            values = entry.kernel(ctx, *args)
    except Exception:  # noqa: BLE001  (a kernel not written for NaN: nothing more is known)
        return outputs
    finally:
        ctx.outputs = saved
    values = values if isinstance(values, (list, tuple)) else [values]
    return [_with(o, np.asarray(v, np.float64).reshape(o.shape)) for o, v in zip(outputs, values)]


def _with(spec: TensorSpec, known: np.ndarray) -> TensorSpec:
    if not np.isnan(known).any():
        return TensorSpec(spec.dtype, spec.shape, known.astype(spec.dtype), spec.handle)
    return TensorSpec(spec.dtype, spec.shape, None, spec.handle, partial=known)


def shape_from(spec: TensorSpec) -> list | None:
    """The dims a shape-taking op reads from its shape input: ints, None for `?` entries;
    None when nothing is known."""
    if spec.value is not None:
        return [int(d) for d in np.ravel(spec.value)]
    if spec.partial is None:
        return None
    return [None if np.isnan(d) else int(d) for d in np.ravel(spec.partial)]
