"""Reductions: compiled on llvm-cpu, compared with their NumPy kernels."""

import numpy as np
import pytest

from hlobridge.ops.math import reductions
from hlobridge.debug.testing import check_op, reference

from .cases import case, randn

X = randn(3, 4, 5)
INTS = np.array([[-7, -3, 0, 2], [9, 13, 5, -1], [4, 4, -8, 6]], np.int32)
BOOLS = X > 0
I32 = np.int32


def _attrs(op, keep=False, dtype=np.float32, tidx=np.int32):
    attrs = {"Tidx": tidx, "keep_dims": keep}
    if op not in ("All", "Any"):
        attrs["T"] = dtype
    return attrs


def _input(op):
    if op in ("All", "Any"):
        return BOOLS
    return X / 2 + 1 if op == "Prod" else X


CASES = []
for op in reductions.REDUCTIONS:
    dtype = np.bool_ if op in ("All", "Any") else np.float32
    CASES += [
        case(op, [_input(op), np.array([1], I32)], _attrs(op, dtype=dtype), id=f"{op}-axis1"),
        case(op, [_input(op), np.array([0, -1], I32)], _attrs(op, True, dtype), id=f"{op}-keep-neg"),
        case(op, [_input(op), np.array([], I32)], _attrs(op, dtype=dtype), id=f"{op}-no-axes"),
        case(op, [_input(op), np.array([0, 1, 2], np.int64)], _attrs(op, dtype=dtype, tidx=np.int64),
             id=f"{op}-all-axes"),
    ]
for op in ("Sum", "Mean", "Max", "Min", "Prod"):
    CASES.append(case(op, [INTS, I32(1)], _attrs(op, dtype=I32), id=f"{op}-int32-scalar-axis"))
CASES += [
    case("Mean", [np.array([[-7, 3], [2, 2], [5, -2]], I32), I32(0)], _attrs("Mean", dtype=I32),
         id="Mean-int-truncates"),
    case("Sum", [X.astype(np.float16), np.array([2], I32)], _attrs("Sum", dtype=np.float16),
         id="Sum-f16", rtol=1e-2, atol=1e-2),
    case("Max", [np.zeros((3, 0), np.float32), I32(1)], _attrs("Max"), id="Max-empty-gives-lowest"),
    case("Sum", [np.zeros((0, 3), np.float32), I32(0)], _attrs("Sum"), id="Sum-empty"),
]
ARG_X = np.array([[1.0, 3.0, 3.0, -2.0], [5.0, 5.0, 0.0, 5.0], [-1.0, -1.0, -1.0, -1.0]], np.float32)
for op in reductions.ARG_REDUCTIONS:
    CASES += [
        case(op, [X, I32(1)], {"T": np.float32, "Tidx": I32, "output_type": np.int64}, id=f"{op}-axis1"),
        case(op, [X, I32(-1)], {"T": np.float32, "Tidx": I32, "output_type": I32}, id=f"{op}-neg-int32"),
        case(op, [ARG_X, I32(1)], {"T": np.float32, "Tidx": I32, "output_type": I32}, id=f"{op}-ties"),
        case(op, [ARG_X.T.copy(), I32(0)], {"T": np.float32, "Tidx": I32, "output_type": np.int64},
             id=f"{op}-ties-axis0"),
        case(op, [np.array([[1.0, np.nan, 4.0, np.nan], [2.0, 1.0, 0.0, 7.0]], np.float32), I32(1)],
             {"T": np.float32, "Tidx": I32, "output_type": I32}, id=f"{op}-nan"),
        case(op, [INTS, I32(0)], {"T": I32, "Tidx": I32, "output_type": np.int64}, id=f"{op}-int32"),
    ]


CASES.append(case("L2Loss", [X], {"T": np.float32}))


@pytest.mark.parametrize("op,inputs,attrs,kw", CASES)
def test_reduction_matches_kernel(op, inputs, attrs, kw):
    check_op(op, inputs, attrs, **kw)


def test_kernels_follow_tf_semantics():
    (mean,) = reference("Mean", [np.array([-7, 3], I32), I32(0)], _attrs("Mean", dtype=I32))
    assert mean == -2  # truncates toward zero
    (amax,) = reference("ArgMax", [ARG_X, I32(1)], {"T": np.float32, "Tidx": I32, "output_type": I32})
    np.testing.assert_array_equal(amax, [1, 0, 0])  # ties: smallest index
    (norm,) = reference("EuclideanNorm", [np.array([3.0, 4.0], np.float32), I32(0)],
                        _attrs("EuclideanNorm"))
    assert norm == 5.0
