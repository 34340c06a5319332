"""split-narrow-rows on a graph as a user compiles it: a 1x1 convolution over a 3x3 image (the
end of Keras MobileNetV2 at 96x96) is a dot of 9 rows, which runs as 8 + 1 rows; the results
are the whole dot's bit for bit, through compile_graph, the Session and hlobridge-compile, and
`--no-split-narrow-rows` keeps it whole."""

import numpy as np
import pytest

import hlobridge
from hlobridge.cli import compile as compile_cli
from hlobridge.compile.driver import CompileOptions, compile_graph, lower_graph
from hlobridge.frontend.graph_builder import GraphBuilder
from passes.ir.split_narrow_rows import row_pieces

RNG = np.random.default_rng(7)
W = RNG.standard_normal((1, 1, 160, 960)).astype(np.float32)
BIAS = RNG.standard_normal(960).astype(np.float32)
X = RNG.standard_normal((1, 3, 3, 160)).astype(np.float32)


@pytest.mark.parametrize("rows, tile, pieces", [
    (9, 16, [8, 1]), (36, 16, [32, 4]), (18, 16, [16, 2]), (5, 16, [4, 1]),
    (9, 8, [8, 1]), (18, 8, [16, 2]),
    (27, 16, None),  # 27 of 32 tiled rows: too little padding to pay for a second dot
    (36, 8, None),   # 36 of 40
    (16, 16, None), (32, 8, None),  # full tiles
    (72, 16, None), (108, 16, None),  # measured slower cut (the pass's docstring)
])
def test_row_pieces(rows, tile, pieces):
    assert row_pieces(rows, tile) == pieces


@pytest.fixture(scope="module")
def graph_file(tmp_path_factory):
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, X.shape)
    conv = b.op("Conv2D", [x, b.const("w", W)], name="conv", T=np.float32, strides=[1, 1, 1, 1],
                padding=b"VALID", data_format=b"NHWC")
    b.op("Relu6", [b.op("BiasAdd", [conv, b.const("bias", BIAS)], name="biased", T=np.float32)],
         name="y", T=np.float32)
    path = tmp_path_factory.mktemp("narrow") / "pointwise.pb"
    path.write_bytes(b.graph_def.SerializeToString())
    return path


def _dots(graph_file, options) -> list[str]:
    lowered = lower_graph(str(graph_file), stages=options.stages())
    with lowered.context:
        return [ln for ln in str(lowered.module).splitlines() if "stablehlo.dot_general" in ln]


def test_nine_rows_run_as_eight_and_one(graph_file):
    assert len(_dots(graph_file, CompileOptions(split_narrow_rows=False))) == 1
    cut = _dots(graph_file, CompileOptions())
    assert [ln.rsplit("tensor<", 1)[1].split("x")[0] for ln in cut] == ["8", "1"]


@pytest.mark.parametrize("options", [
    CompileOptions(data_tiling="off"), CompileOptions(target="cuda"), CompileOptions(cpu="znver4"),
    CompileOptions(backend="xla"), CompileOptions(split_narrow_rows=False)],
    ids=["no-data-tiling", "gpu-target", "named-cpu", "xla", "off"])
def test_only_for_this_hosts_data_tiled_matmuls(options):
    assert not options.splits_narrow_rows()


def test_bit_for_bit_and_against_numpy(graph_file):
    want = np.clip(np.einsum("bhwc,co->bhwo", X.astype(np.float64), W[0, 0].astype(np.float64)) + BIAS, 0, 6)
    results = {}
    for split in (True, False):
        model = compile_graph(str(graph_file), options=CompileOptions(split_narrow_rows=split))
        results[split] = model.load("cpu").run({"x": X})["y:0"]
    np.testing.assert_array_equal(results[True], results[False])
    np.testing.assert_allclose(results[True], want, rtol=1e-5, atol=1e-5)
    for split in (True, False):
        sess = hlobridge.Session(str(graph_file), min_cluster_size=1,
                                 compile_options=CompileOptions(split_narrow_rows=split))
        np.testing.assert_array_equal(sess.run("y:0", {"x:0": X}), results[False])


def test_the_cli_can_keep_it_whole(graph_file, tmp_path):
    for flag, dots in (([], 2), (["--no-split-narrow-rows"], 1)):
        dumps = tmp_path / f"dumps{len(flag)}"
        assert compile_cli.main([str(graph_file), "-o", str(tmp_path / "m.vmfb"), "--dump-to", str(dumps),
                                 "--dump-pass", "separate-loop-inits", *flag]) == 0
        final = next(dumps.glob("*-separate-loop-inits.mlir")).read_text()
        assert final.count("stablehlo.dot_general") == dots
