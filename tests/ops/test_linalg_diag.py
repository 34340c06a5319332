"""linalg_diag.py: the MatrixDiag family's band map, compiled against its kernel, and its errors.
(TensorFlow's values for every align and version: tests/ops/test_linalg_tf_references.py.)"""

import numpy as np
import pytest

from hlobridge.debug.testing import check_op, reference
from hlobridge.errors import HlobridgeError
from hlobridge.ops.linalg.diag import ALIGNS, band_map

from .cases import case, randn

F32, I32 = np.float32, np.int32
X = randn(2, 3, 4)

CASES = [
    case("MatrixDiagPartV3", [X, np.array([-2, 3], I32), F32(-1)], {"T": F32, "align": "RIGHT_RIGHT"}, id="part-all-bands"),
    case("MatrixDiagPartV3", [np.zeros((0, 3, 4), F32), I32(0), F32(1)], {"T": F32}, id="part-empty-batch"),
    case("MatrixDiagPartV2", [X, np.array([0, 1], I32), F32(5)], {"T": F32}),
    case("MatrixDiagPart", [randn(5, 2)], {"T": F32}),
    case("MatrixDiagV3", [np.array([[True, False], [False, True]]), np.array([0, 1], I32), I32(-1), I32(-1),
                          np.array(False)], {"T": np.dtype(bool), "align": "LEFT_RIGHT"}, id="diag-bool"),
    case("MatrixDiagV3", [randn(2, 3), I32(-1), I32(5), I32(-1), F32(3)], {"T": F32}, id="diag-rows-given"),
    case("MatrixDiagV2", [randn(3), I32(1), I32(-1), I32(-1), F32(0)], {"T": F32}),
    case("MatrixDiag", [np.zeros((2, 0), F32)], {"T": F32}, id="diag-empty"),
    case("MatrixSetDiagV3", [np.arange(12, dtype=I32).reshape(3, 4), -np.ones((2, 3), I32), np.array([0, 1], I32)],
         {"T": np.dtype(I32), "align": "LEFT_LEFT"}, id="set-int"),
    case("MatrixSetDiagV2", [X, randn(2, 3), I32(0)], {"T": F32}),
    case("MatrixSetDiag", [X, randn(2, 3)], {"T": F32}),
    case("Diag", [randn(2, 2).astype(np.float16)], {"T": np.dtype(np.float16)}),
    case("DiagPart", [randn(3, 3)], {"T": F32}),
]


@pytest.mark.parametrize("op,inputs,attrs,kw", CASES)
def test_diag_family_matches_kernel(op, inputs, attrs, kw):
    check_op(op, inputs, attrs, **kw)


@pytest.mark.parametrize("align", ALIGNS)
@pytest.mark.parametrize("rows,cols,k", [(3, 4, (-1, 2)), (5, 2, (-4, 0)), (4, 4, (0, 0)), (2, 6, (1, 5))])
def test_band_map_packs_and_unpacks_the_same_elements(rows, cols, k, align):
    band = band_map(rows, cols, *k, align)
    packed, matrix = band.packed_src.reshape(-1), band.matrix_src.reshape(-1)
    on_band = np.flatnonzero(matrix >= 0)
    assert sorted(packed[packed >= 0]) == list(on_band)  # every band element once, nothing else
    np.testing.assert_array_equal(packed[matrix[on_band]], on_band)  # the two maps are inverse
    r, c = np.divmod(on_band, cols)
    assert ((c - r >= k[0]) & (c - r <= k[1])).all()


def test_v3_round_trip_and_tf_example():
    x = np.arange(1, 13, dtype=F32).reshape(3, 4)
    (d,) = reference("MatrixDiagPartV3", [x, np.array([-1, 1], I32), F32(0)], {"T": F32, "align": "RIGHT_LEFT"})
    np.testing.assert_array_equal(d, [[2, 7, 12], [1, 6, 11], [5, 10, 0]])  # tf.linalg.diag_part's docstring
    (m,) = reference("MatrixDiagV3", [d, np.array([-1, 1], I32), I32(3), I32(4), F32(0)], {"T": F32, "align": "RIGHT_LEFT"})
    np.testing.assert_array_equal(m, np.triu(np.tril(x, 1), -1))


@pytest.mark.parametrize("op,inputs,attrs,message", [
    ("MatrixDiagPartV3", [X, np.array([2, 1], I32), F32(0)], {}, "k_lo (2) must not exceed k_hi (1)"),
    ("MatrixDiagPartV3", [X, np.array([-3, 0], I32), F32(0)], {}, "out of bounds for a 3 x 4 matrix"),
    ("MatrixDiagPartV3", [X, I32(0), F32(0)], {"align": "UP_DOWN"}, "align 'UP_DOWN' is not one of"),
    ("MatrixDiagV3", [randn(3), I32(0), I32(5), I32(4), F32(0)], {}, "not consistent with the diagonals"),
    ("MatrixSetDiagV3", [X, randn(2, 2), I32(0)], {}, "the input's band needs [2, 3]"),
    ("DiagPart", [randn(2, 3)], {}, "dimensions [2] and [3] should be equal"),
])
def test_bad_inputs_name_the_node(op, inputs, attrs, message):
    with pytest.raises(HlobridgeError, match="node 'op'") as e:
        reference(op, inputs, {"T": F32, **attrs})
    assert message in str(e.value)
