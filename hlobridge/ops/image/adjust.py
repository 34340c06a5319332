"""Colour ops: RGBToHSV, HSVToRGB, AdjustHue, AdjustSaturation, AdjustContrastv2 (what
tf.image.adjust_* and Keras' RandomContrast / RandomSaturation / RandomHue write).

The colour-space formulas are tf2xla's (image_ops.cc RGBToHSV / HSVToRGB), which are also
TensorFlow's CPU RGBToHSV and HSVToRGB (colorspace_op.h). They are written once, with NumPy
operators and ufuncs plus traced_logic's `select` / `compare`, and run on arrays (the kernels) or on
`Traced` StableHLO values (the lowerings): one rule, two backends. TF's CPU AdjustHue and
AdjustSaturation use their own per-pixel loops (adjust_hue_op.cc, adjust_saturation_op.cc),
mathematically the same, so results agree to float rounding (a few ulps), as XLA's do.

Images are [..., 3] (RGB or HSV in the last dimension), hue in [0, 1). Half precision is
computed in float32, as TF's adjust kernels do.
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ..helpers import require_float, same_as_input
from ..registry import register
from ..traced import Traced
from ..traced_logic import compare, fmod, select

F32 = np.dtype(np.float32)
IMAGE_DTYPES = ("float16", "float32")

# -- the formulas, for arrays and Traced values alike -----------------------------------------------


def rgb_to_hsv(r, g, b):
    """(h, s, v) of each pixel; hue 0 where the pixel is grey, saturation 0 where it is black."""
    value = np.maximum(np.maximum(r, g), b)
    span = value - np.minimum(np.minimum(r, g), b)
    saturation = select(compare("GT", value, 0), span / value, 0)
    norm = (1.0 / 6.0) / span
    hue = select(compare("EQ", g, value), norm * (b - r) + 2.0 / 6.0, norm * (r - g) + 4.0 / 6.0)
    hue = select(compare("EQ", r, value), norm * (g - b), hue)
    hue = select(compare("GT", span, 0), hue, 0)
    return select(compare("LT", hue, 0), hue + 1.0, hue), saturation, value


def hsv_to_rgb(h, s, v):
    """(r, g, b) of each pixel: TF's piecewise-linear channel ramps of 6 * hue."""
    dh = h * 6.0

    def ramp(x):
        return np.minimum(np.maximum(x, 0.0), 1.0)
    dr = ramp(np.abs(dh - 3.0) - 1.0)
    dg = ramp(2.0 - np.abs(dh - 2.0))
    db = ramp(2.0 - np.abs(dh - 4.0))
    one_minus_s = 1.0 - s
    return tuple((one_minus_s + s * d) * v for d in (dr, dg, db))


def _shift_hue(h, s, v, delta):
    """xla AdjustHue: hue + delta, wrapped into [0, 1)."""
    h = fmod(h + delta, 1.0)
    return select(compare("LT", h, 0), h + 1.0, h), s, v


def _scale_saturation(h, s, v, scale):
    """xla AdjustSaturation: saturation * scale, clamped to [0, 1]."""
    return h, np.minimum(np.maximum(s * scale, 0.0), 1.0), v


# op -> the formula from the input's three channels (and the op's scalar, if any) to the output's
_FORMULAS = {
    "RGBToHSV": lambda c: rgb_to_hsv(*c),
    "HSVToRGB": lambda c: hsv_to_rgb(*c),
    "AdjustHue": lambda c, delta: hsv_to_rgb(*_shift_hue(*rgb_to_hsv(*c), delta)),
    "AdjustSaturation": lambda c, scale: hsv_to_rgb(*_scale_saturation(*rgb_to_hsv(*c), scale)),
}


