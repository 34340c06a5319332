"""benchmarks/train_throughput.py: a corpus case trains from TensorFlow's initial values (its
first f32 loss is TF's), a graph.json folder from the graph's own seeded init on a batch of the
size asked, and every precision starts from the same weights and batch."""

import json
import math
import shutil

import numpy as np
import pytest

from benchmarks import train_throughput as bench
from benchmarks.common import start
from tests.conftest import TESTS
from tests.corpus import Case


@pytest.fixture(scope="module")
def mlp_adam(shared_graphs):
    return shared_graphs / "mlp_adam"


def test_a_corpus_case_starts_at_tensorflows_first_loss(mlp_adam, tmp_path):
    out = tmp_path / "rows.json"
    assert bench.main([str(mlp_adam), "--device", "cpu-task", "--precision", "f32", "bf16",
                       "--steps", "1", "--repeat", "1", "--warmup", "0", "--json-out", str(out)]) == 0
    f32, bf16 = json.loads(out.read_text())
    case = Case.load(mlp_adam)
    tf_loss = float(case.array(case.meta["train"]["loss_per_step"])[0])
    assert f32["first_loss"] == pytest.approx(tf_loss, rel=1e-4)
    assert bf16["first_loss"] == pytest.approx(tf_loss, rel=1e-2) and bf16["first_loss"] != f32["first_loss"]
    assert f32["batch"] == len(next(iter(bench.load_workload(mlp_adam, 0).feeds.values())))
    assert f32["images_per_s"] == pytest.approx(f32["batch"] / f32["ms_per_step"] * 1e3)


def test_a_graph_json_folder_takes_the_batch_asked(mlp_adam, tmp_path):
    """graph.json: case.json's feeds, init_op, train_op and loss beside graph.pb, as
    tools/make_bench_models.py --resnet50-train-graph writes them; init runs without feeds."""
    meta = Case.load(mlp_adam).meta
    folder = tmp_path / "mlp"
    folder.mkdir()
    shutil.copy(mlp_adam / meta["graph_pb"], folder / "graph.pb")
    keep = {k: meta[k] for k in ("name", "feeds", "init_op", "train_op", "loss")}
    (folder / "graph.json").write_text(json.dumps(keep))
    w = bench.load_workload(folder, 3)
    assert w.init == meta["init_op"] and w.init_feeds == {}
    assert {name: a.shape[0] for name, a in w.feeds.items()} == {f["name"]: 3 for f in meta["feeds"]}
    out = tmp_path / "rows.json"
    assert bench.main([str(folder), "--batch", "3", "--device", "cpu", "--precision", "f32",
                       "--steps", "1", "--repeat", "1", "--warmup", "0", "--json-out", str(out)]) == 0
    (row,) = json.loads(out.read_text())
    assert row["batch"] == 3 and math.isfinite(row["first_loss"])  # y_ is one-hot: fed normal here


def test_a_folder_without_metadata_says_how_to_make_the_graph(tmp_path):
    with pytest.raises(SystemExit, match="--resnet50-train-graph"):
        bench.load_workload(tmp_path, 4)


def test_an_inference_folder_fills_its_weights_at_init_as_tensorflow_does(tmp_path):
    """graph.json with `outputs`: an inference graph whose kernels are variables its init op
    draws at random (tools/weights_as_variables.py, as --keras-resnet50-graph writes Keras
    ResNet50 for the GPU check); hlobridge's init draws TensorFlow's weights, so the outputs
    on TF's recorded feed are TF's."""
    folder = TESTS / "data" / "weights_as_variables" / "cnn_infer_bn"
    tf_run = np.load(folder / "tensorflow.npz")
    w = bench.load_workload(folder, 4)
    assert w.init == "init_weights" and w.fetches == ["Identity:0", "Identity_1:0"] and w.expected == [None, None]
    sess, _, _ = start(w, "auto", "cpu", False)
    got = sess.run(w.fetches, {"images:0": tf_run["feed0"]})
    for i, g in enumerate(got):
        np.testing.assert_allclose(g, tf_run[f"output{i}"], rtol=1e-4, atol=1e-5)
