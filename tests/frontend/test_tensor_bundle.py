"""TensorBundle checkpoints: TensorFlow-written ones read bit for bit, hlobridge-written ones
read back (and by TensorFlow: tests/e2e/test_checkpoint_session.py), bad files named."""

from __future__ import annotations

import shutil

import ml_dtypes
import numpy as np
import pytest

import hlobridge
from hlobridge.errors import CheckpointError
from hlobridge.frontend import sstable, tensor_bundle

from .saved_model_data import array, assert_bit_exact, case

TF_CHECKPOINTS = ["dtypes", "sharded", "sliced", "train_graph"]
TF_SAVED_MODELS = ["module", "keras_export", "tf1_builder", "many_variables", "keras_app"]


@pytest.mark.parametrize("name", TF_CHECKPOINTS)
def test_tf_checkpoints_read_bit_exact(name):
    root, ref = case(name)
    assert_bit_exact(hlobridge.read_checkpoint(root / ref["prefix"]), ref["variables"])


@pytest.mark.parametrize("name", TF_SAVED_MODELS)
def test_saved_model_variables_read_bit_exact(name):
    root, ref = case(name)
    assert_bit_exact(hlobridge.read_checkpoint(root / "saved_model"), ref["variables"])


def test_every_dtype_including_bf16_f16_and_strings():
    root, ref = case("dtypes")
    values = hlobridge.read_checkpoint(root / ref["prefix"])
    key = "{}/.ATTRIBUTES/VARIABLE_VALUE"
    assert values[key.format("bfloat16")].dtype == ml_dtypes.bfloat16
    assert values[key.format("float16")].dtype == np.float16
    assert values[key.format("text")].tolist() == [b"", b"hello", b"\x00\xff bytes", "\u00e9t\u00e9".encode()]
    assert values[key.format("scalar")].shape == () and values[key.format("scalar")] == np.float32(3.25)


def test_many_variables_and_shards():
    _, ref = case("many_variables")
    assert len(ref["variables"]) > 300
    root, ref = case("sharded")
    reader = tensor_bundle.BundleReader(root / ref["prefix"])
    assert reader.header.num_shards == len(ref["shards"]) > 2


def test_directory_with_checkpoint_state_reads_the_latest():
    root, ref = case("train_graph")
    assert_bit_exact(hlobridge.read_checkpoint(root / "ckpt"), ref["variables"])


def test_sliced_tensors_are_assembled_whole():
    root, ref = case("sliced")
    reader = tensor_bundle.BundleReader(root / ref["prefix"])
    assert len(reader.entry("emb").slices) == 3
    assert reader.read("emb").shape == (10, 3)


def test_write_read_roundtrip_every_dtype(tmp_path):
    values = {
        "f32": np.arange(6, dtype=np.float32).reshape(2, 3), "bf16": np.array([1.5, -2], ml_dtypes.bfloat16),
        "f16": np.array([0.1, 65504], np.float16), "f64": np.array(2.5), "i8": np.array([-128, 127], np.int8),
        "u64": np.array([2**64 - 1], np.uint64), "c128": np.array([1 + 2j]), "b": np.array([True, False]),
        "s": np.array([b"a", b"", b"\xff\x00z"], dtype=object), "empty": np.zeros((0, 3), np.float32),
    }
    writer = tensor_bundle.BundleWriter(tmp_path / "ckpt" / "all")
    for k, v in values.items():
        writer.add(k, v)
    emb = np.arange(30, dtype=np.float32).reshape(10, 3)
    writer.add_slice("emb", (10, 3), [(0, 4), (0, -1)], emb[:4])
    writer.add_slice("emb", (10, 3), [(4, 6), (0, -1)], emb[4:])
    writer.finish()
    back = hlobridge.read_checkpoint(tmp_path / "ckpt" / "all")
    assert sorted(back) == sorted([*values, "emb"])
    for k, v in values.items():
        assert back[k].dtype == v.dtype and back[k].tobytes() == v.tobytes() if v.dtype != object else \
            back[k].tolist() == v.tolist()
    np.testing.assert_array_equal(back["emb"], emb)
    assert not list((tmp_path / "ckpt").glob("*tempstate*"))


