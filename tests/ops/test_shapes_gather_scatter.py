"""Scatters (shapes/gather_scatter.py): compiled on llvm-cpu, compared with their NumPy kernels."""

import numpy as np
import pytest

from hlobridge.errors import InputError
from hlobridge.debug.testing import check_op, compiled, reference

from .cases import case, randn

I32 = np.int32
CASES = [
    case("TensorScatterUpdate", [np.zeros((4, 2), bool), np.array([[1], [3]], I32), np.ones((2, 2), bool)],
         {"T": np.bool_, "Tindices": I32}, id="TensorScatterUpdate-bool"),
    case("ScatterNd", [np.array([[[0, 1]], [[2, 0]]], np.int64), np.array([[5], [7]], I32), np.array([3, 2], np.int64)],
         {"T": I32, "Tindices": np.int64}, id="ScatterNd-batched-indices"),
    case("TensorScatterMax", [np.arange(6, dtype=np.int64).reshape(3, 2), np.array([[0, 1], [2, 0]], I32),
                              np.array([-4, 9], np.int64)], {"T": np.int64, "Tindices": I32}, id="TensorScatterMax-int"),
]


@pytest.mark.parametrize("op,inputs,attrs,kw", CASES)
def test_scatter_matches_kernel(op, inputs, attrs, kw):
    check_op(op, inputs, attrs, **kw)


BAD = [np.array([[1], [7]], I32), randn(2, 3), np.array([4, 3], I32)]


def test_out_of_range_index_is_tensorflows_error_on_the_kernel():
    with pytest.raises(InputError, match=r"indices\[1\] = \[7\] does not index into shape \[4, 3\]"):
        reference("ScatterNd", BAD, {"T": np.float32, "Tindices": I32})
    (ignored,) = reference("ScatterNd", BAD, {"T": np.float32, "Tindices": I32, "bad_indices_policy": "IGNORE"})
    np.testing.assert_array_equal(ignored[1], BAD[1][0])
    assert not ignored[[0, 2, 3]].any()


def test_out_of_range_index_is_dropped_when_compiled():
    (got,) = compiled("ScatterNd", BAD, {"T": np.float32, "Tindices": I32})
    (want,) = reference("ScatterNd", BAD, {"T": np.float32, "Tindices": I32, "bad_indices_policy": "IGNORE"})
    np.testing.assert_array_equal(got, want)
