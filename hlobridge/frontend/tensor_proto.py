"""TensorProto <-> numpy, with TensorFlow's rules for the typed value fields.

TensorFlow writes a constant either as raw little-endian `tensor_content` or in a
typed repeated field (`float_val`, `int_val`, `half_val`, ...). A typed field may
hold fewer values than the shape has elements: the last value is repeated (a splat
is one value), and no value at all means zeros.
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from ..limits import check_constant_bytes
from ..errors import GraphError
from .proto import schema

# numpy dtype name -> the typed field TensorFlow uses for it.
_FIELD = {
    "float32": "float_val", "float64": "double_val", "int32": "int_val", "int16": "int_val",
    "int8": "int_val", "uint8": "int_val", "uint16": "int_val", "int64": "int64_val",
    "bool": "bool_val", "uint32": "uint32_val", "uint64": "uint64_val",
    "complex64": "scomplex_val", "complex128": "dcomplex_val",
    "float16": "half_val", "bfloat16": "half_val",  # bit patterns, one per int32
    "int4": "int_val", "uint4": "int_val",
}


def shape_from_proto(shape_proto) -> tuple | None:
    """TensorShapeProto -> tuple of ints with None for unknown dims; None if unknown rank."""
    if shape_proto.unknown_rank:
        return None
    return tuple(None if d.size < 0 else int(d.size) for d in shape_proto.dim)


def to_numpy(proto, where: str = "tensor") -> np.ndarray:
    """Decode a TensorProto. `where` names the node/attr for error messages."""
    dtype = dtypes.from_enum(proto.dtype)
    if dtype in (dtypes.RESOURCE, dtypes.VARIANT):
        raise GraphError(f"{where}: constant tensors of dtype {dtype} are not supported")
    shape = shape_from_proto(proto.tensor_shape)
    if shape is None or any(d is None for d in shape):
        raise GraphError(f"{where}: constant tensor has an unknown shape")
    count = math.prod(shape)  # Python ints: a huge shape must not wrap around
    check_constant_bytes(count * (8 if dtype == np.object_ else dtype.itemsize), where)
    if dtype == np.object_:
        values = np.empty(len(proto.string_val), dtype=object)
        values[:] = list(proto.string_val)
    elif proto.tensor_content:
        raw = proto.tensor_content
        if len(raw) != count * dtype.itemsize:
            raise GraphError(f"{where}: tensor_content has {len(raw)} bytes, shape {list(shape)} "
                             f"of {dtypes.name(dtype)} needs {count * dtype.itemsize}")
        return np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)
    elif dtype.name.startswith("float8"):
        values = np.frombuffer(proto.float8_val, dtype=np.uint8).view(dtype)
    else:
        field = _FIELD.get(dtype.name)
        if field is None:
            raise GraphError(f"{where}: cannot decode constant of dtype {dtypes.name(dtype)}")
        raw_values = list(getattr(proto, field))
        if field == "half_val":
            values = np.array(raw_values, dtype=np.uint16).view(dtype)
        elif dtype.kind == "c":
            pairs = np.array(raw_values, dtype=dtype.type(0).real.dtype).reshape(-1, 2)
            values = (pairs[:, 0] + 1j * pairs[:, 1]).astype(dtype)
        else:
            values = np.array(raw_values).astype(dtype)
    if values.size == count:
        return values.reshape(shape)
    if values.size > count:
        raise GraphError(f"{where}: {values.size} values for shape {list(shape)}")
    out = np.zeros(count, dtype=dtype) if dtype != np.object_ else np.full(count, b"", dtype=object)
    if values.size:
        out[: values.size] = values
        out[values.size:] = values[-1]
    return out.reshape(shape)


def from_numpy(array: np.ndarray):
    """Encode a numpy array as a TensorProto (raw content for numbers, string_val for bytes)."""
    array = np.asarray(array)
    proto = schema.TensorProto(dtype=dtypes.to_enum(array.dtype))
    for d in array.shape:
        proto.tensor_shape.dim.add(size=d)
    if array.dtype == np.object_:
        proto.string_val.extend(v if isinstance(v, bytes) else str(v).encode() for v in array.flat)
    else:
        proto.tensor_content = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()
    return proto
