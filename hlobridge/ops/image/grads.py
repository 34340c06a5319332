"""Gradients of the image ops: ResizeBilinearGrad, ResizeNearestNeighborGrad, LRNGrad.

A resize is linear in its image and separable: out = Ry . x . Rx^T per batch and channel, with
Ry [out_h, in_h] and Rx [out_w, in_w] the interpolation weights of resize.py (the same functions,
so forward and gradient cannot disagree on TF's geometry). Its gradient is therefore
dx = Ry^T . g . Rx: two dot_generals with constant matrices, where TensorFlow's CPU kernels
scatter-add each output's share onto its (up to four) source pixels, in float32 for bilinear
(resize_bilinear_op.cc ResizeGradCore) and in T for nearest neighbour.

LRNGrad follows TF's CPU kernel (lrn_op.cc): with norm = bias + alpha * window_sum(x^2),
dx = g * norm^-beta - 2 * alpha * beta * x * window_sum(g * y / norm), where y is LRN's output
as given (not recomputed) and the window is the same 2r + 1 channels.
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ...spec import TensorSpec
from ..helpers import ints, value_of
from .resize import (F32, RESIZE_DTYPES, resize_flags, bilinear_weights, lrn_infer, lrn_params, lrn_window_sum,
                    nearest_indices, np_lrn_window_sum)
from ..registry import register
from ..typesets import FLOAT

# -- resize gradients ---------------------------------------------------------------------------


def resize_matrix(op: str, in_size: int, out_size: int, align: bool, half: bool) -> np.ndarray:
    """[out_size, in_size] float32: the weight of input pixel i in output pixel o along one axis
    (bilinear: 1 - lerp and lerp, as TF computes them in float32; nearest: one 1 per row)."""
    m = np.zeros((out_size, in_size), np.float32)
    rows = np.arange(out_size)
    if op.startswith("ResizeNearestNeighbor"):
        m[rows, nearest_indices(in_size, out_size, align, half)] = 1
    else:
        lower, upper, lerp = bilinear_weights(in_size, out_size, align, half)
        np.add.at(m, (rows, lower), np.float32(1) - lerp)
        np.add.at(m, (rows, upper), lerp)
    return m


def _original_size(ctx, shape=None) -> tuple:
    """(height, width) of the image the forward resize read: original_image's (bilinear) or the
    constant size input (nearest); None where unknown."""
    if ctx.op == "ResizeBilinearGrad":
        s = ctx.inputs[1].shape if shape is None else shape
        return (None, None) if s is None else tuple(s[1:3])
    size = value_of(ctx, 1)
    if size is None:
        return None, None
    size = ints(size)
    if len(size) != 2 or min(size) <= 0:
        raise ctx.error(f"size must hold 2 positive values, got {size}")
    return tuple(size)


def _resize_grad_infer(ctx):
    resize_flags(ctx)
    g = ctx.inputs[0]
    if g.shape is not None and len(g.shape) != 4:
        raise ctx.error(f"grads must have rank 4 (NHWC), got {g}")
    n, _, _, c = g.shape if g.shape is not None else (None,) * 4
    dtype = ctx.inputs[1].dtype if ctx.op == "ResizeBilinearGrad" else g.dtype
    return [TensorSpec(dtype, (n, *_original_size(ctx), c))]


def _matrices(ctx, grads_shape):
    align, half = resize_flags(ctx)
    (h, w), (_, oh, ow, _) = _original_size(ctx, ctx.out().shape), grads_shape
    return resize_matrix(ctx.op, h, oh, align, half), resize_matrix(ctx.op, w, ow, align, half)


def _np_resize_grad(ctx, g, _original):
    ry, rx = _matrices(ctx, g.shape)
    dx = np.einsum("yi,nyxc,xj->nijc", ry.astype(np.float64), g.astype(np.float64), rx.astype(np.float64))
    return dx.astype(ctx.out().dtype)


def _resize_grad_lower(ctx, g, _original):
    """Ry^T . g . Rx as two dot_generals: [n, oy, ox, c] x [oy, iy] -> [n, ox, c, iy], then
    x [ox, ix] -> [n, c, iy, ix], transposed to NHWC."""
    out = ctx.out()
    ry, rx = _matrices(ctx, hlo.shape_of(g))
    acc = F32 if ctx.op == "ResizeBilinearGrad" else np.dtype(ctx.inputs[0].dtype)
    n, _, ox, c = hlo.shape_of(g)
    (_, h, w, _) = out.shape
    t = hlo.dot_general(g, hlo.constant(ry.astype(acc)), [n, ox, c, h], acc, lhs_contract=[1], rhs_contract=[0])
    t = hlo.dot_general(t, hlo.constant(rx.astype(acc)), [n, c, h, w], acc, lhs_contract=[1], rhs_contract=[0])
    # + 0: a pixel no output reads gets +0, as in TF's zero-initialised sums (a dot of negative
    # gradients with zero weights is -0)
    t = hlo.add(hlo.transpose(t, [0, 2, 3, 1]), hlo.splat(0, [n, h, w, c], acc))
    return t if np.dtype(out.dtype) == acc else hlo.convert(t, out.dtype)


_RESIZE_ATTRS = ("T", "align_corners", "half_pixel_centers")
register("ResizeBilinearGrad", infer=_resize_grad_infer, lower=_resize_grad_lower, kernel=_np_resize_grad,
         attrs=_RESIZE_ATTRS, dtypes=FLOAT)
register("ResizeNearestNeighborGrad", infer=_resize_grad_infer, lower=_resize_grad_lower, kernel=_np_resize_grad,
         attrs=_RESIZE_ATTRS, const_inputs=(1,), dtypes=RESIZE_DTYPES)

# -- LRNGrad --------------------------------------------------------------------------------------


def _lrn_grad_lower(ctx, g, x, y):
    r, bias, alpha, beta = lrn_params(ctx)
    dtype = ctx.out().dtype
    norm = hlo.add(hlo.scalar_like(bias, x), hlo.multiply(hlo.scalar_like(alpha, x),
                                                         lrn_window_sum(hlo.multiply(x, x), r, dtype)))
    spread = lrn_window_sum(hlo.divide(hlo.multiply(g, y), norm), r, dtype)
    direct = hlo.multiply(g, hlo.binary("power", norm, hlo.scalar_like(-beta, x)))
    return hlo.subtract(direct, hlo.multiply(hlo.scalar_like(2 * alpha * beta, x), hlo.multiply(x, spread)))


def _np_lrn_grad(ctx, g, x, y):
    r, bias, alpha, beta = lrn_params(ctx)
    g, x, y = (a.astype(np.float64) for a in (g, x, y))
    norm = bias + alpha * np_lrn_window_sum(x * x, r)
    dx = g * norm ** -beta - 2 * alpha * beta * x * np_lrn_window_sum(g * y / norm, r)
    return dx.astype(ctx.out().dtype)


register("LRNGrad", infer=lrn_infer, lower=_lrn_grad_lower, kernel=_np_lrn_grad,
         attrs=("T", "depth_radius", "bias", "alpha", "beta"), dtypes=("float16", "bfloat16", "float32"))
