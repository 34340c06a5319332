"""One module for every batch size: `?` dimensions through hlobridge-compile and the runtime
(docs/dynamic_shapes.md)."""

import json

import numpy as np
import pytest

import hlobridge
from hlobridge.cli import compile as compile_cli
from hlobridge.compile.driver import compile_graph, lower_graph, parse_shape
from hlobridge.errors import HlobridgeError
from hlobridge.frontend.graph_builder import GraphBuilder
from hlobridge.frontend.graphdef import write_graphdef

RNG = np.random.default_rng(31)
W = RNG.standard_normal((8, 5)).astype(np.float32)
B = RNG.standard_normal(5).astype(np.float32)


def mlp_graph():
    """softmax(relu(x @ W + b) * 2 - mean(x)) over an unknown batch: a matmul, a bias, a scalar,
    a reduction kept as [?,1] and broadcast back, a softmax."""
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (None, 8))
    h = b.op("BiasAdd", [b.op("MatMul", [x, b.const("w", W)], name="mm", T=np.float32), b.const("b", B)],
             name="ba", T=np.float32)
    h = b.op("Mul", [b.op("Relu", [h], name="relu", T=np.float32), b.const("two", np.float32(2))],
             name="mul", T=np.float32)
    m = b.op("Mean", [x, b.const("axis", np.array([1], np.int32))], name="mean", T=np.float32,
             Tidx=np.int32, keep_dims=True)
    b.op("Softmax", [b.op("Sub", [h, m], name="sub", T=np.float32)], name="y", T=np.float32)
    return b


def mlp_reference(x):
    h = np.maximum(x @ W + B, 0) * 2 - x.mean(axis=1, keepdims=True)
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_parse_shape_takes_question_marks():
    assert parse_shape("?,224,224,3") == (None, 224, 224, 3)
    with pytest.raises(HlobridgeError, match="comma-separated integers or"):
        parse_shape("?x,3")


def test_cli_compiles_one_module_for_every_batch(tmp_path, capsys):
    write_graphdef(mlp_graph().graph_def, tmp_path / "g.pbtxt")
    out = tmp_path / "m.vmfb"
    assert compile_cli.main([str(tmp_path / "g.pbtxt"), "-o", str(out), "--input-shape", "x:0=?,8"]) == 0
    module = hlobridge.runtime.load(out)
    sig = module.main.signature
    assert sig.inputs[0][1].shape == (None, 8) and sig.outputs[0][1].shape == (None, 5)
    for n in (1, 3, 4, 8):
        x = RNG.standard_normal((n, 8)).astype(np.float32)
        got = module.run({"x": x})["y:0"]
        np.testing.assert_allclose(got, mlp_reference(x), rtol=1e-5, atol=1e-6)
    with pytest.raises(HlobridgeError, match=r"expected shape \[\?, 8\], got \[2, 7\]"):
        module.main(np.zeros((2, 7), np.float32))


def test_unknown_batch_stays_dynamic_without_input_shape():
    lowered = lower_graph(mlp_graph().graph())
    assert "tensor<?x8xf32>" in lowered.text()
    assert json.loads(lowered.signature.to_json())["inputs"][0]["shape"] == [None, 8]
    # a given shape is still static, byte for byte the module it always was
    static = lower_graph(mlp_graph().graph(), input_shapes={"x": (4, 8)}).text()
    assert "?" not in static and "dynamic_broadcast_in_dim" not in static


def test_an_op_without_a_dynamic_rule_names_the_node_and_asks_for_the_dim():
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (None, 4))
    b.op("Reshape", [x, b.const("shape", np.array([-1, 8], np.int32))], name="r", T=np.float32,
         Tshape=np.int32)
    with pytest.raises(HlobridgeError, match=r"node 'r' \(Reshape\).*--input-shape"):
        compile_graph(b.graph())


