"""Image ops: ResizeBilinear, ResizeNearestNeighbor, LRN.

The resize ops follow TensorFlow's CPU kernels (resize_bilinear_op.cc,
resize_nearest_neighbor_op.cc) to the float: the scale is in_size / out_size, or
(in_size - 1) / (out_size - 1) with align_corners; a source coordinate is out * scale, or
(out + 0.5) * scale - 0.5 with half_pixel_centers (nearest neighbour: no - 0.5, then floor,
or round half away from zero with align_corners), all in float32. Bilinear clamps its two
neighbours into the image but keeps the unclamped fraction as the weight, and blends as
top = tl + (tr - tl) * x_lerp, bottom likewise, out = top + (bottom - top) * y_lerp, in
float32 whatever the input type.

Shapes are static where they compile, so the neighbour indices and weights are computed
once, in NumPy, by the same functions the kernels use, and enter the IR as constants: the
lowering is two gathers per axis and the blend.
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ...spec import TensorSpec
from ..helpers import ints, same_as_input, scalar, value_of
from ..registry import register
from ..shapes.gather_scatter import take
from ..typesets import FLOAT, SIGNED

F32 = np.dtype(np.float32)
RESIZE_DTYPES = FLOAT + SIGNED + ("uint8", "uint16")


# -- resize geometry (shared by the kernels and the lowerings) -----------------------------------

def _scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    if align_corners and out_size > 1:
        return np.float32(in_size - 1) / np.float32(out_size - 1)
    return np.float32(in_size) / np.float32(out_size)


def bilinear_weights(in_size: int, out_size: int, align_corners: bool, half_pixel: bool):
    """(lower, upper, lerp) per output position, as TF's compute_interpolation_weights."""
    scale = _scale(in_size, out_size, align_corners)
    pos = np.arange(out_size, dtype=np.float32)
    src = (pos + np.float32(0.5)) * scale - np.float32(0.5) if half_pixel else pos * scale
    floor = np.floor(src)
    lower = np.maximum(floor, 0).astype(np.int64)
    upper = np.minimum(np.ceil(src), in_size - 1).astype(np.int64)
    return lower, upper, (src - floor).astype(np.float32)


def nearest_indices(in_size: int, out_size: int, align_corners: bool, half_pixel: bool):
    """The input index each output position of ResizeNearestNeighbor reads, in float32 as TF computes it."""
    scale = _scale(in_size, out_size, align_corners)
    pos = np.arange(out_size, dtype=np.float32)
    src = (pos + np.float32(0.5)) * scale if half_pixel else pos * scale
    picked = np.floor(src + np.float32(0.5)) if align_corners else np.floor(src)  # roundf: src >= 0
    index = np.minimum(picked.astype(np.int64), in_size - 1)
    return np.maximum(index, 0) if half_pixel else index


def resize_flags(ctx):
    align, half = bool(ctx.attr("align_corners", False)), bool(ctx.attr("half_pixel_centers", False))
    if align and half:
        raise ctx.error("align_corners and half_pixel_centers cannot both be true (TensorFlow refuses it)")
    return align, half


def _resize_size(ctx, size) -> tuple[int, int]:
    size = ints(size)
    if len(size) != 2 or min(size) <= 0:
        raise ctx.error(f"size must hold 2 positive values, got {size}")
    return size[0], size[1]


def _resize_infer(ctx):
    x = ctx.inputs[0]
    resize_flags(ctx)
    if x.shape is not None and len(x.shape) != 4:
        raise ctx.error(f"images must have rank 4 (NHWC), got {x}")
    n, _, _, c = x.shape if x.shape is not None else (None,) * 4
    size = value_of(ctx, 1)
    oh, ow = (None, None) if size is None else _resize_size(ctx, size)
    dtype = F32 if ctx.op == "ResizeBilinear" else x.dtype
    return [TensorSpec(dtype, (n, oh, ow, c))]


def _np_resize(ctx, x, size):
    align, half = resize_flags(ctx)
    (oh, ow), (_, h, w, _) = _resize_size(ctx, size), x.shape
    if ctx.op == "ResizeNearestNeighbor":
        rows, cols = (nearest_indices(i, o, align, half) for i, o in ((h, oh), (w, ow)))
        return x[:, rows][:, :, cols]
    (y0, y1, yl), (x0, x1, xl) = (bilinear_weights(i, o, align, half) for i, o in ((h, oh), (w, ow)))
    f = x.astype(np.float32)
    xl, yl = xl[None, None, :, None], yl[None, :, None, None]
    top = f[:, y0][:, :, x0] + (f[:, y0][:, :, x1] - f[:, y0][:, :, x0]) * xl
    bottom = f[:, y1][:, :, x0] + (f[:, y1][:, :, x1] - f[:, y1][:, :, x0]) * xl
    return (top + (bottom - top) * yl).astype(np.float32)


