"""TF's backwards const analysis: which cluster inputs are compile-time constants."""

import numpy as np

from hlobridge.analysis.const_analysis import constant_inputs
from hlobridge.frontend.graph import TensorRef
from hlobridge.frontend.graph_builder import GraphBuilder


def _graph():
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (2, 6))
    n = b.placeholder("n", np.int32, ())
    two = b.const("two", np.int32(2))
    shape = b.op("Pack", [two, n], name="shape", N=2, T=np.dtype(np.int32), axis=0)
    b.op("Reshape", [x, shape], name="reshaped", T=np.dtype(np.float32), Tshape=np.dtype(np.int32))
    b.op("Shape", [x], name="x_shape", T=np.dtype(np.float32), out_type=np.dtype(np.int32))
    b.op("Reshape", [x, "x_shape"], name="same", T=np.dtype(np.float32), Tshape=np.dtype(np.int32))
    return b.graph()


def test_an_input_packed_into_a_reshapes_shape_must_be_constant():
    graph = _graph()
    assert constant_inputs(graph, ["shape", "reshaped"]) == {TensorRef("two"), TensorRef("n")}


def test_the_constant_is_found_at_the_clusters_boundary():
    graph = _graph()
    assert constant_inputs(graph, ["reshaped"]) == {TensorRef("shape")}


def test_a_shape_computed_inside_from_shapes_only_needs_no_value():
    graph = _graph()
    assert constant_inputs(graph, ["x_shape", "same"]) == set()
