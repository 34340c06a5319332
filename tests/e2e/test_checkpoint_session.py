"""A tf.compat.v1 training graph with a Saver, run by hlobridge's Session: restore
TensorFlow's checkpoint, train, save (plain and sharded Saver), and TensorFlow reads it.

The TensorFlow half runs `.tfvenv/bin/python` (tools/make_tf_venv.sh; HLOBRIDGE_TF_PYTHON to
use another) in a subprocess, and skips without it; the format half needs no TensorFlow."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import hlobridge

from ..frontend.saved_model_data import array, case

ROOT = Path(__file__).resolve().parents[2]
TF_PYTHON = Path(os.environ.get("HLOBRIDGE_TF_PYTHON", ROOT / ".tfvenv" / "bin" / "python"))

TF_READER = """
import json, sys
import tensorflow as tf
out = {}
for prefix in sys.argv[1:]:
    r = tf.train.load_checkpoint(prefix)
    out[prefix] = {k: [r.get_tensor(k).dtype.name, r.get_tensor(k).tolist()]
                   for k in r.get_variable_to_shape_map()}
print(json.dumps(out))
"""


def _train(jit: str, tmp_path: Path):
    root, ref = case("train_graph")
    sess = hlobridge.Session(root / "train_graph.pbtxt", jit=jit, cache_dir=False)
    sess.run("save/restore_all", {"save/Const:0": str(root / ref["prefix"])})
    feeds = {f"{k}:0": array(v) for k, v in ref["feeds"].items()}
    losses = [float(sess.run("loss:0", feeds))]
    for _ in range(3):
        sess.run(["train", "bump_half"], feeds)
        losses.append(float(sess.run("loss:0", feeds)))
    np.testing.assert_allclose(losses, ref["losses"], rtol=1e-5)
    plain = str(tmp_path / "out" / "model.ckpt-6")
    assert sess.run(ref["savers"]["plain"], {"save/Const:0": plain}) == plain.encode()
    sharded = str(tmp_path / "sharded" / "model.ckpt-6")
    assert sess.run(ref["savers"]["sharded"], {"save_sharded/Const:0": sharded}) == sharded.encode()
    return ref, plain, sharded


def _expected(ref) -> dict:
    return {k: array(v) for k, v in ref["after_3_more_steps"].items()}


@pytest.mark.parametrize("jit", ["off", "auto"])
def test_restore_train_save(jit, tmp_path):
    ref, plain, sharded = _train(jit, tmp_path)
    for prefix in (plain, sharded):
        values = hlobridge.read_checkpoint(prefix)
        assert sorted(values) == sorted(_expected(ref))
        for k, v in _expected(ref).items():
            assert values[k].dtype == v.dtype
            np.testing.assert_allclose(values[k], v, rtol=1e-5, atol=1e-6)
    # written whole: no temporary names, the sharded Saver's _temp directory merged away
    assert sorted(os.listdir(tmp_path / "out")) == ["model.ckpt-6.data-00000-of-00001", "model.ckpt-6.index"]
    assert sorted(os.listdir(tmp_path / "sharded")) == ["model.ckpt-6.data-00000-of-00001", "model.ckpt-6.index"]


def test_restoring_a_missing_checkpoint_names_it(tmp_path):
    root, _ = case("train_graph")
    sess = hlobridge.Session(root / "train_graph.pbtxt", jit="off")
    with pytest.raises(hlobridge.CheckpointError, match="nope.index: cannot read the checkpoint index"):
        sess.run("save/restore_all", {"save/Const:0": str(tmp_path / "nope")})


def test_tensorflow_reads_what_hlobridge_wrote(tmp_path):
    if not TF_PYTHON.exists():
        pytest.skip(f"no TensorFlow venv at {TF_PYTHON} (tools/make_tf_venv.sh, or HLOBRIDGE_TF_PYTHON)")
    ref, plain, sharded = _train("off", tmp_path)
    run = subprocess.run([str(TF_PYTHON), "-c", TF_READER, plain, sharded], capture_output=True, text=True,
                         env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    read = json.loads(run.stdout.strip().splitlines()[-1])
    ours = hlobridge.read_checkpoint(plain)
    for prefix in (plain, sharded):
        assert sorted(read[prefix]) == sorted(ours)
        for k, (dtype, value) in read[prefix].items():
            assert dtype == ours[k].dtype.name
            np.testing.assert_array_equal(np.array(value, dtype=dtype), ours[k])