def test_shapes_computed_from_a_dynamic_batch():
    """tf.shape(x) of a `?` batch feeding Fill, BroadcastTo, Range, a Reshape that splits and a
    ZerosLike: partly known values (analysis/symbolic_dims.py) become `?` dims sized at run time."""
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (None, 6))
    shape = b.op("Shape", [x], name="shape", T=np.float32, out_type=np.int32)
    filled = b.op("Fill", [shape, b.const("one", np.float32(1.5))], name="fill", T=np.float32, index_type=np.int32)
    row = b.const("row", np.arange(6, dtype=np.float32))
    spread = b.op("BroadcastTo", [row, shape], name="bcast", T=np.float32, Tidx=np.int32)
    batch = b.op("StridedSlice", [shape, *(b.const(n, np.array([v], np.int32)) for n, v in
                                           (("b0", 0), ("b1", 1), ("b2", 1)))], name="batch", T=np.int32,
                 Index=np.int32, shrink_axis_mask=1, begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0)
    rng = b.op("Range", [b.const("r0", np.int32(0)), batch, b.const("r1", np.int32(1))], name="range", Tidx=np.int32)
    col = b.op("Cast", [b.op("Reshape", [rng, b.const("col_shape", np.array([-1, 1], np.int32))], name="col",
                             T=np.int32, Tshape=np.int32)], name="colf", SrcT=np.int32, DstT=np.float32, Truncate=False)
    split = b.op("Reshape", [x, b.op("Pack", [batch, b.const("two", np.int32(2)), b.const("three", np.int32(3))],
                                     name="pack", T=np.int32, N=3, axis=0)], name="split", T=np.float32, Tshape=np.int32)
    merged = b.op("Reshape", [split, shape], name="merged", T=np.float32, Tshape=np.int32)
    total = b.op("AddV2", [b.op("AddV2", [filled, spread], name="a1", T=np.float32),
                           b.op("Mul", [col, merged], name="a2", T=np.float32)], name="a3", T=np.float32)
    b.op("AddV2", [total, b.op("ZerosLike", [x], name="zeros", T=np.float32)], name="y", T=np.float32)
    model = compile_graph(b.graph())
    assert model.lowered.signature.outputs[0][1].shape == (None, 6)
    module = model.load()
    for n in (1, 3, 5):
        xv = RNG.standard_normal((n, 6)).astype(np.float32)
        want = 1.5 + np.arange(6) + np.arange(n)[:, None] * xv
        np.testing.assert_allclose(module.run({"x": xv})["y:0"], want, rtol=1e-6)


def test_explain_says_which_cluster_takes_a_dynamic_batch(tmp_path, capsys):
    from hlobridge.cli import explain as explain_cli
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (None, 4))
    h = b.op("Tanh", [b.op("Exp", [x], name="e", T=np.float32)], name="t", T=np.float32)
    h = b.op("Relu", [b.op("Mul", [h, h], name="m", T=np.float32)], name="r0", T=np.float32)
    b.op("Reshape", [h, b.const("s", np.array([-1, 8], np.int32))], name="r", T=np.float32, Tshape=np.int32)
    write_graphdef(b.graph_def, tmp_path / "bad.pbtxt")
    assert explain_cli.main([str(tmp_path / "bad.pbtxt"), "--dynamic"]) == 0
    out = capsys.readouterr().out
    assert "dynamic:   dynamic_dim_unsupported: node 'r' (Reshape) cannot take a dynamic dimension" in out
    write_graphdef(mlp_graph().graph_def, tmp_path / "good.pbtxt")
    assert explain_cli.main([str(tmp_path / "good.pbtxt"), "--dynamic", "--json"]) == 0
    clusters = json.loads(capsys.readouterr().out)["clusters"]
    assert [c["dynamic"] for c in clusters] == [{"status": "dynamic", "inputs": ["x:0 float32[?,8]"],
                                                 "batch_padding": "pads"}]


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_a_mean_over_dynamic_dimensions_divides_by_their_run_time_size(dtype):
    """Mean over a `?` batch (and a second `?`): the count is read with get_dimension_size at
    run time; integers truncate toward zero as TensorFlow's do."""
    b = GraphBuilder()
    x = b.placeholder("x", dtype, (None, 3, None))
    m = b.op("Mean", [x, b.const("axis", np.array([0, 2], np.int32))], name="mean", T=dtype, Tidx=np.int32,
             keep_dims=True)
    b.op("Sub", [x, m], name="y", T=dtype)
    module = hlobridge.runtime.load(compile_graph(b.graph(), inputs=["x:0"], outputs=["y:0"]).vmfb)
    for shape in ((1, 3, 2), (5, 3, 4)):
        a = (RNG.standard_normal(shape) * 10).astype(dtype)
        mean = a.sum((0, 2), keepdims=True) / (shape[0] * shape[2])
        want = a - (np.trunc(mean) if dtype == np.int32 else mean).astype(dtype)
        (got,) = module.run({"x:0": a}).values()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
