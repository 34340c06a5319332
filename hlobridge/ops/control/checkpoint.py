"""Checkpoint ops: a tf.compat.v1 Saver's subgraph, run on reference kernels.

A Saver writes `save/SaveV2` (one bundle) or, sharded, `save/StringJoin` (prefix +
"_temp/part") -> `save/ShardedFilename` -> `save/SaveV2` per device -> `save/MergeV2Checkpoints`
(one bundle at the prefix); restoring is `save/RestoreV2` followed by assignments. These
kernels do the same with hlobridge/frontend/tensor_bundle.py, so a user restores
TensorFlow's checkpoint, trains with hlobridge, saves, and TensorFlow reads the result.

They never compile (file I/O): no lowerings. SaveV2, RestoreV2 and MergeV2Checkpoints are
stateful, so they run once per step and are never constant-folded.
"""

from __future__ import annotations

import re

import numpy as np

from ... import dtypes
from ...errors import CheckpointError
from ...frontend import tensor_bundle
from ...spec import TensorSpec
from ..registry import register

STRING = np.dtype(object)


def _text(value) -> str:
    value = value.item() if isinstance(value, np.ndarray) else value
    return value.decode() if isinstance(value, bytes) else str(value)


def _texts(value) -> list[str]:
    return [_text(v) for v in np.asarray(value, dtype=object).ravel()]


def _strings(values: list[str], shape: tuple) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = [v.encode() for v in values]
    return out.reshape(shape)


def _save_v2_kernel(ctx, prefix, names, shapes_and_slices, *tensors):
    names, specs = _texts(names), _texts(shapes_and_slices)
    if not len(names) == len(specs) == len(tensors):
        raise ctx.error(f"{len(names)} names, {len(specs)} shape_and_slices and {len(tensors)} tensors",
                        CheckpointError)
    writer = tensor_bundle.BundleWriter(_text(prefix))
    for name, spec, value in zip(names, specs, tensors):
        full_shape, extents = tensor_bundle.parse_shape_and_slice(spec)
        if extents:
            writer.add_slice(name, full_shape, extents, value)
        else:
            writer.add(name, value)
    writer.finish()
    return []


register("SaveV2", infer=lambda ctx: [], kernel=_save_v2_kernel, attrs=("dtypes",), stateful=True)


def _restore_v2_infer(ctx):
    specs = ctx.inputs[2].value
    out = []
    for i, dtype in enumerate(ctx.attr("dtypes")):
        shape = None
        if specs is not None and _texts(specs)[i]:
            full, extents = tensor_bundle.parse_shape_and_slice(_texts(specs)[i])
            shape = tuple(d if n < 0 else n for d, (_, n) in zip(full, extents))
        out.append(TensorSpec(dtype, shape))
    return out


def _restore_v2_kernel(ctx, prefix, names, shapes_and_slices):
    reader = tensor_bundle.BundleReader(_text(prefix))
    out = []
    for name, spec, dtype in zip(_texts(names), _texts(shapes_and_slices), ctx.attr("dtypes")):
        if name not in reader:
            raise CheckpointError(f"{reader.index_path}: no tensor '{name}' in the checkpoint "
                                  f"(node '{ctx.name}' restores it)")
        value = reader.read(name)
        if value.dtype != dtype:
            raise CheckpointError(f"{reader.index_path}: tensor '{name}' is {dtypes.name(value.dtype)}, "
                                  f"node '{ctx.name}' restores it as {dtypes.name(dtype)}")
        full, extents = tensor_bundle.parse_shape_and_slice(spec)
        if extents:
            if tuple(value.shape) != full:
                raise CheckpointError(f"{reader.index_path}: tensor '{name}' has shape {list(value.shape)}, "
                                      f"node '{ctx.name}' restores a slice of {list(full)}")
            value = value[tensor_bundle.slice_index(extents, full)]
        out.append(value)
    return out


register("RestoreV2", infer=_restore_v2_infer, kernel=_restore_v2_kernel, attrs=("dtypes",), stateful=True)


def _merge_kernel(ctx, prefixes, destination):
    tensor_bundle.merge_bundles(_texts(prefixes), _text(destination),
                                delete_old_dirs=ctx.attr("delete_old_dirs", True))
    return []


register("MergeV2Checkpoints", infer=lambda ctx: [], kernel=_merge_kernel,
         attrs=("delete_old_dirs", "allow_missing_files"), stateful=True)


def _sharded_filename_kernel(ctx, basename, shard, num_shards):
    return _strings([f"{_text(basename)}-{int(shard):05d}-of-{int(num_shards):05d}"], ())


register("ShardedFilename", infer=lambda ctx: [TensorSpec(STRING, ())], kernel=_sharded_filename_kernel)


def _string_join_infer(ctx):
    shapes = [s.shape for s in ctx.inputs if s.shape != ()]
    return [TensorSpec(STRING, shapes[0] if shapes else ())]


def _string_join_kernel(ctx, *inputs):
    arrays = [np.asarray(a, dtype=object) for a in inputs]
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    columns = [_texts(np.broadcast_to(a, shape)) for a in arrays]
    separator = _text(ctx.attr("separator", ""))
    return _strings([separator.join(parts) for parts in zip(*columns)], shape)


register("StringJoin", infer=_string_join_infer, kernel=_string_join_kernel, attrs=("N", "separator"))


def _regex_full_match_kernel(ctx, value):
    """The sharded Saver asks whether its prefix is an s3:// path (another temp-file scheme)."""
    pattern = re.compile(_text(ctx.attr("pattern")), re.DOTALL)
    arr = np.asarray(value, dtype=object)
    return np.array([pattern.fullmatch(t) is not None for t in _texts(arr)], dtype=bool).reshape(arr.shape)


register("StaticRegexFullMatch", infer=lambda ctx: [TensorSpec(np.dtype(bool), ctx.inputs[0].shape)],
         kernel=_regex_full_match_kernel, attrs=("pattern",))
