"""Quantization ops: compiled against their kernels on shapes the TF references do not cover,
and the errors TensorFlow gives for bad attributes, as one line naming the node. (Their values
against TensorFlow's: tests/ops/test_tf_references.py, cases from tools/make_op_references.py.)"""

import numpy as np
import pytest

from hlobridge.debug.testing import check_op, reference
from hlobridge.errors import ShapeInferenceError
from hlobridge.ops.quant.fake_quant import nudge, round_half_away
from hlobridge.ops.quant.uniform import quantize_multiplier

from .cases import case, randn

F32 = np.float32
X = np.concatenate([randn(20) * 4, F32([np.nan, np.inf, -np.inf, 0.0])]).reshape(2, 3, 4)
CHANNEL_MIN, CHANNEL_MAX = F32([-1.0, 0.0, -2.5, 0.3]), F32([1.0, 0.0, 0.5, 2.0])

CASES = [
    case("FakeQuantWithMinMaxArgs", [X], {"min": -2.0, "max": 3.5, "num_bits": 5}),
    case("FakeQuantWithMinMaxVars", [X, F32(-1.5), F32(2.0)], {"narrow_range": True}),
    case("FakeQuantWithMinMaxVarsPerChannel", [X, CHANNEL_MIN, CHANNEL_MAX], {"num_bits": 3}),
    case("FakeQuantWithMinMaxArgsGradient", [randn(2, 3, 4), X], {"min": -2.0, "max": 3.5}),
    case("FakeQuantWithMinMaxVarsGradient", [randn(2, 3, 4), X, F32(-1.5), F32(2.0)], {}),
    case("FakeQuantWithMinMaxVarsPerChannelGradient", [randn(2, 3, 4), X, CHANNEL_MIN, CHANNEL_MAX], {}),
    case("QuantizeAndDequantizeV2", [randn(3, 4, 2), F32(0), F32(0)], {"T": F32, "axis": -2}, id="QDQV2-axis-neg"),
    case("QuantizeAndDequantizeV4", [randn(3, 4), F32([-1, -1, -2, 0]), F32([1, 2, 1, 1])],
         {"T": F32, "axis": 1, "range_given": True, "round_mode": "HALF_UP"}, id="QDQV4-axis-range-given"),
    case("QuantizeAndDequantizeV3", [randn(2, 5), F32(-1), F32(1), np.int32(4)], {"T": F32, "range_given": True},
         consts=(3,)),
    case("Dequantize", [np.arange(-6, 6, dtype=np.int8).reshape(3, 4), F32([-1.0]), F32([2.0])],
         {"T": np.dtype(np.int8), "mode": "MIN_FIRST"}, id="Dequantize-one-element-range"),
]


@pytest.mark.parametrize("op,inputs,attrs,kw", CASES)
def test_quantization_matches_kernel(op, inputs, attrs, kw):
    check_op(op, inputs, attrs, **kw)


def test_round_half_away_from_zero():
    x = F32([0.5, -0.5, 1.5, -2.5, 0.49999997, 2.4999998, -0.0])
    np.testing.assert_array_equal(round_half_away(x), F32([1, -1, 2, -3, 0, 2, -0.0]))


def test_nudge_makes_zero_a_step():
    """Nudge moves [0.25, 3] to a range that contains 0.0 exactly, as TF's FakeQuant does."""
    nmin, nmax, scale, _ = nudge(F32(0.25), F32(3.0), 0, 255)
    assert nmin == 0.0 and np.isclose(nmax, 255 * scale)


def test_quantize_multiplier_is_tflites():
    """multiplier = q * 2**(shift - 31), q in [2**30, 2**31); tiny ones become 0, huge ones saturate."""
    assert quantize_multiplier(0.5) == (1 << 30, 0)
    assert quantize_multiplier(1.0) == (1 << 30, 1)
    q, shift = quantize_multiplier(0.02 / 0.7)
    assert 2**30 <= q < 2**31 and abs(q * 2.0 ** (shift - 31) - 0.02 / 0.7) < 1e-9
    assert quantize_multiplier(1e-12) == (0, 0) and quantize_multiplier(2.0 ** 40) == (2**31 - 1, 30)


def test_zero_range_gives_zeros_and_passes_the_gradient():
    out = reference("FakeQuantWithMinMaxVars", [X, F32(0), F32(0)], {})[0]
    assert not out.any()
    g = randn(*X.shape)
    dx, dmin, dmax = reference("FakeQuantWithMinMaxVarsGradient", [g, X, F32(0), F32(0)], {})
    np.testing.assert_array_equal(dx, g)
    assert dmin == 0 and dmax == 0


@pytest.mark.parametrize("op,inputs,attrs,message", [
    ("FakeQuantWithMinMaxArgs", [X], {"num_bits": 17}, "num_bits must be between 2 and 16"),
    ("FakeQuantWithMinMaxArgs", [X], {"min": 1.0, "max": 1.0}, "min has to be smaller than max"),
    ("FakeQuantWithMinMaxVars", [X, CHANNEL_MIN, CHANNEL_MAX], {}, "`min` must be rank 0 but is rank 1"),
    ("QuantizeAndDequantizeV2", [X, F32(0), F32(1)], {"T": F32, "round_mode": "UP"}, "round_mode must be one of"),
    ("QuantizeAndDequantizeV2", [X, F32(0), F32(1)], {"T": F32, "num_bits": 40}, "num_bits is out of range"),
    ("Dequantize", [np.zeros(3, np.int8), F32(0), F32(1)], {"T": np.dtype(np.int8), "mode": "MAX"},
     "mode must be one of"),
    ("Dequantize", [np.zeros((2, 3), np.uint8), F32([0, 0]), F32([1, 1])], {"T": np.dtype(np.uint8), "axis": 1},
     "must have 3 element(s)"),
    ("UniformQuantize", [X, F32([0.1, 0.2]), np.int32([0, 0])],
     {"Tin": F32, "Tout": np.dtype(np.int8), "quantization_axis": 2, "quantization_min_val": -128,
      "quantization_max_val": 127}, "scales and zero_points must have shape [4]"),
    ("UniformDequantize", [np.zeros(3, np.int8), F32(0.1), np.int32(0)],
     {"Tin": np.dtype(np.int8), "Tout": F32, "quantization_axis": -1, "quantization_min_val": 5,
      "quantization_max_val": 5}, "quantization_min_val must be smaller than quantization_max_val"),
    ("UniformRequantize", [np.zeros((2, 3), np.int32), F32([1, 1]), np.int32([0, 0]), F32([1, 1, 1]),
                           np.int32([0, 0, 0])],
     {"Tin": np.dtype(np.int32), "Tout": np.dtype(np.int8), "input_quantization_axis": 0,
      "output_quantization_axis": 1, "input_quantization_min_val": -2**31, "input_quantization_max_val": 2**31 - 1,
      "output_quantization_min_val": -128, "output_quantization_max_val": 127}, "axes must match"),
])
def test_bad_attributes_are_errors_naming_the_node(op, inputs, attrs, message):
    with pytest.raises(ShapeInferenceError, match=r"node 'op' \(" + op + r"\): ") as e:
        reference(op, inputs, attrs)
    assert message in str(e.value)
