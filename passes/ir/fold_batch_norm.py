"""Per-channel scales and shifts after a constant-weight convolution or dot, folded into it.

An inference graph's batch normalization lowers to `(conv(x, W) - mean) * scale + offset`, each
a per-output-channel constant broadcast over the result: three more elementwise ops on every
element the convolution writes. Because a convolution is linear in its weights,

    (conv(x, W) - m) * s + o   ==   conv(x, W * s) + (o - m * s)

where `W * s` scales W along its output-feature dimension. This pass walks from each
convolution or dot_general whose weights are a constant through the chain of add, subtract,
multiply and divide by per-channel (or splat) constants that only it feeds, and leaves one
`conv(x, W')` and one add. ONNX Runtime fuses Conv+BatchNormalization the same way.

Numerics: not bit for bit. W' and the bias are computed in float64 and rounded once to the
weights' type, so each product rounds differently, within the same f32 rounding error the
unfused chain has (the conformance tests' tolerances hold; TensorFlow's own graph transforms,
`fold_batch_norms`, do the same). Training graphs are untouched: their weights are variables,
not constants. Nor are batch norms a reduced-precision module keeps in f32 (KEEP_F32), as Keras'
mixed precision computes them.
"""

from __future__ import annotations

import numpy as np
from iree.compiler import ir

from hlobridge.dialects import stablehlo as hlo

from .ir_helpers import (constant_array, conv_layout, dot_dimensions, element_type_name, erase_dead_ops,
                         i64_list, ops_named, producer, replace, shape, splat_value)
from .reduce_precision import KEEP_F32

_FLOATS = ("f16", "f32", "f64")
_MAX_WEIGHT_ELEMENTS = 1 << 28  # scaled in NumPy at memory speed
_BROADCASTS = ("stablehlo.broadcast_in_dim", "stablehlo.dynamic_broadcast_in_dim")
_CHAIN_OPS = ("stablehlo.add", "stablehlo.subtract", "stablehlo.multiply", "stablehlo.divide")


def _conv_feature_dims(op) -> tuple[int, int] | None:
    """(result dim, weight dim) of a convolution's output features; None for a batch-grouped
    convolution."""
    layout = conv_layout(op)
    if layout is None or int(ir.IntegerAttr(op.attributes["batch_group_count"]).value) != 1:
        return None
    _, kernel, out = layout
    return out.index("f"), kernel.index("o")


def _dot_feature_dims(op) -> tuple[int, int] | None:
    """(result dim, weight dim) of a dot_general's last result dim when it is one of the
    weights' (right operand's) free dims."""
    dims = dot_dimensions(op)
    taken = dims["rhs_batching_dimensions"] + dims["rhs_contracting_dimensions"]
    rhs_free = [d for d in range(len(shape(op.operands[1]))) if d not in taken]
    if not rhs_free:
        return None
    return len(shape(op.results[0])) - 1, rhs_free[-1]


_FEATURE_DIMS = {"stablehlo.convolution": _conv_feature_dims, "stablehlo.dot_general": _dot_feature_dims}


def _channel_constant(value: ir.Value, feature_dim: int, channels: int):
    """(vector, broadcast) for a per-channel constant: a constant holding one value per channel
    broadcast along `feature_dim` (static, or to a `?` batch), as a float64 vector of `channels`
    entries, with the broadcast op; a splat gives (vector, None); anything else None."""
    scalar = splat_value(value)
    if scalar is not None and not isinstance(scalar, bool):
        return np.full(channels, scalar, dtype=np.float64), None
    broadcast = producer(value)
    if broadcast is None or broadcast.name not in _BROADCASTS:
        return None
    # a vector along the features: [C] to dims [f], or Keras 3's [1, 1, 1, C] to dims [0, 1, 2, 3]
    dims, source = i64_list(broadcast.attributes["broadcast_dimensions"]), shape(broadcast.operands[0])
    if feature_dim not in dims or any(n != (channels if d == feature_dim else 1) for d, n in zip(dims, source)):
        return None
    vector = constant_array(broadcast.operands[0], channels)
    if vector is None:
        return None
    return np.broadcast_to(vector, source).reshape(channels).astype(np.float64), broadcast  # (a splat is 0-d)


