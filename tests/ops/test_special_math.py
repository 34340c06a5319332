"""special_math.py: the special functions compiled against their float64 kernels.
(TensorFlow's values, poles and domain edges included: tests/ops/test_linalg_tf_references.py.)"""

import numpy as np
import pytest

from hlobridge.debug.testing import check_op, reference
from hlobridge.ops.math import special_kernels as sk
from hlobridge.ops.math.special import bessel_ie

from .cases import case, positive, randn

F32, F16 = np.dtype(np.float32), np.dtype(np.float16)
X = randn(3, 5) * 4


def _t(dtype=F32, **attrs):
    return {"T": np.dtype(dtype), **attrs}


CASES = [
    case("Lgamma", [X], _t(), rtol=2e-5, atol=1e-5),
    case("Lgamma", [np.abs(X).astype(F16) + 0.5], _t(F16), id="Lgamma-f16", rtol=2e-3, atol=2e-3),
    case("Digamma", [X], _t(), rtol=2e-5, atol=1e-4),
    case("Erfinv", [np.tanh(X)], _t(), rtol=1e-5, atol=1e-6),
    case("Ndtri", [positive(3, 4) * 0.8], _t(), rtol=1e-5, atol=1e-6),
    case("Ndtri", [np.float64([1e-300, 1e-20, 0.3, 0.999999])], _t(np.float64), id="Ndtri-f64", rtol=1e-9, atol=1e-12),
    case("BesselI0e", [X * 10], _t(), rtol=1e-5, atol=1e-7),
    case("BesselI1e", [X * 10], _t(), rtol=1e-5, atol=1e-7),
    case("BesselI1e", [np.float64([-1e3, -31, -3, 0, 2.5, 29, 300])], _t(np.float64), id="BesselI1e-f64", rtol=1e-12, atol=1e-15),
    case("Igamma", [positive(4, 5) * 20, positive(4, 5) * 25], _t(), rtol=2e-5, atol=1e-6),
    case("Igammac", [positive(4, 5) * 20, positive(4, 5) * 25], _t(), rtol=2e-5, atol=1e-6),
    # (a = 300: float32's a log x - x - lgamma(a) cancels ~1800-sized terms, 1e-4 relative, as XLA's)
    case("Igammac", [np.float32([[0.5], [300.0]]), np.float32([1e-3, 290.0, 400.0])], _t(), id="Igammac-broadcast-tails",
         rtol=3e-4, atol=1e-30),
    case("IgammaGradA", [positive(4, 5) * 8, positive(4, 5) * 10], _t(), rtol=1e-4, atol=1e-6),
    case("RandomGammaGrad", [positive(4, 5) * 8, positive(4, 5) * 10], _t(), rtol=1e-4, atol=1e-6),
    case("Betainc", [positive(3, 4) * 5, positive(3, 4) * 5, np.float32(0.37)], _t(), rtol=2e-5, atol=1e-6),
    case("Polygamma", [np.float32([0, 1, 2, 3]), positive(4) * 3], _t(), rtol=1e-4, atol=1e-5),
    case("Zeta", [positive(2, 3) + 1.5, positive(2, 3) * 3], _t(), rtol=1e-5, atol=1e-6),
    case("NextAfter", [X, np.float32(0)], _t(), rtol=0, atol=0),
    case("ApproximateEqual", [X, X + np.float32(1e-3)], _t(tolerance=0.01)),
    case("ApproximateEqual", [np.int32([1, 2]), np.int32([1, 3])], _t(np.int32, tolerance=1.0), id="ApproximateEqual-int"),
    case("Invert", [np.array([0, 1, 255], np.uint8)], _t(np.uint8)),
    case("PopulationCount", [np.array([0, -1, 2**40 + 3], np.int64)], _t(np.int64)),
    case("CumulativeLogsumexp", [randn(2, 3, 9) * 30, np.int32(-1)],
         _t(Tidx=np.dtype(np.int32), exclusive=True, reverse=True), rtol=1e-5, atol=1e-5),
    case("CumulativeLogsumexp", [randn(2, 6).astype(F16), np.int64(0)], _t(F16, Tidx=np.dtype(np.int64)),
         id="CumulativeLogsumexp-f16", rtol=2e-3, atol=2e-3),
]


@pytest.mark.parametrize("op,inputs,attrs,kw", CASES)
def test_special_math_matches_kernel(op, inputs, attrs, kw):
    check_op(op, inputs, attrs, **kw)


def test_bessel_rule_meets_its_series_at_the_switch():
    x = np.float64([29.999999, 30.0, 30.000001])
    for order in (0, 1):
        y = bessel_ie(x, order)
        assert np.ptp(y) < 1e-7 * y[0]


def test_kernels_against_closed_forms():
    x = np.float64([0.5, 1.0, 2.0, 5.5])
    np.testing.assert_allclose(sk.lgamma(x), [np.log(np.sqrt(np.pi)), 0, 0, np.log(52.34277778455352)], atol=1e-14)
    np.testing.assert_allclose(sk.digamma(np.float64([1.0])), [-0.5772156649015329], rtol=1e-14)
    np.testing.assert_allclose(sk.zeta(np.float64([2.0, 4.0]), np.float64([1.0, 1.0])), [np.pi ** 2 / 6, np.pi ** 4 / 90],
                               rtol=1e-14)
    np.testing.assert_allclose(sk.igamma(np.float64([1.0]), x), 1 - np.exp(-x), rtol=1e-13)  # P(1, x) = 1 - e^-x
    np.testing.assert_allclose(sk.betainc(np.float64([1.0]), np.float64([1.0]), x / 6), x / 6, rtol=1e-13)
    np.testing.assert_allclose(sk.erfinv(np.float64([0.5])), [0.4769362762044699], rtol=1e-14)
    np.testing.assert_allclose(sk.ndtri(np.float64([0.975])), [1.959963984540054], rtol=1e-14)


def test_empty_inputs():
    (y,) = reference("Igamma", [np.zeros((0, 2), F32), np.zeros((0, 2), F32)], _t())
    assert y.shape == (0, 2) and y.dtype == F32