def _color_infer(ctx):
    require_float(ctx)
    x = ctx.inputs[0]
    if x.shape is not None and (not x.shape or x.shape[-1] not in (None, 3)):
        raise ctx.error(f"images must have 3 channels in the last dimension, got shape {list(x.shape)}")
    if len(ctx.inputs) > 1 and ctx.inputs[1].shape not in (None, ()):
        raise ctx.error(f"input 1 must be a scalar, got shape {list(ctx.inputs[1].shape)}")
    return same_as_input(ctx)


def _compute_dtype(dtype) -> np.dtype:
    """float16 and bfloat16 are computed in float32; float32 and float64 in themselves."""
    dtype = np.dtype(dtype)
    return dtype if dtype.itemsize >= 4 else F32


def _np_color(ctx, x, *scalar):
    acc = _compute_dtype(x.dtype)
    xc = x.astype(acc)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = _FORMULAS[ctx.op]([xc[..., i] for i in range(3)], *(acc.type(s) for s in scalar))
    return np.stack(out, axis=-1).astype(x.dtype)


def _lower_color(ctx, x, *scalar):
    dtype = np.dtype(ctx.out().dtype)
    acc = _compute_dtype(dtype)
    if acc != dtype:
        x = hlo.convert(x, acc)
    *batch, _ = hlo.shape_of(x)
    rank = len(batch)
    channels = [Traced(hlo.reshape(hlo.slice(x, [0] * rank + [i], batch + [i + 1]), batch), acc) for i in range(3)]
    out = _FORMULAS[ctx.op](channels, *(Traced(s, acc) for s in scalar))
    y = hlo.concatenate([hlo.reshape(c.value, batch + [1]) for c in out], rank)
    return y if acc == dtype else hlo.convert(y, dtype)


for _op, _dtypes in (("RGBToHSV", ("float16", "bfloat16", "float32", "float64")),
                     ("HSVToRGB", ("float16", "bfloat16", "float32", "float64")),
                     ("AdjustHue", IMAGE_DTYPES), ("AdjustSaturation", IMAGE_DTYPES)):
    register(_op, infer=_color_infer, lower=_lower_color, kernel=_np_color, attrs=("T",), dtypes=_dtypes)

# -- AdjustContrastv2 ------------------------------------------------------------------------------
# out = (x - mean) * factor + mean, the mean over height and width (dims -3 and -2) per image and
# channel, in float32 (TF's CPU kernel and tf2xla both accumulate in float32 for half).


def _contrast_infer(ctx):
    require_float(ctx)
    x = ctx.inputs[0]
    if x.shape is not None and len(x.shape) < 3:
        raise ctx.error(f"images must have rank >= 3 ([..., height, width, channels]), got shape {list(x.shape)}")
    return same_as_input(ctx)


def _np_contrast(ctx, x, factor):
    xf = x.astype(np.float64)
    mean = xf.mean(axis=(-3, -2), keepdims=True)
    return ((xf - mean) * np.float64(factor) + mean).astype(x.dtype)


def _lower_contrast(ctx, x, factor):
    dtype = np.dtype(ctx.out().dtype)
    shape = hlo.shape_of(x)
    rank = len(shape)
    xf = x if dtype == F32 else hlo.convert(x, F32)
    total = hlo.reduce(xf, hlo.constant(np.zeros((), F32)), [rank - 3, rank - 2])
    mean = hlo.broadcast_in_dim(hlo.divide(total, hlo.scalar_like(shape[-3] * shape[-2], total)), shape,
                                [d for d in range(rank) if d not in (rank - 3, rank - 2)])
    f = Traced(hlo.convert(factor, F32) if np.dtype(ctx.inputs[1].dtype) != F32 else factor, F32)
    out = (Traced(xf, F32) - Traced(mean, F32)) * f + Traced(mean, F32)
    return out.value if dtype == F32 else hlo.convert(out.value, dtype)


register("AdjustContrastv2", infer=_contrast_infer, lower=_lower_contrast, kernel=_np_contrast, attrs=("T",),
         dtypes=IMAGE_DTYPES)
