"""Where a cluster is cut in two between layers (analysis/layer_cut.py): one tensor of one row
per example crossing, near half the work, each half taking the constants it reads."""

import numpy as np

from hlobridge.analysis.layer_cut import layer_cut, node_work
from hlobridge.analysis.shape_inference import infer_specs
from hlobridge.frontend.graph import TensorRef
from hlobridge.frontend.graph_builder import GraphBuilder

F32 = np.float32


def _cut(build):
    """layer_cut of the whole graph but its placeholder, read by a `?` batch."""
    b = GraphBuilder()
    outputs = build(b, b.placeholder("x", F32, (None, 16)))
    graph = b.graph()
    nodes = [n for n in graph.order if n != "x"]
    specs = infer_specs(graph, set(graph.order))
    return graph, layer_cut(graph, nodes, [TensorRef("x")], [graph.tensor(o) for o in outputs], specs)


def _dense(b, x, name, width=16):
    w = b.const(f"{name}_w", np.ones((16, width), F32))
    return b.op("Relu", [b.op("MatMul", [x, w], name=f"{name}_mm", T=F32)], name=name, T=F32)


def test_a_chain_is_cut_at_the_layer_nearest_half_its_work():
    def build(b, x):
        return [_dense(b, _dense(b, _dense(b, _dense(b, x, "l1"), "l2"), "l3"), "l4")]
    graph, cut = _cut(build)
    assert cut.cut == TensorRef("l2") and abs(cut.share - 0.5) < 1e-9
    assert set(cut.first) == {"l1_w", "l1_mm", "l1", "l2_w", "l2_mm", "l2"}  # each half its own weights
    assert set(cut.second) == {"l3_w", "l3_mm", "l3", "l4_w", "l4_mm", "l4"}
    assert cut.first == [n for n in graph.order if n in cut.first]  # in graph order
    assert cut.first_inputs == [TensorRef("x")] and cut.second_inputs == [TensorRef("l2")]


def test_a_residual_block_is_not_cut_inside():
    """Inside the block both its input and its branch are live: the cut falls at a block's end."""
    def build(b, x):
        a = _dense(b, x, "a")
        r = b.op("AddV2", [a, _dense(b, _dense(b, a, "b1"), "b2")], name="res", T=F32)
        return [_dense(b, _dense(b, r, "c"), "d")]
    _, cut = _cut(build)
    assert cut.cut == TensorRef("res")  # b1 is nearer half the work, but `a` is live beside it


def test_a_constant_read_by_both_halves_goes_to_both():
    def build(b, x):
        w = b.const("shared_w", np.ones((16, 16), F32))
        h = b.op("Relu", [b.op("MatMul", [x, w], name="m1", T=F32)], name="h", T=F32)
        return [b.op("Relu", [b.op("MatMul", [h, w], name="m2", T=F32)], name="y", T=F32)]
    _, cut = _cut(build)
    assert cut.cut == TensorRef("h")
    assert "shared_w" in cut.first and "shared_w" in cut.second


def test_no_cut_where_two_branches_run_to_the_end_or_the_cut_is_an_output():
    def branches(b, x):
        return [b.op("AddV2", [_dense(b, _dense(b, x, "p1"), "p2"), _dense(b, _dense(b, x, "q1"), "q2")],
                     name="y", T=F32)]
    assert _cut(branches)[1] is None

    def fetched_midway(b, x):  # l2 is also read outside: the second half would have to return it
        mid = _dense(b, _dense(b, x, "l1"), "l2")
        return [mid, _dense(b, _dense(b, mid, "l3"), "l4")]
    graph, cut = _cut(fetched_midway)
    assert cut is None or cut.cut not in (TensorRef("l2"),)


def test_a_tensor_of_several_rows_per_example_is_no_cut():
    """BERT's dense layers run on [batch * tokens, hidden]: a row of the batch is 4 rows there,
    so that tensor cannot carry one example's row between the halves."""
    b = GraphBuilder()
    x = b.placeholder("x", F32, (None, 4, 16))
    flat = b.op("Reshape", [x, b.const("to_rows", np.array([-1, 16], np.int32))], name="flat", T=F32)
    h = _dense(b, _dense(b, flat, "l1"), "l2")
    y = b.op("Reshape", [h, b.const("back", np.array([-1, 4, 16], np.int32))], name="y", T=F32)
    graph = b.graph()
    specs = infer_specs(graph, set(graph.order))
    assert layer_cut(graph, [n for n in graph.order if n != "x"], [TensorRef("x")], [graph.tensor(y)], specs) is None


def test_work_counts_multiply_adds_of_matmuls_and_convolutions():
    b = GraphBuilder()
    x = b.placeholder("x", F32, (None, 8, 8, 4))
    conv = b.op("Conv2D", [x, b.const("f", np.ones((3, 3, 4, 6), F32))], name="conv", T=F32,
                strides=[1, 1, 1, 1], padding="SAME")
    dw = b.op("DepthwiseConv2dNative", [conv, b.const("d", np.ones((3, 3, 6, 1), F32))], name="dw", T=F32,
              strides=[1, 1, 1, 1], padding="SAME")
    b.op("Relu", [dw], name="relu", T=F32)
    graph = b.graph()
    specs = infer_specs(graph, set(graph.order))
    assert node_work(graph, "conv", specs) == 2 * (8 * 8 * 6) * (3 * 3 * 4)  # a `?` batch counts 1
    assert node_work(graph, "dw", specs) == 2 * (8 * 8 * 6) * 9
    assert node_work(graph, "relu", specs) == 5 * 8 * 8 * 6
