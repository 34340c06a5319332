"""SavedModels written by TensorFlow 2.21 load and run without it: outputs within tolerance
of TensorFlow's, variables bit-exact, and every bad directory a one-line error."""

from __future__ import annotations

import shutil
import time

import numpy as np
import pytest

import hlobridge
from hlobridge.cli import compile as compile_cli
from hlobridge.cli import explain as explain_cli
from hlobridge.errors import InputError, SavedModelError

from .saved_model_data import array, assert_bit_exact, case

# (case, jit): every form under the reference kernels; the JIT on the ones that compile fast
FORMS = [("module", "off"), ("module", "auto"), ("keras_export", "off"), ("keras_export", "auto"),
         ("tf1_builder", "off"), ("tf1_builder", "auto"), ("many_variables", "off"), ("keras_app", "auto")]


def _load(name, signature, jit):
    root, ref = case(name)
    with pytest.warns(UserWarning, match="assets ignored") if name == "module" else _nothing():
        model = hlobridge.load_saved_model(root / "saved_model", signature=signature, jit=jit, cache_dir=False)
    return model, ref


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("name,jit", FORMS)
def test_signatures_match_tensorflow(name, jit):
    _, ref = case(name)
    for signature, sig_ref in ref["signatures"].items():
        model, _ = _load(name, signature, jit)
        outputs = model.run({k: array(v) for k, v in sig_ref["inputs"].items()})
        assert sorted(outputs) == sorted(sig_ref["outputs"])
        for key, expected in sig_ref["outputs"].items():
            expected = array(expected)
            assert outputs[key].dtype == expected.dtype and outputs[key].shape == expected.shape
            np.testing.assert_allclose(outputs[key], expected, rtol=1e-5, atol=1e-5, err_msg=f"{name} {key}")


@pytest.mark.parametrize("name", ["module", "keras_export", "tf1_builder", "many_variables"])
def test_restored_variables_are_bit_exact(name):
    model, ref = _load(name, None, "off")
    keys = hlobridge.read_checkpoint(case(name)[0] / "saved_model")
    # (string variables are left out: the init op writes the assets' paths into them)
    values = {k: np.asarray(v) for k, v in model.session.variables.values.items() if np.asarray(v).dtype != object}
    # every variable the session holds is one checkpoint tensor, byte for byte
    by_bytes = {(v.dtype.str, v.shape, v.tobytes()) for k, v in keys.items() if k != "_CHECKPOINTABLE_OBJECT_GRAPH"}
    assert values and all((v.dtype.str, v.shape, v.tobytes()) in by_bytes for v in values.values())
    assert_bit_exact(keys, ref["variables"])


def test_signatures_specs_and_dict_outputs():
    model, _ = _load("module", "predict", "off")
    assert model.signatures == ["predict", "serving_default"]  # not __saved_model_init_op
    assert model.inputs["x"].shape == (None, 8) and model.inputs["label"].shape == (None,)
    assert sorted(model.outputs) == ["hit", "probs"] and model.outputs["hit"].dtype == np.bool_
    default, _ = _load("module", None, "off")
    assert default.signature == "serving_default" and list(default.outputs) == ["output_0"]


def test_unknown_batch_and_sequence_dims():
    model, ref = _load("tf1_builder", None, "off")
    assert model.inputs["tokens"].shape == (None, None, 4)
    x = array(ref["signatures"]["serving_default"]["inputs"]["tokens"])
    for shape in [(1, 3, 4), (5, 11, 4)]:
        assert model.run({"tokens": np.resize(x, shape)})["y"].shape == (shape[0], 5)


def test_session_accepts_a_saved_model_directory():
    root, ref = case("tf1_builder")
    sess = hlobridge.Session(root / "saved_model", tags=["serve"], jit="off")
    sig = ref["signatures"]["serving_default"]
    y = sess.run("y:0", {"tokens:0": array(sig["inputs"]["tokens"])})
    np.testing.assert_allclose(y, array(sig["outputs"]["y"]), rtol=1e-5, atol=1e-6)


def test_nonexistent_signature_lists_the_ones_that_exist():
    root, _ = case("module")
    with pytest.raises(SavedModelError) as e:
        hlobridge.load_saved_model(root / "saved_model", signature="serve")
    assert str(e.value) == f"{root / 'saved_model'}: no signature 'serve'; it has predict, serving_default"


