"""Checkpoints whose index lies about sizes and shapes (issue 33): every size, count and shape
taken from the index is checked against the data file's length and limits.py before anything
is allocated, so each is a one-line error naming the file and the tensor."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

import hlobridge
from hlobridge import CheckpointError
from hlobridge.errors import HlobridgeError, ResourceLimitError, SavedModelError
from hlobridge.frontend import tensor_bundle
from hlobridge.frontend.proto.bundle_schema import BundleEntryProto

from tests.frontend.saved_model_data import case


def _forged(tmp_path, edit, slices: bool = False) -> str:
    """A one-tensor bundle ('w', float32[6]; or 'w' in two slices), its entries edited by `edit`."""
    prefix = str(tmp_path / "ckpt")
    w = tensor_bundle.BundleWriter(prefix)
    if slices:
        w.add_slice("w", (6,), [(0, 3)], np.arange(3, dtype=np.float32))
        w.add_slice("w", (6,), [(3, 3)], np.arange(3, 6, dtype=np.float32))
    else:
        w.add("w", np.arange(6, dtype=np.float32))
    entry = BundleEntryProto.FromString(w.entries[b"w"])
    edit(entry)
    w.entries[b"w"] = entry.SerializeToString()
    w.finish()
    return prefix


def _shape(*dims):
    def edit(entry):
        del entry.shape.dim[:]
        for d in dims:
            entry.shape.dim.add(size=d)
    return edit


def _sized(size, *dims):
    def edit(entry):
        _shape(*dims)(entry)
        entry.size = size
    return edit


@pytest.mark.parametrize("edit,slices,error,message", [
    # the three: a 4 TiB entry, a sliced tensor of 2**40 elements, 2**64 elements in 0 bytes
    (_sized(4 << 40, 1 << 40), False, ResourceLimitError, r"tensor 'w': a tensor of 1,099,511,627,776 elements"),
    (_shape(1 << 40), True, ResourceLimitError, r"tensor 'w': a tensor of 1,099,511,627,776 elements"),
    (_sized(0, 1 << 32, 1 << 32), False, ResourceLimitError, r"tensor 'w': a tensor of 18,446,744,073,709,551,616"),
    # under the element limit, over the file: refused before reading
    (_sized(1 << 32, 1 << 30), False, CheckpointError, r"tensor 'w': needs bytes 0\.\.4294967296, the file ends at 24"),
    (_sized(24, 7), False, CheckpointError, r"tensor 'w': 24 bytes for shape \[7\] of float32: corrupt"),
    (_shape(-6), False, CheckpointError, r"tensor 'w': shape \[-6\] has a negative dimension"),
    (lambda e: setattr(e, "dtype", 999), False, CheckpointError, r"tensor 'w': unsupported TensorFlow dtype 999"),
    (lambda e: setattr(e, "shard_id", 3), False, CheckpointError, r"tensor 'w': shard 3 of a bundle of 1"),
    (lambda e: setattr(e, "offset", -8), False, CheckpointError, r"tensor 'w': offset -8, size 24: corrupt"),
    (_shape(7), True, CheckpointError, r"tensor 'w': its slices cover 6 of 7 elements"),
    # (files seed 3, mutant 1690: numpy's TypeError allocating a sliced variant tensor)
    (lambda e: setattr(e, "dtype", 21), True, CheckpointError, r"tensor 'w': variant tensors cannot be read"),
    (lambda e: setattr(e.slices[1].extent[0], "start", 5), True, CheckpointError,
     r"tensor 'w': slice extents \[\(5, 3\)\] do not fit its shape \[6\]"),
])
def test_lying_index_entries(tmp_path, edit, slices, error, message):
    prefix = _forged(tmp_path, edit, slices)
    with pytest.raises(error, match=f"{prefix}.*{message}"):
        hlobridge.read_checkpoint(prefix)


def test_truncated_data_file_gives_its_real_length(tmp_path):
    prefix = str(tmp_path / "ckpt")
    w = tensor_bundle.BundleWriter(prefix)
    w.add("a", np.zeros(2048, np.float32))
    w.add("b", np.ones(2048, np.float32))
    w.finish()
    data = tensor_bundle.data_filename(prefix, 0, 1)
    os.truncate(data, 8369)
    with pytest.raises(CheckpointError, match=r"tensor 'b': needs bytes 8192\.\.16384, the file ends at 8369: truncated"):
        hlobridge.read_checkpoint(prefix)


@pytest.mark.parametrize("name,variable", [("module", "'Variable'"), ("tf1_builder", "'w'"),
                                           ("keras_export", "'sequential/dense_1/bias'")])
def test_saved_model_without_its_variables_folder(tmp_path, name, variable):
    """Named at load, with the SavedModel's directory and a variable: not at the first run as
    'cluster_0 reads variable ..., which is not initialized (run its initializer first)'."""
    root, _ = case(name)
    shutil.copytree(root / "saved_model", tmp_path / "sm")
    shutil.rmtree(tmp_path / "sm" / "variables")
    with pytest.raises(SavedModelError, match=f"^{tmp_path / 'sm'}: .*variables.index is missing, but the SavedModel "
                                              f"has variables to restore \\({variable}"):
        hlobridge.load_saved_model(tmp_path / "sm", jit="off", cache_dir=False)


def test_saved_model_without_variables_to_restore_still_loads(tmp_path):
    """No Saver, no object graph: nothing to restore, as TensorFlow's loader ('no checkpoints
    were restored') the model loads; its variables come from its init op."""
    from hlobridge.frontend.proto.saved_model_schema import SavedModel
    root, _ = case("tf1_builder")
    shutil.copytree(root / "saved_model", tmp_path / "sm")
    shutil.rmtree(tmp_path / "sm" / "variables")
    pb = tmp_path / "sm" / "saved_model.pb"
    saved = SavedModel.FromString(pb.read_bytes())
    saved.meta_graphs[0].ClearField("saver_def")
    pb.write_bytes(saved.SerializeToString())
    model = hlobridge.load_saved_model(tmp_path / "sm", jit="off", cache_dir=False)
    assert "serving_default" in repr(model)
