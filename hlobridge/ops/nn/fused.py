"""Grappler's fused ops: _FusedMatMul, _FusedConv2D, _FusedBatchNormEx.

Each is the composition it stands for, and its rule is built from the plain ops' rules (a
Grappler rewrite must not change values).
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ..math import elementwise
from ..helpers import broadcast_shapes
from ..registry import register
from ..typesets import FLOAT
from .batch_norm import BN_ATTRS, BN_OUTPUTS, bn_infer, bn_lower, bn_normalize, np_bn
from .conv import CONV_ATTRS, conv_infer, conv_lower, np_conv
from .geometry import Format
from .matmul import batch_matmul_infer, batch_matmul_kernel, dot


# _FusedMatMul / _FusedConv2D: the contraction, then fused_ops in order: "BiasAdd" (args[0]) or,
# for convolutions, "FusedBatchNorm" (args: scale, offset, mean, variance), then at most one
# activation.

_ACTIVATIONS = ("Relu", "Relu6", "Elu", "Tanh", "Sigmoid", "LeakyRelu")


def _fused_plan(ctx):
    ops = list(ctx.attr("fused_ops", []))
    num_args = ctx.attr("num_args", len(ctx.inputs) - 2)
    if ctx.attr("num_host_args", 0):
        raise ctx.error("host_args (quantized _FusedConv2D) are not supported")
    first = {"BiasAdd": 1, "FusedBatchNorm": 4}
    if not ops or ops[0] not in first or (ops[0] == "FusedBatchNorm" and ctx.op != "_FusedConv2D") \
            or len(ops) > 2 or (len(ops) == 2 and ops[1] not in _ACTIVATIONS) or num_args != first[ops[0]]:
        raise ctx.error(f"fused_ops {ops} with num_args {num_args} is not supported (BiasAdd"
                        f"{' or FusedBatchNorm' if ctx.op == '_FusedConv2D' else ''}, then one of "
                        f"{', '.join(_ACTIVATIONS)})")
    return ops[0], (ops[1] if len(ops) == 2 else None)


def _fused_infer(ctx):
    _fused_plan(ctx)
    _check_filter_format(ctx)
    if ctx.op == "_FusedMatMul":
        return batch_matmul_infer(ctx)
    return conv_infer(ctx)


def _activation_lower(ctx, name, x):
    if name == "LeakyRelu":
        alpha = hlo.scalar_like(ctx.attr("leakyrelu_alpha", 0.2), x)
        return hlo.select(hlo.compare("GT", x, hlo.scalar_like(0, x)), x, hlo.multiply(alpha, x))
    how = elementwise.UNARY[name][0]
    return hlo.unary(how, x) if isinstance(how, str) else how(x)


def _activation_np(ctx, name, x):
    if name == "LeakyRelu":
        return np.where(x > 0, x, x * ctx.attr("leakyrelu_alpha", 0.2))
    return elementwise.UNARY[name][1](x)


def _channel_axis(ctx, rank):
    return Format(ctx).channel if ctx.op == "_FusedConv2D" else rank - 1


def _fused_lower(ctx, a, b, *args):
    first, act = _fused_plan(ctx)
    out = ctx.out()
    y = dot(ctx, a, b, out.shape, out.dtype) if ctx.op == "_FusedMatMul" else conv_lower(ctx, a, b)
    axis = _channel_axis(ctx, len(out.shape))
    if first == "BiasAdd":
        y = hlo.add(y, hlo.broadcast_in_dim(args[0], out.shape, [axis]))
    else:
        scale, offset, mean, var = args
        y = bn_normalize(y, axis, mean, var, scale, offset, ctx.attr("epsilon", 1e-4))
    return _activation_lower(ctx, act, y) if act else y


def _np_fused(ctx, a, b, *args):
    first, act = _fused_plan(ctx)
    y = batch_matmul_kernel(ctx, a, b) if ctx.op == "_FusedMatMul" else np_conv(ctx, a, b)
    shape = [1] * y.ndim
    shape[_channel_axis(ctx, y.ndim)] = -1
    y = y.astype(np.float64)
    if first == "BiasAdd":
        y = y + args[0].reshape(shape)
    else:
        scale, offset, mean, var = (v.astype(np.float64).reshape(shape) for v in args)
        eps = np.float32(ctx.attr("epsilon", 1e-4))
        y = (y - mean) * ((1 / np.sqrt(var + eps)) * scale) + offset
    y = _activation_np(ctx, act, y) if act else y
    return np.asarray(y).astype(ctx.out().dtype)


_FUSED_ATTRS = ("T", "num_args", "fused_ops", "epsilon", "leakyrelu_alpha")


def _check_filter_format(ctx):
    if ctx.attr("filter_format", "HWIO") != "HWIO":
        raise ctx.error(f"filter_format '{ctx.attr('filter_format')}' is not supported (HWIO)")
register("_FusedMatMul", infer=_fused_infer, lower=_fused_lower, kernel=_np_fused, dtypes=FLOAT,
         attrs=_FUSED_ATTRS + ("transpose_a", "transpose_b", "grad_a", "grad_b"))
register("_FusedConv2D", infer=_fused_infer, lower=_fused_lower, kernel=_np_fused, dtypes=FLOAT,
         attrs=_FUSED_ATTRS + CONV_ATTRS + ("use_cudnn_on_gpu", "TArgs", "num_host_args", "filter_format"))


# _FusedBatchNormEx: Grappler's FusedBatchNormV3, plus optionally one side input added to y, then
# activation_mode (Identity or Relu, the two TensorFlow implements): y = act(bn(x) + side).


def _bn_ex_mode(ctx) -> str:
    mode, n_side = ctx.attr("activation_mode", "Identity"), ctx.attr("num_side_inputs", 0)
    if mode not in ("Identity", "Relu"):
        raise ctx.error(f"activation_mode '{mode}' is not supported (Identity or Relu)")
    if n_side not in (0, 1) or len(ctx.inputs) != 5 + n_side:
        raise ctx.error(f"num_side_inputs={n_side} with {len(ctx.inputs)} inputs (0 or 1 side input)")
    return mode


def _bn_ex_infer(ctx):
    _bn_ex_mode(ctx)
    outs = bn_infer(ctx)
    if len(ctx.inputs) == 6:
        merged = broadcast_shapes(ctx, outs[0].shape, ctx.inputs[5].shape)
        if merged != outs[0].shape:
            raise ctx.error(f"side input {ctx.inputs[5]} does not match y {outs[0]}")
    return outs


def _bn_ex_lower(ctx, x, scale, offset, mean, var, *side):
    mode = _bn_ex_mode(ctx)
    outs = bn_lower(ctx, x, scale, offset, mean, var)
    y = hlo.add(outs[0], side[0]) if side else outs[0]
    return [hlo.maximum(y, hlo.scalar_like(0, y)) if mode == "Relu" else y] + outs[1:]


def _np_bn_ex(ctx, x, scale, offset, mean, var, *side):
    mode = _bn_ex_mode(ctx)
    outs = np_bn(ctx, x, scale, offset, mean, var)
    y = outs[0] + side[0] if side else outs[0]
    return [np.maximum(y, 0).astype(x.dtype) if mode == "Relu" else y] + outs[1:]


register("_FusedBatchNormEx", infer=_bn_ex_infer, lower=_bn_ex_lower, kernel=_np_bn_ex, dtypes=FLOAT,
         attrs=BN_ATTRS + ("U", "num_side_inputs", "activation_mode"), output_args=BN_OUTPUTS)