def _broadcast_like(template, vector: np.ndarray) -> ir.Value:
    """`vector` (one value per channel) broadcast as `template` broadcasts its own constant: in
    that constant's shape, to the same result type (and, for a dynamic_broadcast_in_dim, with
    the same run-time shape operand and attributes)."""
    source = hlo.constant(vector.reshape(shape(template.operands[0])))
    return ir.Operation.create(template.name, results=[template.results[0].type],
                               operands=[source, *template.operands[1:]],
                               attributes={name: template.attributes[name] for name in template.attributes}).result


def _only_user(value: ir.Value) -> ir.Operation | None:
    uses = list(value.uses)
    return uses[0].owner if len(uses) == 1 else None


def _step(op, chain: ir.Value, feature_dim: int, channels: int, scale, bias):
    """(scale, bias, broadcast) after `op` applies to `chain` (the value scale * conv + bias),
    with the broadcast of its constant (None for a splat); None when `op` is not a per-channel
    affine step."""
    if op.name not in _CHAIN_OPS or len(op.operands) != 2 or KEEP_F32 in op.attributes:
        return None  # (a batch norm Keras' mixed precision keeps in f32 stays as it is)
    left, right = op.operands
    if left == right:
        return None
    other = right if left == chain else left
    found = _channel_constant(other, feature_dim, channels)
    if found is None:
        return None
    c, broadcast = found
    if op.name == "stablehlo.add":
        return scale, bias + c, broadcast
    if op.name == "stablehlo.multiply":
        return scale * c, bias * c, broadcast
    if left != chain:  # c - x, c / x: not affine in x's scale
        return None
    if op.name == "stablehlo.subtract":
        return scale, bias - c, broadcast
    return (scale / c, bias / c, broadcast) if np.all(c != 0) else None


def _fold(contraction) -> bool:
    """Fold the affine chain after `contraction`; whether anything changed."""
    if element_type_name(contraction.results[0]) not in _FLOATS:
        return False
    dims = _FEATURE_DIMS[contraction.name](contraction)
    weights = constant_array(contraction.operands[1], _MAX_WEIGHT_ELEMENTS)
    if dims is None or weights is None:
        return False
    weights = np.broadcast_to(weights, shape(contraction.operands[1]))  # (a splat is 0-d)
    feature_dim, weight_dim = dims
    channels = shape(contraction.results[0])[feature_dim]
    if weights.shape[weight_dim] != channels:
        return False
    scale, bias = np.ones(channels), np.zeros(channels)
    chain, last, steps, scaled, template = contraction.results[0], None, 0, False, None
    while (user := _only_user(chain)) is not None:
        step = _step(user, chain, feature_dim, channels, scale, bias)
        if step is None:
            break
        scaled |= user.name in ("stablehlo.multiply", "stablehlo.divide")
        scale, bias, broadcast = step
        template = template or broadcast
        chain, last, steps = user.results[0], user, steps + 1
    if last is None or (steps < 2 and not scaled):
        return False  # a lone bias add: nothing to save
    out_shape = shape(last.results[0])
    if template is None and np.any(bias != 0) and any(d < 0 for d in out_shape):
        return False  # (splats only, to a `?` shape: nothing to broadcast the shift like)
    dtype = weights.dtype
    with ir.InsertionPoint(contraction), contraction.location:
        along = [1] * weights.ndim
        along[weight_dim] = channels
        contraction.operands[1] = hlo.constant((weights.astype(np.float64) * scale.reshape(along)).astype(dtype))
    with ir.InsertionPoint(last), last.location:
        if np.any(bias != 0):
            if template is None:
                offset = hlo.broadcast_in_dim(hlo.constant(bias.astype(dtype)), out_shape, [feature_dim])
            else:
                offset = _broadcast_like(template, bias.astype(dtype))
            result = hlo.add(contraction.results[0], offset)
        else:
            result = contraction.results[0]
    replace(last, result)
    return True


def fold_batch_norm(module: ir.Module) -> int:
    """Fold every constant-weight contraction's per-channel affine chain; returns how many."""
    folded = sum(_fold(op) for op in ops_named(module, tuple(_FEATURE_DIMS)))
    if folded:
        erase_dead_ops(module)
    return folded
