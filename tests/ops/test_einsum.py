"""Einsum beyond tests/ops/test_tf_references.py: other types, and TensorFlow's refusals."""

import numpy as np
import pytest

from hlobridge.errors import ShapeInferenceError
from hlobridge.frontend.graph import TensorRef
from hlobridge.frontend.graph_builder import GraphBuilder
from hlobridge.analysis.shape_inference import infer_specs
from hlobridge.debug.testing import check_op, reference

from .cases import case, randn

CASES = [
    case("Einsum", [randn(2, 3, 4).astype(np.float16), randn(4, 5).astype(np.float16)],
         {"equation": "abc,cd->abd", "T": np.float16, "N": 2}, id="Einsum-f16", rtol=1e-2, atol=1e-2),
    case("Einsum", [np.arange(12, dtype=np.int64).reshape(3, 4), np.arange(8, dtype=np.int64).reshape(4, 2)],
         {"equation": "ij,jk->ki", "T": np.int64, "N": 2}, id="Einsum-int64-transposed"),
    case("Einsum", [randn(2, 3, 3, 4)], {"equation": "bjjk->kb", "T": np.float32, "N": 1},
         id="Einsum-diagonal-and-sum"),
    case("Einsum", [randn(3, 1, 4), randn(5, 4)], {"equation": "...i,...i->...", "T": np.float32, "N": 2},
         id="Einsum-broadcast-one"),
]


@pytest.mark.parametrize("op,inputs,attrs,kw", CASES)
def test_einsum_matches_kernel(op, inputs, attrs, kw):
    check_op(op, inputs, attrs, **kw)


@pytest.mark.parametrize("equation,shapes,message", [
    ("ij,jk", [(2, 3), (3, 4)], "expecting exactly one '->'"),
    ("ij,jk,kl->il", [(2, 3), (3, 4)], "names 3 operand"),
    ("ij,jk->ik", [(2, 3), (4, 4)], "label 'j' has sizes 3 and 4"),
    ("...ij->ij", [(5, 2, 3)], "broadcasting dimension"),
    ("ij->ik", [(2, 3)], "output label"),
    ("i1->i", [(2, 3)], "invalid subscripts"),
])
def test_equations_tensorflow_refuses_are_errors(equation, shapes, message):
    attrs = {"equation": equation, "T": np.float32, "N": len(shapes)}
    with pytest.raises(ShapeInferenceError, match=message):
        reference("Einsum", [randn(*s) for s in shapes], attrs)


def test_unknown_batch_dimension_stays_unknown():
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (None, 3, 4))
    w = b.placeholder("w", np.float32, (4, 5))
    b.op("Einsum", [x, w], name="e", equation="bij,jk->bki", T=np.float32, N=2)
    assert infer_specs(b.graph())[TensorRef("e", 0)].shape == (None, 5, 3)
