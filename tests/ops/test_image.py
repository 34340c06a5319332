"""Resize and LRN beyond tests/ops/test_tf_references.py: other types and bad attributes."""

import ml_dtypes
import numpy as np
import pytest

from hlobridge.errors import ShapeInferenceError
from hlobridge.debug.testing import check_op, reference

from .cases import case, randn

IMG = randn(1, 4, 6, 2)
SIZE = np.array([7, 3], np.int32)
CASES = [
    case("ResizeBilinear", [IMG.astype(np.float16), SIZE], {"T": np.float16, "half_pixel_centers": True},
         id="ResizeBilinear-f16-gives-f32", rtol=1e-3, atol=1e-3),
    case("ResizeNearestNeighbor", [IMG.astype(ml_dtypes.bfloat16), SIZE], {"T": ml_dtypes.bfloat16},
         id="ResizeNearestNeighbor-bf16"),
    case("ResizeNearestNeighbor", [np.arange(24, dtype=np.uint8).reshape(1, 4, 6, 1), np.array([2, 9], np.int32)],
         {"T": np.uint8, "half_pixel_centers": True}, id="ResizeNearestNeighbor-u8-half-pixel"),
    case("LRN", [randn(1, 2, 2, 6).astype(np.float16)], {"T": np.float16, "depth_radius": 2, "beta": 0.6},
         id="LRN-f16", rtol=2e-3, atol=2e-3),
]


@pytest.mark.parametrize("op,inputs,attrs,kw", CASES)
def test_image_matches_kernel(op, inputs, attrs, kw):
    check_op(op, inputs, attrs, **kw)


def test_resize_refuses_both_alignment_modes():
    with pytest.raises(ShapeInferenceError, match="cannot both be true"):
        reference("ResizeBilinear", [IMG, SIZE], {"T": np.float32, "align_corners": True, "half_pixel_centers": True})


def test_resize_identity_size_is_the_input():
    for op in ("ResizeBilinear", "ResizeNearestNeighbor"):
        (same,) = reference(op, [IMG, np.array([4, 6], np.int32)], {"T": np.float32})
        np.testing.assert_array_equal(same, IMG)
