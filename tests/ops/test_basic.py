"""Pass-through ops (Identity and friends): compiled, compared with their kernels."""

import numpy as np
import pytest

from hlobridge.graph_builder import Shape
from hlobridge.testing import check_op

from .cases import case, randn

X = randn(2, 3)

CASES = [case(op, [X]) for op in ("Identity", "StopGradient", "Snapshot")]
CASES += [
    case("PreventGradient", [X], {"message": "no grad"}),
    case("CheckNumerics", [X], {"message": "bad"}),
    case("EnsureShape", [X], {"shape": Shape((2, 3))}),
    case("IdentityN", [X, np.arange(4, dtype=np.int32)]),
    case("PlaceholderWithDefault", [X], {"dtype": np.float32, "shape": Shape((2, 3))}),
]


@pytest.mark.parametrize("op,inputs,attrs,kw", CASES)
def test_basic_matches_kernel(op, inputs, attrs, kw):
    check_op(op, inputs, attrs, **kw)
