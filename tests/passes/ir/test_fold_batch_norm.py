"""fold-batch-norm on real graphs: cnn_infer_bn's three inference batch norms (after a
convolution, a depthwise convolution and a 1x1 convolution lowered as a dot) fold into their
weights, the results stay within the corpus tolerance of TensorFlow's, and
`--no-fold-batch-norm` keeps every op as TensorFlow wrote it."""

import numpy as np
import pytest

from hlobridge.cli import compile as compile_cli
from hlobridge.compile.driver import CompileOptions, compile_graph, lower_graph

from tests.corpus import Case


@pytest.fixture(scope="module")
def cnn(shared_graphs):
    case = Case.load(shared_graphs / "cnn_infer_bn")
    run = case.meta["runs"][0]
    feeds = {name: case.array(key) for name, key in run["feeds"].items()}
    expected = {name: case.array(key) for name, key in run["expected"].items()}
    return case, feeds, expected


def _ops(case, feeds, fold: bool) -> list[str]:
    lowered = lower_graph(str(case.graph_path), input_shapes={"images:0": feeds["images:0"].shape},
                          stages=CompileOptions(fold_batch_norm=fold).stages())
    with lowered.context:
        text = str(lowered.module)
    return [ln.split("=", 1)[1].split()[0] for ln in text.splitlines() if "= stablehlo." in ln]


def test_the_three_batch_norms_fold_into_their_contractions(cnn):
    case, feeds, _ = cnn
    unfolded, folded = _ops(case, feeds, False), _ops(case, feeds, True)
    # each batch norm was subtract, multiply, add; it is one add now
    assert unfolded.count("stablehlo.multiply") - folded.count("stablehlo.multiply") == 3
    assert folded.count("stablehlo.subtract") == unfolded.count("stablehlo.subtract") - 3
    assert unfolded.count("stablehlo.add") == folded.count("stablehlo.add")
    # and the broadcasts of the mean and the scale
    assert unfolded.count("stablehlo.broadcast_in_dim") - folded.count("stablehlo.broadcast_in_dim") == 6


@pytest.mark.parametrize("fold", [True, False], ids=["folded", "unfolded"])
def test_folded_or_not_matches_tensorflow(cnn, fold):
    case, feeds, expected = cnn
    model = compile_graph(str(case.graph_path), input_shapes={"images:0": feeds["images:0"].shape},
                          options=CompileOptions(fold_batch_norm=fold))
    got = model.load("cpu").run(feeds)
    tol = case.meta["suggested_tolerance"]
    for name, want in expected.items():
        np.testing.assert_allclose(got[name], want, rtol=tol["rtol"], atol=tol["atol"], err_msg=name)


def test_the_cli_can_keep_them(cnn, tmp_path):
    """hlobridge-compile runs the pass by default (its dump shows it) and not with the flag. (With
    a static batch, as the Session compiles: a `?` batch lowers convolutions as reshaped dots.)"""
    case, _, _ = cnn
    for flag, multiplies in (([], 0), (["--no-fold-batch-norm"], 3)):
        dumps = tmp_path / f"dumps{len(flag)}"
        assert compile_cli.main([str(case.graph_path), "-o", str(tmp_path / "m.vmfb"), "--dump-to", str(dumps),
                                 "--dump-pass", "fold-batch-norm|separate-loop-inits",
                                 "--input-shape", "images:0=4,32,32,3", *flag]) == 0
        assert bool(list(dumps.glob("*-fold-batch-norm.mlir"))) == (not flag)
        final = next(dumps.glob("*-separate-loop-inits.mlir")).read_text()
        # the batch norms' multiplies, on 4x16x16x16 and 4x16x16x32 activations
        assert sum("stablehlo.multiply" in ln and "4x16x16x" in ln for ln in final.splitlines()) == multiplies
