"""Colour ops (hlobridge/ops/image/adjust.py): compiled, compared with their kernels;
tests/ops/test_tf_references.py ties the kernels to TensorFlow."""

import ml_dtypes
import numpy as np
import pytest

from hlobridge.errors import ShapeInferenceError
from hlobridge.debug.testing import check_op, reference

from .cases import case

RNG = np.random.RandomState(1302)  # a stream of its own: collecting this module leaves other modules' inputs as they were

F32 = {"T": np.float32}


def pixels(*shape):
    """RGB values in [0, 1], with greys (r == g == b), black and pure colours mixed in."""
    x = RNG.rand(*shape, 3).astype(np.float32)
    flat = x.reshape(-1, 3)
    flat[::5] = flat[::5, :1]  # greys
    flat[1::7] = 0  # black
    flat[2::7] = [1, 0, 0]
    flat[3::11] = [0.5, 0.5, 0.2]  # two equal maxima
    return x


IMG = pixels(2, 4, 5)
HSV = np.concatenate([RNG.rand(2, 4, 5, 1), RNG.rand(2, 4, 5, 2)], -1).astype(np.float32)
CASES = [
    case("RGBToHSV", [IMG], F32),
    case("RGBToHSV", [IMG.astype(np.float64)], {"T": np.float64}, id="RGBToHSV-f64"),
    case("HSVToRGB", [HSV], F32),
    case("HSVToRGB", [HSV.astype(ml_dtypes.bfloat16)], {"T": ml_dtypes.bfloat16}, id="HSVToRGB-bf16", rtol=1e-2,
         atol=1e-2),
    case("AdjustHue", [IMG, np.float32(0.3)], F32),
    case("AdjustHue", [IMG, np.float32(-0.7)], F32, id="AdjustHue-negative"),
    case("AdjustHue", [IMG.astype(np.float16), np.float32(0.25)], {"T": np.float16}, id="AdjustHue-f16",
         rtol=1e-3, atol=1e-3),
    case("AdjustSaturation", [IMG, np.float32(1.7)], F32),
    case("AdjustSaturation", [IMG, np.float32(0.4)], F32, id="AdjustSaturation-desaturate"),
    case("AdjustContrastv2", [IMG * 255, np.float32(1.8)], F32, rtol=1e-5, atol=1e-4),
    case("AdjustContrastv2", [pixels(3, 6).astype(np.float16), np.float32(0.5)], {"T": np.float16},
         id="AdjustContrastv2-f16-rank3", rtol=1e-3, atol=1e-3),
]


@pytest.mark.parametrize("op,inputs,attrs,kw", CASES)
def test_colour_op_matches_kernel(op, inputs, attrs, kw):
    check_op(op, inputs, attrs, **kw)


def test_hsv_round_trip():
    (hsv,) = reference("RGBToHSV", [IMG], F32)
    (rgb,) = reference("HSVToRGB", [hsv], F32)
    np.testing.assert_allclose(rgb, IMG, atol=1e-6)


def test_zero_shifts_are_identities():
    (same,) = reference("AdjustHue", [IMG, np.float32(1.0)], F32)
    np.testing.assert_allclose(same, IMG, atol=1e-6)
    (same,) = reference("AdjustSaturation", [IMG, np.float32(1.0)], F32)
    np.testing.assert_allclose(same, IMG, atol=1e-6)


def test_images_need_three_channels():
    with pytest.raises(ShapeInferenceError, match="3 channels"):
        reference("AdjustHue", [np.zeros((2, 4), np.float32), np.float32(0.1)], F32)
