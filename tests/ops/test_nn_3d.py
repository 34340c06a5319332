"""3-D convolution and pooling in the modes TensorFlow's CPU kernels lack (NCDHW, dilations,
groups): compiled, compared with the kernels, which tests/ops/test_tf_references.py ties to
TensorFlow in NDHWC."""

import numpy as np
import pytest

from hlobridge.errors import ShapeInferenceError
from hlobridge.debug.testing import check_op, reference

from .cases import case, randn

V = randn(2, 5, 6, 7, 4)
W = randn(3, 2, 3, 4, 6)


def ncdhw(x):
    return np.ascontiguousarray(x.transpose(0, 4, 1, 2, 3))


def conv(strides=(1, 1, 1), padding="SAME", dilations=(1, 1, 1), fmt="NDHWC"):
    def per_axis(v):
        return [1, 1, *v] if fmt == "NCDHW" else [1, *v, 1]
    return {"T": np.float32, "strides": per_axis(strides), "padding": padding,
            "dilations": per_axis(dilations), "data_format": fmt}


def pool(k, s, padding, fmt="NDHWC"):
    def per_axis(v):
        return [1, 1, *v] if fmt == "NCDHW" else [1, *v, 1]
    return {"T": np.float32, "ksize": per_axis(k), "strides": per_axis(s), "padding": padding,
            "data_format": fmt}


CASES = [
    case("Conv3D", [V, W], conv(dilations=(2, 1, 2), padding="VALID"), id="Conv3D-dilated", atol=1e-5),
    case("Conv3D", [V, W], conv(strides=(2, 1, 2), dilations=(1, 2, 1)), id="Conv3D-same-dilated", atol=1e-5),
    case("Conv3D", [ncdhw(V), W], conv(strides=(1, 2, 2), fmt="NCDHW"), id="Conv3D-NCDHW", atol=1e-5),
    case("Conv3D", [V, randn(2, 2, 2, 2, 6)], conv(), id="Conv3D-grouped", atol=1e-5),
    case("MaxPool3D", [ncdhw(V)], pool((2, 3, 2), (2, 2, 1), "SAME", "NCDHW"), id="MaxPool3D-NCDHW"),
    case("AvgPool3D", [ncdhw(V)], pool((3, 2, 2), (1, 2, 3), "SAME", "NCDHW"), id="AvgPool3D-NCDHW"),
]


@pytest.mark.parametrize("op,inputs,attrs,kw", CASES)
def test_volumetric_matches_kernel(op, inputs, attrs, kw):
    check_op(op, inputs, attrs, **kw)


def test_ncdhw_is_ndhwc_transposed():
    (last,) = reference("Conv3D", [V, W], conv(strides=(1, 2, 2)))
    (first,) = reference("Conv3D", [ncdhw(V), W], conv(strides=(1, 2, 2), fmt="NCDHW"))
    np.testing.assert_allclose(first, ncdhw(last), rtol=1e-6)


@pytest.mark.parametrize("attrs,message", [
    (conv(padding="EXPLICIT"), "padding 'EXPLICIT' is not SAME or VALID"),
    (dict(conv(), strides=[2, 1, 1, 1, 1]), "must be 1 on the batch and channel dimensions"),
    (dict(conv(), data_format="NHWC"), "data_format 'NHWC' is not supported"),
])
def test_bad_attributes_are_errors(attrs, message):
    with pytest.raises(ShapeInferenceError, match=message):
        reference("Conv3D", [V, W], attrs)
