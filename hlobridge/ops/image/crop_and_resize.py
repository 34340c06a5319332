"""CropAndResize and its gradients (CropAndResizeGradImage, CropAndResizeGradBoxes): what
Faster R-CNN style heads and tf.image.crop_and_resize write.

As TensorFlow's CPU kernels (core/kernels/image/crop_and_resize_op.cc): each crop samples its
box at crop_size points per axis, y1 * (height - 1) + i * (y2 - y1) * (height - 1) / (crop - 1)
in float32 (a single sample at the box's centre, computed in double); a sample outside
[0, size - 1] takes extrapolation_value; bilinear blends the four neighbours as
top + (bottom - top) * y_lerp, nearest rounds half away from zero. The coordinates and sampling
are written once, for arrays and Traced values (traced_logic), so kernel and lowering agree.

CropAndResize compiles: with crop_size constant it is gathers of (box, y, x) triples and the
blend; a box_ind outside the batch fails the call naming the node, as the kernel raises. The
gradients run on their kernels (XLA does not compile them either).
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ...errors import InputError
from ...spec import TensorSpec
from ..helpers import ints, value_of
from ..registry import register
from ..traced import Traced
from ..traced_logic import astype, compare, logical_or, rounding, select

F32 = np.dtype(np.float32)
I32 = np.dtype(np.int32)


# -- CropAndResize --------------------------------------------------------------------------------


def _crop_size(ctx, size) -> tuple[int, int]:
    size = ints(size)
    if len(size) != 2 or min(size) <= 0:
        raise ctx.error(f"crop_size must hold 2 positive values, got {size}")
    return size[0], size[1]


def _crop_method(ctx) -> str:
    method = ctx.attr("method", "bilinear")
    if method not in ("bilinear", "nearest"):
        raise ctx.error(f"method must be 'bilinear' or 'nearest', got '{method}'")
    return method


def _crop_infer(ctx):
    image, boxes, box_ind = ctx.inputs[:3]
    _crop_method(ctx)
    if image.shape is not None and len(image.shape) != 4:
        raise ctx.error(f"image must be 4-D [batch, height, width, depth], got shape {list(image.shape)}")
    if boxes.shape is not None and (len(boxes.shape) != 2 or boxes.shape[1] not in (None, 4)):
        raise ctx.error(f"boxes must be [num_boxes, 4], got shape {list(boxes.shape)}")
    if box_ind.shape is not None and len(box_ind.shape) != 1:
        raise ctx.error(f"box_ind must be 1-D, got shape {list(box_ind.shape)}")
    size = value_of(ctx, 3)
    ch, cw = (None, None) if size is None else _crop_size(ctx, size)
    n = boxes.shape[0] if boxes.shape is not None else None
    depth = image.shape[3] if image.shape is not None else None
    return [TensorSpec(F32, (n, ch, cw, depth))]


def crop_coordinates(lo, hi, size: int, crop: int, ratio_first: bool = False):
    """Source coordinates [boxes, crop] along one axis, in float32 as TF computes them; lo/hi are
    the boxes' [boxes, 1] normalised edges (arrays or Traced). The step is
    (hi - lo) * (size - 1) / (crop - 1), or with `ratio_first` (CropAndResizeGradBoxes)
    (hi - lo) * ((size - 1) / (crop - 1)). A single sample sits at the box's centre, computed in
    double (TF's `0.5 * (y1 + y2) * (height - 1)`)."""
    if crop > 1:
        if ratio_first:
            scale = (hi - lo) * (np.float32(size - 1) / np.float32(crop - 1))
        else:
            scale = (hi - lo) * float(size - 1) / float(crop - 1)
        return lo * float(size - 1) + np.arange(crop, dtype=np.float32)[None, :] * scale
    return astype(astype(lo + hi, np.float64) * 0.5 * float(size - 1), np.float32)


def _round_half_away(x):
    """roundf for x >= 0 (in-range coordinates): floor, plus one from a fraction of 0.5 up."""
    down = rounding("floor", x)
    return select(compare("GE", x - down, 0.5), down + 1.0, down)


def _crop_sampling(method, coords, size: int):
    """Per axis: (outside mask, samples): TF extrapolates where a coordinate falls outside
    [0, size - 1]; samples are [nearest] or [floor, ceil, lerp], as float coordinates."""
    outside = logical_or(compare("LT", coords, 0), compare("GT", coords, float(size - 1)))
    if method == "nearest":
        return outside, [_round_half_away(coords)]
    top = rounding("floor", coords)
    return outside, [top, rounding("ceil", coords), coords - top]


def _np_check_box_ind(ctx, box_ind, batch: int) -> np.ndarray:
    box_ind = np.asarray(box_ind)
    bad = (box_ind < 0) | (box_ind >= batch)
    if bad.any():
        raise ctx.error(f"box_ind {int(box_ind[bad][0])} is not in [0, {batch})", InputError)
    return box_ind


def _np_samples(method, boxes, h, w, ch, cw, ratio_first=False):
    """(inside [boxes, ch, cw], y samples, x samples) of the crops, as CropAndResize takes them."""
    b = boxes.astype(np.float32)
    with np.errstate(invalid="ignore"):
        outside_y, ys = _crop_sampling(method, crop_coordinates(b[:, 0:1], b[:, 2:3], h, ch, ratio_first), h)
        outside_x, xs = _crop_sampling(method, crop_coordinates(b[:, 1:2], b[:, 3:4], w, cw, ratio_first), w)
    inside = ~(outside_y[:, :, None] | outside_x[:, None, :])
    return inside, ys, xs


def _pixel_index(y, x, h: int, w: int):
    """Integer [boxes, crop_h, 1] and [boxes, 1, crop_w] indices of float sample coordinates,
    clamped into the image (samples outside it are masked by the caller)."""
    yi = np.clip(np.nan_to_num(y), 0, h - 1).astype(np.int64)[:, :, None]
    xi = np.clip(np.nan_to_num(x), 0, w - 1).astype(np.int64)[:, None, :]
    return yi, xi


def _np_crop_and_resize(ctx, image, boxes, box_ind, crop_size):
    method = _crop_method(ctx)
    ch, cw = _crop_size(ctx, crop_size)
    batch, h, w, _ = image.shape
    box_ind = _np_check_box_ind(ctx, box_ind, batch)
    inside, ys, xs = _np_samples(method, boxes, h, w, ch, cw)
    img = image.astype(np.float32)

    def at(y, x):
        return img[(box_ind[:, None, None], *_pixel_index(y, x, h, w))]
    crops = _blend(method, at, ys, xs)
    return np.where(inside[..., None], crops, np.float32(ctx.attr("extrapolation_value", 0.0))).astype(np.float32)


def _blend(method, at, ys, xs):
    """Nearest: the one sample. Bilinear: TF's top/bottom lerps of the four neighbours."""
    if method == "nearest":
        return at(ys[0], xs[0])
    (top, bottom, y_lerp), (left, right, x_lerp) = ys, xs
    y_lerp, x_lerp = _lerp_axis(y_lerp, 1), _lerp_axis(x_lerp, 2)
    tl, tr, bl, br = at(top, left), at(top, right), at(bottom, left), at(bottom, right)
    upper = tl + (tr - tl) * x_lerp
    lower = bl + (br - bl) * x_lerp
    return upper + (lower - upper) * y_lerp


def _lerp_axis(lerp, axis):
    """A [boxes, crop] weight broadcast over the crops [boxes, ch, cw, depth]."""
    if isinstance(lerp, Traced):
        return lerp  # broadcast by _gathered's caller (already [boxes, ch, cw, depth])
    return lerp[:, :, None, None] if axis == 1 else lerp[:, None, :, None]


def _crop_and_resize_lower(ctx, image, boxes, box_ind, _crop_size_value):
    """Coordinates and weights as [boxes, crop] tensors from the runtime boxes; the samples by
    stablehlo.gather of (box_ind, y, x) index triples; out-of-image samples by select."""
    method = _crop_method(ctx)
    out = ctx.out()
    nb, ch, cw, depth = out.shape
    batch, h, w, _ = hlo.shape_of(image)
    if np.dtype(ctx.inputs[0].dtype) != F32:
        image = hlo.convert(image, F32)

    def edge(k):
        return Traced(hlo.slice(boxes, [0, k], [nb, k + 1]), F32)
    outside_y, ys = _crop_sampling(method, crop_coordinates(edge(0), edge(2), h, ch), h)
    outside_x, xs = _crop_sampling(method, crop_coordinates(edge(1), edge(3), w, cw), w)
    shape = [nb, ch, cw, depth]
    index_shape = [nb, ch, cw, 1]
    ind = hlo.convert(box_ind, I32)
    in_batch = hlo.binary("and", hlo.compare("GE", ind, hlo.splat(0, [nb], I32)),
                          hlo.compare("LT", ind, hlo.splat(batch, [nb], I32)))
    hlo.assert_(hlo.reduce(in_batch, hlo.constant(np.asarray(True)), [0], op="and"),
                f"node '{ctx.name}' (CropAndResize): box_ind must be in [0, {batch})")
    ind = hlo.clamp(hlo.constant(np.zeros((), I32)), ind, hlo.constant(np.asarray(batch - 1, I32)))
    ind = hlo.broadcast_in_dim(ind, index_shape, [0])

    def along(coord: Traced, axis: int, size: int):
        idx = hlo.convert(hlo.clamp(hlo.scalar_like(0, coord.value), coord.value,
                                    hlo.scalar_like(size - 1, coord.value)), I32)
        return hlo.broadcast_in_dim(idx, index_shape, [0, axis])

    def at(y, x):
        triples = hlo.concatenate([ind, along(y, 1, h), along(x, 2, w)], 3)
        return Traced(hlo.gather(image, triples, shape, offset_dims=[3], collapsed_slice_dims=[0, 1, 2],
                                 start_index_map=[0, 1, 2], index_vector_dim=3, slice_sizes=[1, 1, 1, depth]), F32)
    if method == "bilinear":
        ys = [*ys[:2], Traced(hlo.broadcast_in_dim(ys[2].value, shape, [0, 1]), F32)]
        xs = [*xs[:2], Traced(hlo.broadcast_in_dim(xs[2].value, shape, [0, 2]), F32)]
    crops = _blend(method, at, ys, xs).value
    outside = hlo.binary("or", hlo.broadcast_in_dim(outside_y.value, shape, [0, 1]),
                         hlo.broadcast_in_dim(outside_x.value, shape, [0, 2]))
    fill = hlo.splat(float(ctx.attr("extrapolation_value", 0.0)), shape, F32)
    return hlo.select(outside, fill, crops)


register("CropAndResize", infer=_crop_infer, lower=_crop_and_resize_lower, kernel=_np_crop_and_resize,
         attrs=("T", "method", "extrapolation_value"), const_inputs=(3,),
         dtypes=("uint8", "uint16", "int8", "int16", "int32", "int64", "float16", "float32", "float64"))


# -- CropAndResize's gradients (kernels: XLA does not compile them either) -------------------------


def _grad_image_infer(ctx):
    grads = ctx.inputs[0]
    _crop_method(ctx)
    size = value_of(ctx, 3)
    if size is not None and (size.shape != (4,) or min(ints(size)) <= 0):
        raise ctx.error(f"image_size must hold 4 positive values, got {ints(size)}")
    if grads.shape is not None and len(grads.shape) != 4:
        raise ctx.error(f"grads must be 4-D [num_boxes, crop_height, crop_width, depth], got {list(grads.shape)}")
    return [TensorSpec(np.dtype(ctx.attr("T")), tuple(ints(size)) if size is not None else (None,) * 4)]


def _np_crop_grad_image(ctx, grads, boxes, box_ind, image_size):
    """TF's CropAndResizeBackpropImage: each in-image sample's gradient, split over its four
    neighbours by (1 - lerp) and lerp (bilinear) or given to the nearest pixel."""
    method = _crop_method(ctx)
    batch, h, w, depth = ints(image_size)
    box_ind = _np_check_box_ind(ctx, box_ind, batch)
    _, ch, cw, _ = grads.shape
    inside, ys, xs = _np_samples(method, boxes, h, w, ch, cw)
    g = np.where(inside[..., None], grads.astype(np.float32), np.float32(0))
    out = np.zeros((batch, h, w, depth), np.float64)
    rows = box_ind[:, None, None]

    def spread(y, x, weight):
        np.add.at(out, (rows, *_pixel_index(y, x, h, w)), weight)
    if method == "nearest":
        spread(ys[0], xs[0], g)
    else:
        (top, bottom, y_lerp), (left, right, x_lerp) = ys, xs
        y_lerp, x_lerp = y_lerp[:, :, None, None], x_lerp[:, None, :, None]
        dtop, dbottom = (np.float32(1) - y_lerp) * g, y_lerp * g
        spread(top, left, (np.float32(1) - x_lerp) * dtop)
        spread(top, right, x_lerp * dtop)
        spread(bottom, left, (np.float32(1) - x_lerp) * dbottom)
        spread(bottom, right, x_lerp * dbottom)
    return out.astype(ctx.out().dtype)


def _grad_boxes_infer(ctx):
    if ctx.attr("method", "bilinear") != "bilinear":
        raise ctx.error("method must be 'bilinear' (TensorFlow's CropAndResizeGradBoxes has no other)")
    boxes = ctx.inputs[2]
    return [TensorSpec(F32, (boxes.shape[0] if boxes.shape is not None else None, 4))]


def _np_crop_grad_boxes(ctx, grads, image, boxes, box_ind):
    """TF's CropAndResizeBackpropBoxes: d crops / d box edges through the bilinear sample
    positions, summed over the crop and depth."""
    batch, h, w, _ = image.shape
    box_ind = _np_check_box_ind(ctx, box_ind, batch)
    nb, ch, cw, _ = grads.shape
    inside, ys, xs = _np_samples("bilinear", boxes, h, w, ch, cw, ratio_first=True)
    (top, bottom, y_lerp), (left, right, x_lerp) = ys, xs
    img = image.astype(np.float32)

    def at(y, x):
        return img[(box_ind[:, None, None], *_pixel_index(y, x, h, w))]
    tl, tr, bl, br = at(top, left), at(top, right), at(bottom, left), at(bottom, right)
    yl, xl = y_lerp[:, :, None, None], x_lerp[:, None, :, None]
    g = np.where(inside[..., None], grads.astype(np.float32), np.float32(0))
    grad_y = ((np.float32(1) - xl) * (bl - tl) + xl * (br - tr)) * g
    grad_x = ((np.float32(1) - yl) * (tr - tl) + yl * (br - bl)) * g
    out = np.zeros((nb, 4), np.float64)
    for k, (grad, size, crop, axis) in enumerate(((grad_y, h, ch, (2, 3)), (grad_x, w, cw, (1, 3)))):
        per_step = grad.astype(np.float64).sum(axis=axis)  # [boxes, crop]
        if crop > 1:
            steps = np.arange(crop, dtype=np.float32) * (np.float32(size - 1) / np.float32(crop - 1))
            out[:, k] = (per_step * (np.float32(size - 1) - steps)).sum(axis=1)
            out[:, k + 2] = (per_step * steps).sum(axis=1)
        else:
            out[:, k] = out[:, k + 2] = per_step.sum(axis=1) * 0.5 * (size - 1)
    return out.astype(np.float32)


register("CropAndResizeGradImage", infer=_grad_image_infer, kernel=_np_crop_grad_image, attrs=("T", "method"),
         dtypes=("float16", "float32", "float64"))
register("CropAndResizeGradBoxes", infer=_grad_boxes_infer, kernel=_np_crop_grad_boxes, attrs=("T", "method"))
