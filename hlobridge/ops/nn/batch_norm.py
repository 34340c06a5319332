"""Batch normalization and its gradient: FusedBatchNorm/V2/V3, FusedBatchNormGrad/V2/V3.

As TensorFlow's kernels: y scales by rsqrt(var + eps) * scale, computed first; training mode
normalizes with the batch's biased variance and reports the Bessel-corrected one. NHWC, NCHW,
NDHWC and NCDHW: the channel axis is 1 for channels-first formats, else the last.
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ...spec import TensorSpec
from ..helpers import known_dims, require_rank, scalar
from ..registry import register
from ..typesets import FLOAT


# Inputs x, scale, offset, mean, variance. Outputs y (T); batch_mean, batch_variance,
# reserve_space_1, reserve_space_2 (U); V3 adds reserve_space_3, a scalar zero on CPU.
# Inference: y from the given mean/variance, which are passed through. Training: y from the
# batch mean and biased variance; batch_variance is Bessel-corrected (n / (n - 1)), both mixed
# into the given running values when exponential_avg_factor != 1; reserve spaces hold the batch
# mean and the biased variance.


def _bn_channel_axis(ctx, rank: int) -> int:
    fmt = ctx.attr("data_format", "NHWC")
    if fmt not in ("NHWC", "NCHW", "NDHWC", "NCDHW"):
        raise ctx.error(f"data_format '{fmt}' is not supported")
    return 1 if fmt.startswith("NC") else rank - 1


def _bn_param_dtype(ctx):
    return ctx.attr("U", ctx.inputs[0].dtype)


def bn_infer(ctx):
    """Output specs of FusedBatchNorm/V2/V3 (and _FusedBatchNormEx): y, then the per-channel U outputs."""
    x, scale = ctx.inputs[:2]
    require_rank(ctx, 0, (4, 5))
    c = None if x.shape is None else x.shape[_bn_channel_axis(ctx, len(x.shape))]
    c = c if c is not None else known_dims(scale, 1)[0]
    u = _bn_param_dtype(ctx)
    outs = [TensorSpec(x.dtype, x.shape)] + [TensorSpec(u, (c,)) for _ in range(4)]
    if has_reserve_space_3(ctx):
        outs.append(TensorSpec(u, ()))
    return outs


def bn_normalize(x, axis, mean, var, scale, offset, eps):
    """(x - mean) * (rsqrt(var + eps) * scale) + offset, the scaling factor first as TF does."""
    shape = hlo.shape_of(x)

    def bc(v):
        return hlo.broadcast_in_dim(v, shape, [axis])
    factor = hlo.multiply(hlo.unary("rsqrt", hlo.add(var, hlo.scalar_like(eps, var))), scale)
    return hlo.add(hlo.multiply(hlo.subtract(x, bc(mean)), bc(factor)), bc(offset))


def bn_lower(ctx, x, scale, offset, mean, var):
    """FusedBatchNorm's lowering: inference with the given statistics, or training with the batch's."""
    u = np.dtype(_bn_param_dtype(ctx))
    xu = x if ctx.inputs[0].dtype == u else hlo.convert(x, u)
    shape = hlo.shape_of(x)
    axis = _bn_channel_axis(ctx, len(shape))
    eps = ctx.attr("epsilon", 1e-4)
    if ctx.attr("is_training", True):
        n = int(np.prod(shape)) // shape[axis]
        rest = [d for d in range(len(shape)) if d != axis]
        inv_n = hlo.scalar_like(float(u.type(1) / u.type(n)), scale)
        batch_mean = hlo.multiply(hlo.reduce(xu, scalar(0, u), rest), inv_n)
        centered = hlo.subtract(xu, hlo.broadcast_in_dim(batch_mean, shape, [axis]))
        batch_var = hlo.multiply(hlo.reduce(hlo.multiply(centered, centered), scalar(0, u), rest), inv_n)
        y = bn_normalize(xu, axis, batch_mean, batch_var, scale, offset, eps)
        factor = ctx.attr("exponential_avg_factor", 1.0)
        adjust = float(u.type(n) / u.type(max(n - 1, 1)))
        if factor == 1.0:
            new_mean, new_var = batch_mean, hlo.multiply(batch_var, hlo.scalar_like(adjust, scale))
        else:
            keep = hlo.scalar_like(1 - factor, scale)
            new_mean = hlo.add(hlo.multiply(keep, mean), hlo.multiply(hlo.scalar_like(factor, scale), batch_mean))
            new_var = hlo.add(hlo.multiply(keep, var),
                              hlo.multiply(hlo.scalar_like(float(u.type(factor) * u.type(adjust)), scale), batch_var))
        outs = [y, new_mean, new_var, batch_mean, batch_var]
    else:
        outs = [bn_normalize(xu, axis, mean, var, scale, offset, eps), mean, var, mean, var]
    if ctx.inputs[0].dtype != u:
        outs[0] = hlo.convert(outs[0], ctx.inputs[0].dtype)
    if has_reserve_space_3(ctx):
        outs.append(scalar(0, u))
    return outs


def np_bn(ctx, x, scale, offset, mean, var):
    """NumPy reference of FusedBatchNorm, in float64."""
    u = np.dtype(_bn_param_dtype(ctx))
    axis = _bn_channel_axis(ctx, x.ndim)
    rest = tuple(d for d in range(x.ndim) if d != axis)
    bshape = [1] * x.ndim
    bshape[axis] = -1
    xu = x.astype(np.float64)
    eps = u.type(ctx.attr("epsilon", 1e-4))
    training = ctx.attr("is_training", True)
    if training:
        n = x.size // max(x.shape[axis], 1)
        m = xu.mean(axis=rest)
        v = ((xu - m.reshape(bshape)) ** 2).mean(axis=rest)
    else:
        m, v = mean.astype(np.float64), var.astype(np.float64)
    factor = (1 / np.sqrt(v + eps)) * scale
    y = (xu - m.reshape(bshape)) * factor.reshape(bshape) + offset.reshape(bshape)
    if training:
        f = ctx.attr("exponential_avg_factor", 1.0)
        corrected = v * (n / max(n - 1, 1))
        new_m, new_v = (m, corrected) if f == 1.0 else ((1 - f) * mean + f * m, (1 - f) * var + f * corrected)
        outs = [y, new_m, new_v, m, v]
    else:
        outs = [y, mean, var, mean, var]
    outs = [outs[0].astype(x.dtype)] + [np.asarray(o).astype(u) for o in outs[1:]]
    if has_reserve_space_3(ctx):
        outs.append(np.zeros((), u))
    return outs


BN_ATTRS = ("T", "epsilon", "exponential_avg_factor", "data_format", "is_training")
BN_OUTPUTS = ("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2", "reserve_space_3")
for _op, _extra in {"FusedBatchNorm": (), "FusedBatchNormV2": ("U",), "FusedBatchNormV3": ("U",)}.items():
    register(_op, infer=bn_infer, lower=bn_lower, kernel=np_bn, attrs=BN_ATTRS + _extra, dtypes=FLOAT,
             output_args=BN_OUTPUTS[:6 if _op == "FusedBatchNormV3" else 5])

# FusedBatchNormGrad/V2/V3: inputs y_backprop, x, scale, reserve_space_1 (the forward's batch
# mean, or the population mean in inference), reserve_space_2 (its biased variance, or the
# population variance) [, reserve_space_3]; outputs x_backprop (T), scale_backprop and
# offset_backprop (U, per channel), and two empty reserve spaces. TensorFlow's formulas:
#   r = rsqrt(var + eps), xc = x - mean
#   offset_backprop = sum(dy), scale_backprop = sum(dy * xc) * r
#   training:  x_backprop = scale * r * (dy - mean(dy) - xc * mean(dy * xc) * r^2)
#   inference: x_backprop = dy * scale * r


def _bn_grad_infer(ctx):
    dy, x, scale = ctx.inputs[:3]
    require_rank(ctx, 0, (4, 5))
    c = None if x.shape is None else x.shape[_bn_channel_axis(ctx, len(x.shape))]
    c = c if c is not None else known_dims(scale, 1)[0]
    u = _bn_param_dtype(ctx)
    return [TensorSpec(dy.dtype, x.shape if x.shape is not None else dy.shape), TensorSpec(u, (c,)),
            TensorSpec(u, (c,)), TensorSpec(u, (0,)), TensorSpec(u, (0,))]


def _bn_grad_lower(ctx, dy, x, scale, mean, var, *_reserve_3):
    u = np.dtype(_bn_param_dtype(ctx))
    if ctx.inputs[0].dtype != u:
        dy, x = hlo.convert(dy, u), hlo.convert(x, u)
    shape = hlo.shape_of(x)
    axis = _bn_channel_axis(ctx, len(shape))
    rest = [d for d in range(len(shape)) if d != axis]
    n = int(np.prod(shape)) // shape[axis]

    def bc(v):
        return hlo.broadcast_in_dim(v, shape, [axis])

    def total(v):
        return hlo.reduce(v, scalar(0, u), rest)
    r = hlo.unary("rsqrt", hlo.add(var, hlo.scalar_like(ctx.attr("epsilon", 1e-4), var)))
    xc = hlo.subtract(x, bc(mean))
    dy_xc = total(hlo.multiply(dy, xc))
    scale_backprop, offset_backprop = hlo.multiply(dy_xc, r), total(dy)
    if ctx.attr("is_training", True):
        inv_n = hlo.scalar_like(1.0 / n, r)
        inner = hlo.subtract(hlo.subtract(dy, bc(hlo.multiply(offset_backprop, inv_n))),
                             hlo.multiply(xc, bc(hlo.multiply(hlo.multiply(dy_xc, inv_n), hlo.multiply(r, r)))))
        dx = hlo.multiply(inner, bc(hlo.multiply(scale, r)))
    else:
        dx = hlo.multiply(dy, bc(hlo.multiply(scale, r)))
    if ctx.inputs[0].dtype != u:
        dx = hlo.convert(dx, ctx.inputs[0].dtype)
    empty = hlo.constant(np.zeros((0,), u))
    return [dx, scale_backprop, offset_backprop, empty, empty]


def _np_bn_grad(ctx, dy, x, scale, mean, var, *_reserve_3):
    u = np.dtype(_bn_param_dtype(ctx))
    axis = _bn_channel_axis(ctx, x.ndim)
    rest = tuple(d for d in range(x.ndim) if d != axis)
    bshape = [1] * x.ndim
    bshape[axis] = -1
    d, xd = dy.astype(np.float64), x.astype(np.float64)
    r = 1 / np.sqrt(var.astype(np.float64) + np.float64(u.type(ctx.attr("epsilon", 1e-4))))
    xc = xd - mean.astype(np.float64).reshape(bshape)
    scale_backprop, offset_backprop = (d * xc).sum(axis=rest) * r, d.sum(axis=rest)
    coef = (scale * r).reshape(bshape)
    if ctx.attr("is_training", True):
        dx = coef * (d - d.mean(axis=rest).reshape(bshape)
                     - xc * ((d * xc).mean(axis=rest) * r * r).reshape(bshape))
    else:
        dx = d * coef
    empty = np.zeros((0,), u)
    return [dx.astype(dy.dtype), scale_backprop.astype(u), offset_backprop.astype(u), empty, empty]


_BN_GRAD_ATTRS = ("T", "epsilon", "data_format", "is_training")
for _op, _extra in {"FusedBatchNormGrad": (), "FusedBatchNormGradV2": ("U",), "FusedBatchNormGradV3": ("U",)}.items():
    register(_op, infer=_bn_grad_infer, lower=_bn_grad_lower, kernel=_np_bn_grad, attrs=_BN_GRAD_ATTRS + _extra,
             dtypes=FLOAT, output_args=("x_backprop", "scale_backprop", "offset_backprop", "reserve_space_4",
                                        "reserve_space_5"))


def has_reserve_space_3(ctx) -> bool:
    """V3 and _FusedBatchNormEx have a sixth output, reserve_space_3 (a scalar zero on CPU)."""
    return ctx.op in ("FusedBatchNormV3", "_FusedBatchNormEx")
