"""Elementwise ops: compiled on llvm-cpu, compared with their NumPy kernels."""

import numpy as np
import pytest

from hlobridge.compile import driver as compiler
from hlobridge.ops.math import elementwise
from hlobridge.debug.testing import check_op, single_op_graph

from .cases import case, positive, randn

X = randn(3, 5)
INTS = np.array([-7, -3, 0, 2, 9, 13], np.int32)
DIVISORS = np.array([2, -4, 3, 5, -2, 4], np.int32)
DOMAIN = {  # inputs inside the op's domain
    "Log": positive(3, 5), "Sqrt": positive(3, 5), "Rsqrt": positive(3, 5),
    "Log1p": positive(3, 5), "Reciprocal": positive(3, 5), "Inv": positive(3, 5),
    "LogicalNot": X > 0,
    "Asin": np.tanh(X), "Acos": np.tanh(X), "Atanh": np.tanh(X) * 0.9, "Acosh": positive(3, 5) + 1,
}
NONFINITE = np.array([1.0, np.inf, -np.inf, np.nan, 0.0], np.float32)

CASES = [case(op, [DOMAIN.get(op, X)]) for op in elementwise.UNARY]
CASES += [case(op, [NONFINITE if op != "LogicalNot" else X > 0], id=f"{op}-nonfinite")
          for op in elementwise.BOOL_UNARY]
CASES += [
    case("LeakyRelu", [X], {"alpha": 0.1}),
    case("Round", [np.array([0.5, 1.5, 2.5, -0.5, -1.5, 0.4], np.float32)], id="Round-half-even"),
    case("Relu", [randn(2, 3).astype(np.float16)], id="Relu-f16", rtol=1e-3),
    case("Exp", [randn(4).astype(np.float64)], id="Exp-f64"),
]
FLOAT_BINARY = ["Add", "AddV2", "Sub", "Mul", "RealDiv", "Div", "Maximum", "Minimum", "Pow",
                "Atan2", "SquaredDifference", "FloorDiv", "FloorMod", "DivNoNan",
                "Mod", "TruncateMod", "MulNoNan", "Xlogy", "Xlog1py", "Xdivy"]
for op in FLOAT_BINARY:
    lhs = positive(3, 5) if op == "Pow" else X
    CASES.append(case(op, [lhs, positive(5)], id=f"{op}-broadcast"))
for op in ["FloorDiv", "FloorMod", "Div", "TruncateDiv", "Mod", "TruncateMod", "Maximum", "Mul"]:
    CASES.append(case(op, [INTS, DIVISORS], id=f"{op}-int32"))
CASES.append(case("DivNoNan", [X[0], np.array([1, 0, 2, 0, 3], np.float32)], id="DivNoNan-zero"))
ZEROS = np.array([0, 1.5, 0, -2, 0], np.float32)
CASES += [case(op, [ZEROS, np.array([0, 0.5, -1, 2, np.inf], np.float32)], id=f"{op}-zeros")
          for op in ("MulNoNan", "Xlogy", "Xlog1py", "Xdivy")]
CASES += [
    case("ClipByValue", [X, np.float32(-0.5), np.float32(0.7)]),
    case("ClipByValue", [INTS, np.full(6, -2, np.int32), np.int32(5)], id="ClipByValue-int-tensor-bound"),
]
for op in elementwise.COMPARISONS:
    CASES.append(case(op, [X, X[1]], id=f"{op}-broadcast"))
    CASES.append(case(op, [INTS, DIVISORS], id=f"{op}-int32"))
CASES += [case(op, [X > 0, X < 0.5]) for op in ("LogicalAnd", "LogicalOr")]
CASES += [case(op, [INTS, DIVISORS]) for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor")]
CASES += [
    case("AddN", [X, X, randn(5)]),
    case("Cast", [X * 10], {"SrcT": np.float32, "DstT": np.int32}, id="Cast-f32-i32"),
    case("Cast", [INTS], {"SrcT": np.int32, "DstT": np.float32}, id="Cast-i32-f32"),
    case("Cast", [X], {"SrcT": np.float32, "DstT": np.bool_}, id="Cast-f32-bool"),
    case("Cast", [X > 0], {"SrcT": np.bool_, "DstT": np.float32}, id="Cast-bool-f32"),
    case("Cast", [X], {"SrcT": np.float32, "DstT": np.float16}, id="Cast-f32-f16", rtol=1e-3),
    case("Select", [np.array([True, False, True]), X[:3], randn(3, 5)], id="Select-rows"),
    case("Select", [X > 0, X, randn(3, 5)], id="Select-same"),
    case("SelectV2", [X[0] > 0, X, np.float32(-1)], id="SelectV2-broadcast"),
]


@pytest.mark.parametrize("op,inputs,attrs,kw", CASES)
def test_elementwise_matches_kernel(op, inputs, attrs, kw):
    check_op(op, inputs, attrs, **kw)


# (no result subnormal: IREE's CPU code flushes those to zero, whatever the op)
SPECIAL = np.array([-np.inf, -2.5, -1e-25, -0.0, 0.0, 1e-30, 1.5, 3.0, 7e12, np.inf, np.nan], np.float32)


@pytest.mark.parametrize("exponent", elementwise.SMALL_POWERS)
def test_pow_by_a_constant_two_or_three_multiplies_and_keeps_pows_values(exponent):
    """x**2 and x**3 with the exponent a Const are products (no exp(y * log x)): C's pow's
    special values (signed zeros, infinities, NaN, underflow to 0, overflow to inf), and the
    finite values within an ulp; 3**3 is 27 exactly (exp(3 * log 3) gave 27.000002)."""
    lowered = compiler.lower_graph(*single_op_graph("Pow", [SPECIAL, np.float32(exponent)], {}, consts=(1,))[:1],
                                   inputs=["p0:0"], outputs=["op:0"])
    assert "power" not in lowered.text()
    (got,) = check_op("Pow", [SPECIAL, np.float32(exponent)], consts=(1,), rtol=1.2e-7, atol=0)
    want = np.power(SPECIAL, np.float32(exponent))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert got[SPECIAL == 3.0] == 3.0 ** exponent