def test_wrong_tags_and_bad_files(tmp_path):
    root, _ = case("tf1_builder")
    with pytest.raises(SavedModelError, match=r"no MetaGraph with tags \['train'\]; it has \['serve'\]"):
        hlobridge.load_saved_model(root / "saved_model", tags=["train"])
    shutil.copytree(root / "saved_model", tmp_path / "sm")
    pb = tmp_path / "sm" / "saved_model.pb"
    pb.write_bytes(pb.read_bytes()[:1000])
    with pytest.raises(SavedModelError, match=f"{pb}: not a SavedModel"):
        hlobridge.load_saved_model(tmp_path / "sm")
    with pytest.raises(SavedModelError, match="tags= applies to a SavedModel directory"):
        hlobridge.Session(root / "nothing.pbtxt", tags=["serve"])


def test_missing_variables_shard_names_the_file(tmp_path):
    root, _ = case("module")
    shutil.copytree(root / "saved_model", tmp_path / "sm")
    data = tmp_path / "sm" / "variables" / "variables.data-00000-of-00001"
    data.unlink()
    with pytest.raises(hlobridge.CheckpointError, match=f"{data}: missing data file"):
        with pytest.warns(UserWarning):
            hlobridge.load_saved_model(tmp_path / "sm")


def test_feeds_are_checked_by_key():
    model, _ = _load("module", "predict", "off")
    with pytest.raises(InputError, match="takes label, x; missing label; unknown y"):
        model.run({"x": np.zeros((1, 8), np.float32), "y": 1})


def test_keras_application_loads_quickly():
    root, _ = case("keras_app")
    start = time.perf_counter()
    model = hlobridge.load_saved_model(root / "saved_model", jit="off", cache_dir=False)
    assert time.perf_counter() - start < 10
    assert model.inputs["inputs"].shape == (None, 64, 64, 3)


def test_compiled_signature_outputs_are_keyed_as_the_signature_def_keys_them(tmp_path, capsys):
    root, ref = case("module")
    out = tmp_path / "predict.vmfb"
    with pytest.warns(UserWarning, match="assets ignored"):
        assert compile_cli.main([str(root / "saved_model"), "-o", str(out), "--signature", "predict",
                                 "--input-shape", "x=3,8", "--input-shape", "label=3"]) == 0
    assert "label, x -> hit, probs" in capsys.readouterr().err
    m = hlobridge.runtime.load(str(out))
    sig = ref["signatures"]["predict"]
    got = m.run({k: array(v) for k, v in sig["inputs"].items()})
    assert sorted(got) == sorted(sig["outputs"]) == ["hit", "probs"]
    for key, want in sig["outputs"].items():
        np.testing.assert_allclose(got[key], array(want), rtol=1e-5, atol=1e-6)


def test_compile_and_explain_clis(tmp_path, capsys):
    root, ref = case("module")
    out = tmp_path / "model.vmfb"
    with pytest.warns(UserWarning, match="assets ignored"):
        assert compile_cli.main([str(root / "saved_model"), "-o", str(out), "--signature", "serving_default",
                                 "--input-shape", "x=4,8"]) == 0
    m = hlobridge.runtime.load(str(out))
    sig = ref["signatures"]["serving_default"]
    x = np.resize(array(sig["inputs"]["x"]), (4, 8))
    # named by the SignatureDef's keys, as TF's signature returns them (and fed by key or "key:0")
    assert m.input_names == ["x"] and m.output_names == ["output_0"]
    np.testing.assert_allclose(m.run({"x": x})["output_0"][:3], array(sig["outputs"]["output_0"]),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(m.run({"x:0": x})["output_0"], m.run({"x": x})["output_0"])
    with pytest.warns(UserWarning, match="assets ignored"):
        assert explain_cli.main([str(root / "saved_model"), "--signature", "predict"]) == 0
    text = capsys.readouterr().out
    assert "cluster_0" in text and "predict_x:0" in text
    assert explain_cli.run_main("hlobridge-explain", explain_cli.main,
                                [str(root / "saved_model"), "--signature", "nope"]) == 1
    assert "no signature 'nope'; it has predict, serving_default" in capsys.readouterr().err
