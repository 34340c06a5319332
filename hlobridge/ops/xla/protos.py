"""The XLA protos that tf2xla's ops carry as serialized `string` attributes (XlaGather's and
XlaScatter's dimension numbers, XlaDot's and XlaConv's, their precision configs, XlaSharding's
OpSharding), read from protobuf's wire format.

hlobridge does not ship XLA's .proto files (they live in TensorFlow and XLA, not in any
package the core depends on); each message here is a table of field number -> (name,
repeated), copied from xla/xla_data.proto, which is all a reader of these few messages needs.
Repeated integers come packed (proto3) or one per field (older writers); both are read.
"""

from __future__ import annotations

from ...frontend.sstable import TableError, read_varint

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


class ProtoError(ValueError):
    """The bytes are not a well-formed message (the caller names the node and attribute)."""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    try:
        return read_varint(data, pos)
    except TableError:
        raise ProtoError("truncated varint") from None


def _signed(value: int) -> int:
    """int64 fields are written as 64-bit two's complement varints."""
    return value - (1 << 64) if value >= 1 << 63 else value


def parse(data: bytes | str, schema: dict) -> dict:
    """The message's integer fields by name: a list for repeated ones (default []), an int for
    the others (default 0). Fields the schema does not name (sub-messages, metadata) are
    skipped, as any protobuf reader skips unknown fields."""
    if isinstance(data, str):  # the frontend decodes string attributes that happen to be UTF-8
        data = data.encode("utf-8")
    out = {name: [] if repeated else 0 for name, repeated in schema.values()}
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        field = schema.get(number)
        if wire == _VARINT:
            value, pos = _varint(data, pos)
            values = [_signed(value)]
        elif wire == _LEN:
            size, pos = _varint(data, pos)
            chunk, pos = data[pos:pos + size], pos + size
            if len(chunk) != size:
                raise ProtoError("truncated field")
            values = []
            if field is not None:  # a packed repeated integer field
                p = 0
                while p < len(chunk):
                    value, p = _varint(chunk, p)
                    values.append(_signed(value))
        elif wire in (_I64, _I32):
            pos += 8 if wire == _I64 else 4
            values = []
        else:
            raise ProtoError(f"wire type {wire} (field {number}) is not supported")
        if field is not None and values:
            name, repeated = field
            if repeated:
                out[name].extend(values)
            else:
                out[name] = values[-1]
    return out


def _fields(*names) -> dict:
    """A schema from (number, name, repeated) triples."""
    return {number: (name, repeated) for number, name, repeated in names}


GATHER = _fields((1, "offset_dims", True), (2, "collapsed_slice_dims", True), (3, "start_index_map", True),
                 (4, "index_vector_dim", False), (5, "operand_batching_dims", True),
                 (6, "start_indices_batching_dims", True))
SCATTER = _fields((1, "update_window_dims", True), (2, "inserted_window_dims", True),
                  (3, "scatter_dims_to_operand_dims", True), (4, "index_vector_dim", False),
                  (5, "input_batching_dims", True), (6, "scatter_indices_batching_dims", True))
DOT = _fields((1, "lhs_contracting_dimensions", True), (2, "rhs_contracting_dimensions", True),
              (3, "lhs_batch_dimensions", True), (4, "rhs_batch_dimensions", True))
CONV = _fields((7, "input_batch_dimension", False), (8, "input_feature_dimension", False),
               (11, "input_spatial_dimensions", True), (3, "kernel_input_feature_dimension", False),
               (4, "kernel_output_feature_dimension", False), (6, "kernel_spatial_dimensions", True),
               (9, "output_batch_dimension", False), (10, "output_feature_dimension", False),
               (12, "output_spatial_dimensions", True))
PRECISION = _fields((1, "operand_precision", True))
# OpSharding: type (REPLICATED 0, MAXIMAL 1, TUPLE 2, OTHER 3, MANUAL 4, ...), the tile grid
SHARDING = _fields((1, "type", False), (3, "tile_assignment_dimensions", True),
                   (6, "replicate_on_last_tile_dim", False), (8, "last_tile_dims", True))

PRECISIONS = ("DEFAULT", "HIGH", "HIGHEST")


def precision(data) -> str:
    """The highest precision a PrecisionConfig asks for either operand (StableHLO's name)."""
    levels = parse(data or b"", PRECISION)["operand_precision"]
    return PRECISIONS[max([0, *[p for p in levels if 0 <= p < len(PRECISIONS)]])]
