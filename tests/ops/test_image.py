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


# -- gradients (hlobridge/ops/image/grads.py) -------------------------------------------------------
# Their inputs come from a stream of their own, so that the cases above and other modules keep theirs.
GRAD_RNG = np.random.RandomState(1304)


def grad_randn(*shape):
    return GRAD_RNG.randn(*shape).astype(np.float32)


GRADS = grad_randn(2, 7, 3, 2)
CASES += [
    case("ResizeBilinearGrad", [GRADS, IMG.repeat(2, 0)], {"T": np.float32}, id="ResizeBilinearGrad"),
    case("ResizeBilinearGrad", [GRADS, IMG.repeat(2, 0).astype(np.float16)], {"T": np.float16, "half_pixel_centers": True},
         id="ResizeBilinearGrad-f16-half-pixel", rtol=1e-3, atol=1e-3),
    case("ResizeBilinearGrad", [grad_randn(1, 9, 11, 1), grad_randn(1, 3, 4, 1)], {"T": np.float32, "align_corners": True},
         id="ResizeBilinearGrad-align-upsampled"),
    case("ResizeNearestNeighborGrad", [GRADS, np.array([4, 6], np.int32)], {"T": np.float32},
         id="ResizeNearestNeighborGrad"),
    case("ResizeNearestNeighborGrad", [np.arange(24, dtype=np.int32).reshape(1, 4, 6, 1), np.array([3, 2], np.int32)],
         {"T": np.int32, "half_pixel_centers": True}, id="ResizeNearestNeighborGrad-int32-half-pixel"),
    case("LRNGrad", [grad_randn(1, 2, 3, 7), grad_randn(1, 2, 3, 7), grad_randn(1, 2, 3, 7)],
         {"T": np.float32, "depth_radius": 2, "bias": 1.5, "alpha": 0.2, "beta": 0.75}, id="LRNGrad", atol=1e-5),
]


def test_resize_grad_is_the_adjoint_of_resize():
    """<resize(x), g> == <x, resize_grad(g)> for every mode: the gradient is the transpose."""
    x, size = grad_randn(1, 4, 6, 2), np.array([7, 3], np.int32)
    g = grad_randn(1, 7, 3, 2)
    for align, half in ((False, False), (True, False), (False, True)):
        attrs = {"T": np.float32, "align_corners": align, "half_pixel_centers": half}
        for op, second in (("ResizeBilinear", x), ("ResizeNearestNeighbor", np.array([4, 6], np.int32))):
            (y,) = reference(op, [x, size], attrs)
            (dx,) = reference(op + "Grad", [g, second], attrs)
            np.testing.assert_allclose(np.vdot(y, g), np.vdot(x, dx), rtol=1e-5)
