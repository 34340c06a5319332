"""Inference graphs of the shared corpus, compiled and run: TensorFlow's numbers.

cnn_infer_bn goes through both user paths: `hlobridge-compile` + `runtime.load`, and
the Python API (`compile_graph(...).load()`).
"""

import numpy as np
import pytest

import hlobridge
from hlobridge.cli import compile as compile_cli

from tests.corpus import Case, assert_matches


@pytest.fixture(scope="module")
def cnn(shared_graphs):
    return Case.load(shared_graphs / "cnn_infer_bn")


def _check_runs(case, module):
    for run in case.meta["runs"]:
        feeds = {name: case.array(key) for name, key in run["feeds"].items()}
        outs = module.run(feeds)
        for name, key in run["expected"].items():
            assert_matches(outs[name], case.array(key), case.tolerance, f"{case.meta['name']} {name}")


def test_cnn_infer_bn_via_cli_and_runtime_load(cnn, tmp_path):
    batch = cnn.array(cnn.meta["runs"][0]["feeds"]["images:0"]).shape[0]
    vmfb = tmp_path / "model.vmfb"
    assert compile_cli.main([str(cnn.graph_path), "-o", str(vmfb),
                             "--input-shape", f"images:0={batch},32,32,3"]) == 0
    m = hlobridge.runtime.load(vmfb, device="cpu")
    assert m.input_names == ["images:0"]
    assert m.output_names == ["Identity:0", "Identity_1:0"]
    _check_runs(cnn, m)
    images = cnn.array("batch4/feed/images:0")
    logits, probs = m.main(images)
    np.testing.assert_allclose(probs.sum(axis=1), 1, rtol=1e-5)


def test_cnn_infer_bn_via_python_api_from_binary_pb(cnn):
    batch = cnn.array("batch4/feed/images:0").shape[0]
    model = hlobridge.compile_graph(cnn.path / "graph.pb", input_shapes={"images": (batch, 32, 32, 3)})
    _check_runs(cnn, model.load("cpu"))


@pytest.mark.cuda
def test_cnn_infer_bn_on_cuda(cnn):
    batch = cnn.array("batch4/feed/images:0").shape[0]
    model = hlobridge.compile_graph(cnn.graph_path, input_shapes={"images": (batch, 32, 32, 3)},
                                    options=hlobridge.CompileOptions(target="cuda"))
    _check_runs(cnn, model.load("cuda"))
