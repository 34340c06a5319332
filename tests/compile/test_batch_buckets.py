"""Static batch buckets beside the dynamic main: `hlobridge-compile --batch-sizes 1,8`
(compile/buckets.py, runtime/buckets.py, analysis/batch_rows.py)."""

import numpy as np
import pytest

import hlobridge
from hlobridge.cli import compile as compile_cli
from hlobridge.compile.driver import CompileOptions, compile_graph
from hlobridge.errors import HlobridgeError
from hlobridge.frontend.graph_builder import GraphBuilder
from hlobridge.frontend.graphdef import write_graphdef

from .test_dynamic_dims import mlp_graph, mlp_reference

RNG = np.random.default_rng(33)


def batch_mean_graph():
    """x - sum(x, axis=0): every row sees the others, so padding would change the result."""
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (None, 4))
    m = b.op("Sum", [x, b.const("axis", np.array([0], np.int32))], name="colsum", T=np.float32,
             Tidx=np.int32, keep_dims=True)
    b.op("Sub", [x, m], name="y", T=np.float32)
    return b


def compile_padded(tmp_path, builder, sizes: str):
    """`hlobridge-compile g.pbtxt -o m.vmfb --batch-sizes SIZES --pad-to-batch-sizes`, as a user
    types it; the loaded module."""
    write_graphdef(builder.graph_def, tmp_path / "g.pbtxt")
    out = tmp_path / "m.vmfb"
    assert compile_cli.main([str(tmp_path / "g.pbtxt"), "-o", str(out), "--batch-sizes", sizes,
                             "--pad-to-batch-sizes"]) == 0
    return hlobridge.runtime.load(out)


def test_cli_puts_static_functions_beside_the_dynamic_one(tmp_path, capsys):
    module = compile_padded(tmp_path, mlp_graph(), "1,8")
    assert "padding: pads" in capsys.readouterr().err
    assert {"main", "main_b1", "main_b8"} <= set(module.functions)
    assert module.main_b8.signature.inputs[0][1].shape == (8, 8)
    main = module.main
    for n, picked in ((1, "main_b1"), (3, "main_b8"), (8, "main_b8"), (9, "main")):
        x = RNG.standard_normal((n, 8)).astype(np.float32)
        assert main.pick([x])[0].name == picked
        got = module.run({"x": x})["y:0"]
        assert got.shape == (n, 5)
        np.testing.assert_allclose(got, mlp_reference(x), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got, main.dynamic(x), rtol=1e-6, atol=1e-7)


def test_without_padding_an_unlisted_batch_runs_the_dynamic_function():
    module = compile_graph(mlp_graph().graph(), options=CompileOptions(batch_sizes=(4,))).load()
    x = RNG.standard_normal((3, 8)).astype(np.float32)
    assert module.main.pick([x])[0].name == "main"
    np.testing.assert_allclose(module.main(x), mlp_reference(x), rtol=1e-5, atol=1e-6)


def test_padding_is_refused_where_an_op_mixes_rows(tmp_path, capsys):
    module = compile_padded(tmp_path, batch_mean_graph(), "4")
    assert "cannot pad: node colsum (Sum over axis 0) mixes rows" in capsys.readouterr().err
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    assert module.main.pick([x])[0].name == "main"  # not main_b4 padded
    np.testing.assert_allclose(module.run({"x": x})["y:0"], x - x.sum(0, keepdims=True), rtol=1e-5, atol=1e-6)
    x4 = RNG.standard_normal((4, 4)).astype(np.float32)
    assert module.main.pick([x4])[0].name == "main_b4"
    np.testing.assert_allclose(module.main(x4), x4 - x4.sum(0, keepdims=True), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("argv, message", [
    (["--batch-sizes", "1,x"], "--batch-sizes 1,x: expected positive integers"),
    (["--pad-to-batch-sizes"], "--pad-to-batch-sizes needs --batch-sizes"),
    (["--batch-sizes", "2", "--input-shape", "x:0=4,4"], "no input has an unknown batch"),
])
def test_bad_bucket_flags_give_one_line(tmp_path, capsys, argv, message):
    write_graphdef(batch_mean_graph().graph_def, tmp_path / "g.pbtxt")
    with pytest.raises(HlobridgeError, match=message):
        compile_cli.main([str(tmp_path / "g.pbtxt"), "-o", str(tmp_path / "m.vmfb"), *argv])


def test_explain_says_why_a_cluster_cannot_pad(tmp_path, capsys):
    from hlobridge.cli import explain as explain_cli
    b = batch_mean_graph()
    b.op("Relu", [b.op("Exp", ["y:0"], name="e", T=np.float32)], name="r", T=np.float32)
    write_graphdef(b.graph_def, tmp_path / "g.pbtxt")
    assert explain_cli.main([str(tmp_path / "g.pbtxt"), "--dynamic", "--min-cluster-size", "2"]) == 0
    assert "batch padding: cannot pad: node colsum (Sum over axis 0) mixes rows" in capsys.readouterr().out


def test_emit_stablehlo_writes_the_merged_module(tmp_path, capsys):
    """--emit stablehlo shows what --batch-sizes compiles: the dynamic main beside main_b1/main_b8,
    main's reflection naming the sizes and the padding verdict."""
    out = tmp_path / "m.mlir"
    graph = "tests/conformance/dynamic_batch/graph.pbtxt"
    assert compile_cli.main([graph, "--emit", "stablehlo", "-o", str(out), "--batch-sizes", "1,8",
                             "--pad-to-batch-sizes"]) == 0
    assert "padding: pads" in capsys.readouterr().err
    text = out.read_text()
    assert "func.func @main(%arg0: tensor<?x8x8x3xf32>" in text
    assert "func.func @main_b1(%arg0: tensor<1x8x8x3xf32>" in text
    assert "func.func @main_b8(%arg0: tensor<8x8x8x3xf32>" in text
    assert 'hlobridge.batch_sizes = "1,8"' in text and 'hlobridge.batch_padding = "pads"' in text