def test_many_keys_span_blocks_and_restarts(tmp_path, monkeypatch):
    monkeypatch.setattr(sstable, "BLOCK_SIZE", 512)
    entries = [(f"layer_{i:04d}/kernel".encode(), bytes([i % 251]) * (i % 7)) for i in range(700)]
    assert sstable.read_table(sstable.write_table(entries)) == entries


def test_slice_keys_match_tensorflow():
    root, ref = case("sliced")
    reader = tensor_bundle.BundleReader(root / ref["prefix"])
    slice_keys = {k for k in reader.entries if k.startswith(b"\x00")}
    ours = {tensor_bundle.slice_key(name, tensor_bundle.slice_extents(s, reader.dtype_and_shape(name)[1]))
            for name in ("emb", "cols") for s in reader.entry(name).slices}
    assert ours == slice_keys
    for value in (0, 1, 63, 64, -64, -65, 8191, 8192, 2**40, -(2**40), 2**62, 2**63 - 1, -(2**63)):
        a, b = tensor_bundle._signed_num_increasing(value), tensor_bundle._signed_num_increasing(value + 1) \
            if value < 2**63 - 1 else None
        assert b is None or a < b  # byte order is numeric order


# -- bad files: one line naming the file and what is wrong ---------------------------------------


def _copy(tmp_path, name):
    root, ref = case(name)
    shutil.copytree(root / "ckpt", tmp_path / "ckpt")
    return str(tmp_path / ref["prefix"]), ref


def _one_line_error(prefix, *expected):
    with pytest.raises(CheckpointError) as e:
        hlobridge.read_checkpoint(prefix)
    message = str(e.value)
    assert "\n" not in message
    for part in expected:
        assert part in message, message
    return message


def test_corrupted_index(tmp_path):
    prefix, _ = _copy(tmp_path, "dtypes")
    data = bytearray(open(prefix + ".index", "rb").read())
    data[40] ^= 0x55
    open(prefix + ".index", "wb").write(bytes(data))
    _one_line_error(prefix, prefix + ".index", "checksum mismatch", "corrupt")


def test_truncated_index(tmp_path):
    prefix, _ = _copy(tmp_path, "dtypes")
    data = open(prefix + ".index", "rb").read()
    open(prefix + ".index", "wb").write(data[:-10])
    _one_line_error(prefix, prefix + ".index", "truncated")


def test_truncated_data_file(tmp_path):
    prefix, _ = _copy(tmp_path, "dtypes")
    path = tensor_bundle.data_filename(prefix, 0, 1)
    data = open(path, "rb").read()
    open(path, "wb").write(data[:len(data) // 2])
    _one_line_error(prefix, path, "tensor '", "truncated")


def test_corrupted_data_names_the_tensor(tmp_path):
    prefix, _ = _copy(tmp_path, "train_graph")
    reader = tensor_bundle.BundleReader(prefix)
    entry = reader.entry("w")
    path = tensor_bundle.data_filename(prefix, 0, 1)
    data = bytearray(open(path, "rb").read())
    data[entry.offset] ^= 1
    open(path, "wb").write(bytes(data))
    _one_line_error(prefix, path, "tensor 'w'", "checksum mismatch")


def test_missing_shard(tmp_path):
    prefix, ref = _copy(tmp_path, "sharded")
    missing = tensor_bundle.data_filename(prefix, 1, len(ref["shards"]))
    shutil.os.remove(missing)
    _one_line_error(prefix, missing, "missing data file", "shard 1 of 3")


def test_not_a_checkpoint(tmp_path):
    _one_line_error(tmp_path / "nothing", "nothing.index", "cannot read")
    _one_line_error(tmp_path, str(tmp_path), "checkpoint")


def test_unknown_key(tmp_path):
    root, ref = case("train_graph")
    with pytest.raises(CheckpointError, match="no tensor 'nope'"):
        tensor_bundle.BundleReader(root / ref["prefix"]).read("nope")


def test_array_values_from_reference():
    _, ref = case("train_graph")
    assert array(ref["feeds"]["x"]).shape == (8, 3)
