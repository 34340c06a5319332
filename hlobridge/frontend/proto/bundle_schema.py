"""TensorFlow's checkpoint schemas: the TensorBundle index entries and the `checkpoint` file.

From tensorflow/core/protobuf/tensor_bundle.proto, tensor_slice.proto and
tensorflow/python/checkpoint/checkpoint_state.proto (CheckpointState), with their names,
field numbers and types, carried as tables the way schema.py carries the GraphDef schema.
"""

from __future__ import annotations

from .schema import add_file, message_class

_MESSAGES = {
    "TensorSliceProto.Extent": [("start", 1, "int64"), ("length", 2, "int64")],
    "TensorSliceProto": [("extent", 1, "TensorSliceProto.Extent", "*")],
    "BundleHeaderProto": [
        ("num_shards", 1, "int32"), ("endianness", 2, "BundleEndianness"), ("version", 3, "VersionDef"),
    ],
    "BundleEntryProto": [
        ("dtype", 1, "DataType"), ("shape", 2, "TensorShapeProto"), ("shard_id", 3, "int32"),
        ("offset", 4, "int64"), ("size", 5, "int64"), ("crc32c", 6, "fixed32"),
        ("slices", 7, "TensorSliceProto", "*"),
    ],
    "CheckpointState": [
        ("model_checkpoint_path", 1, "string"), ("all_model_checkpoint_paths", 2, "string", "*"),
        ("all_model_checkpoint_timestamps", 3, "double", "*"), ("last_preserved_timestamp", 4, "double"),
    ],
}
# Extent.length sits in a oneof: an unset length means "to the end of the dimension".
_ONEOFS = {"TensorSliceProto.Extent": ("has_length", ("length",))}
_ENUMS = {"BundleEndianness": {"LITTLE": 0, "BIG": 1}}

add_file("hlobridge/tensorflow_bundle.proto", _MESSAGES, _ONEOFS, _ENUMS)

TensorSliceProto = message_class("TensorSliceProto")
BundleHeaderProto = message_class("BundleHeaderProto")
BundleEntryProto = message_class("BundleEntryProto")
CheckpointState = message_class("CheckpointState")
