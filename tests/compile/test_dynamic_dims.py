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