def _gather(x, indices, axis):
    shape = hlo.shape_of(x)
    shape[axis] = len(indices)
    return take(x, hlo.constant(np.asarray(indices, np.int32)), axis, 0, shape)


def _resize_lower(ctx, x, _size):
    align, half = resize_flags(ctx)
    (oh, ow), (_, h, w, _) = _resize_size(ctx, ctx.const(1)), hlo.shape_of(x)
    if ctx.op == "ResizeNearestNeighbor":
        rows = _gather(x, nearest_indices(h, oh, align, half), 1)
        return _gather(rows, nearest_indices(w, ow, align, half), 2)
    if ctx.inputs[0].dtype != F32:
        x = hlo.convert(x, F32)
    (y0, y1, yl), (x0, x1, xl) = (bilinear_weights(i, o, align, half) for i, o in ((h, oh), (w, ow)))
    out = ctx.out().shape
    x_lerp = hlo.broadcast_in_dim(hlo.constant(xl), out, [2])
    y_lerp = hlo.broadcast_in_dim(hlo.constant(yl), out, [1])

    def row_blend(rows):
        left, right = _gather(rows, x0, 2), _gather(rows, x1, 2)
        return hlo.add(left, hlo.multiply(hlo.subtract(right, left), x_lerp))
    top, bottom = row_blend(_gather(x, y0, 1)), row_blend(_gather(x, y1, 1))
    return hlo.add(top, hlo.multiply(hlo.subtract(bottom, top), y_lerp))


for _op in ("ResizeBilinear", "ResizeNearestNeighbor"):
    register(_op, infer=_resize_infer, lower=_resize_lower, kernel=_np_resize, const_inputs=(1,),
             attrs=("T", "align_corners", "half_pixel_centers"), dtypes=RESIZE_DTYPES)


# -- LRN ------------------------------------------------------------------------------------------
# out = x / (bias + alpha * sqr_sum) ** beta, sqr_sum over depth_radius channels either side
# of each one (the last dimension; channels past either edge count as zero).

def lrn_params(ctx):
    """(depth_radius, bias, alpha, beta) with TensorFlow's defaults (LRN and LRNGrad)."""
    return (int(ctx.attr("depth_radius", 5)), float(ctx.attr("bias", 1.0)), float(ctx.attr("alpha", 1.0)),
            float(ctx.attr("beta", 0.5)))


def lrn_infer(ctx):
    """LRN and LRNGrad: a rank-4 input's spec; depth_radius must be non-negative."""
    x = ctx.inputs[0]
    if x.shape is not None and len(x.shape) != 4:
        raise ctx.error(f"input must have rank 4, got {x}")
    if lrn_params(ctx)[0] < 0:
        raise ctx.error("depth_radius must be non-negative")
    return same_as_input(ctx)


def lrn_window_sum(x, r: int, dtype):
    """Over the last dimension of a rank-4 `dtype` Value, the sum of the 2r + 1 channels centred
    on each one (zero past the edges)."""
    return hlo.reduce_window(x, scalar(0, dtype), [1, 1, 1, 2 * r + 1], [1] * 4, [(0, 0)] * 3 + [(r, r)], op="add")


def np_lrn_window_sum(a: np.ndarray, r: int) -> np.ndarray:
    """NumPy twin of lrn_window_sum."""
    padded = np.pad(a, [(0, 0)] * (a.ndim - 1) + [(r, r)])
    depth = a.shape[-1]
    return sum(padded[..., i:i + depth] for i in range(2 * r + 1))


def _lrn_lower(ctx, x):
    r, bias, alpha, beta = lrn_params(ctx)
    dtype = ctx.out().dtype
    total = lrn_window_sum(hlo.multiply(x, x), r, dtype)
    base = hlo.add(hlo.scalar_like(bias, x), hlo.multiply(hlo.scalar_like(alpha, x), total))
    if beta == 0.5:
        return hlo.multiply(x, hlo.unary("rsqrt", base))
    if beta == 1.0:
        return hlo.divide(x, base)
    return hlo.multiply(x, hlo.binary("power", base, hlo.scalar_like(-beta, x)))


def _np_lrn(ctx, x):
    r, bias, alpha, beta = lrn_params(ctx)
    total = np_lrn_window_sum(x.astype(np.float64) ** 2, r)
    return (x / (bias + alpha * total) ** beta).astype(x.dtype)


register("LRN", infer=lrn_infer, lower=_lrn_lower, kernel=_np_lrn,
         attrs=("T", "depth_radius", "bias", "alpha", "beta"), dtypes=("float16", "bfloat16", "float32"))
