"""TensorFlow DataType <-> NumPy dtype <-> MLIR element type.

bfloat16 and the float8 types come from ml_dtypes, which NumPy and IREE's runtime
both understand.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from .errors import GraphError
from .frontend.proto.schema import DATA_TYPE_VALUES

# DataType enum name (without DT_) -> numpy dtype, for every type with a numeric value.
_NUMPY = {
    "FLOAT": np.float32, "DOUBLE": np.float64, "HALF": np.float16,
    "BFLOAT16": ml_dtypes.bfloat16, "INT8": np.int8, "INT16": np.int16, "INT32": np.int32,
    "INT64": np.int64, "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32,
    "UINT64": np.uint64, "BOOL": np.bool_, "COMPLEX64": np.complex64,
    "COMPLEX128": np.complex128, "STRING": np.object_,
    "QINT8": np.int8, "QUINT8": np.uint8, "QINT16": np.int16, "QUINT16": np.uint16,
    "QINT32": np.int32, "FLOAT8_E5M2": ml_dtypes.float8_e5m2,
    "FLOAT8_E4M3FN": ml_dtypes.float8_e4m3fn, "FLOAT8_E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
    "FLOAT8_E4M3B11FNUZ": ml_dtypes.float8_e4m3b11fnuz, "FLOAT8_E5M2FNUZ": ml_dtypes.float8_e5m2fnuz,
    "INT4": ml_dtypes.int4, "UINT4": ml_dtypes.uint4,
}

# Special, non-numeric handle types. They have no numpy dtype; values are Python objects.
RESOURCE = "resource"
VARIANT = "variant"

_BY_ENUM = {DATA_TYPE_VALUES[f"DT_{k}"]: np.dtype(v) for k, v in _NUMPY.items()}
_BY_ENUM[DATA_TYPE_VALUES["DT_RESOURCE"]] = RESOURCE
_BY_ENUM[DATA_TYPE_VALUES["DT_VARIANT"]] = VARIANT
_ENUM_BY_DTYPE = {}
for _name in ("FLOAT", "DOUBLE", "HALF", "BFLOAT16", "INT8", "INT16", "INT32", "INT64", "UINT8",
              "UINT16", "UINT32", "UINT64", "BOOL", "COMPLEX64", "COMPLEX128", "STRING",
              "FLOAT8_E5M2", "FLOAT8_E4M3FN", "INT4", "UINT4"):
    _ENUM_BY_DTYPE[np.dtype(_NUMPY[_name])] = DATA_TYPE_VALUES[f"DT_{_name}"]
_ENUM_BY_DTYPE[RESOURCE] = DATA_TYPE_VALUES["DT_RESOURCE"]
_ENUM_BY_DTYPE[VARIANT] = DATA_TYPE_VALUES["DT_VARIANT"]
_ENUM_NAMES = {v: k for k, v in DATA_TYPE_VALUES.items()}


def from_enum(value: int):
    """DataType enum -> numpy dtype (or RESOURCE/VARIANT). `_REF` types map to their base."""
    base = value - 100 if value > 100 else value
    try:
        return _BY_ENUM[base]
    except KeyError:
        name = _ENUM_NAMES.get(value, str(value))
        raise GraphError(f"unsupported TensorFlow dtype {name}") from None


def is_ref(value: int) -> bool:
    """Whether a DataType enum is a `_REF` type (TF1 reference variables: the base type + 100)."""
    return value > 100


def to_enum(dtype) -> int:
    """numpy dtype (or RESOURCE/VARIANT) -> DataType enum, the inverse of `from_enum`."""
    return _ENUM_BY_DTYPE[dtype if dtype in (RESOURCE, VARIANT) else np.dtype(dtype)]


def name(dtype) -> str:
    """Short TF-style name: float32, bfloat16, resource, string, ..."""
    if dtype in (RESOURCE, VARIANT):
        return dtype
    dtype = np.dtype(dtype)
    return "string" if dtype == np.object_ else dtype.name


_MLIR = {
    "float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16", "int8": "i8",
    "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "ui8", "uint16": "ui16",
    "uint32": "ui32", "uint64": "ui64", "bool": "i1", "complex64": "complex<f32>",
    "complex128": "complex<f64>", "float8_e5m2": "f8E5M2", "float8_e4m3fn": "f8E4M3FN",
    "int4": "i4", "uint4": "ui4",
}


def mlir_name(dtype) -> str | None:
    """MLIR element type spelling for a numpy dtype, or None if it cannot be compiled."""
    return _MLIR.get(name(dtype))


def is_floating(dtype) -> bool:
    """Whether dtype is a floating type, bfloat16 and float8 included (NumPy does not count those
    as np.floating); False for resource and variant handles."""
    return dtype not in (RESOURCE, VARIANT) and (
        np.issubdtype(np.dtype(dtype), np.floating) or name(dtype).startswith(("bfloat", "float8")))


def is_integer(dtype) -> bool:
    """Whether dtype is a signed or unsigned NumPy integer type (bool is not); False for handles."""
    return dtype not in (RESOURCE, VARIANT) and np.issubdtype(np.dtype(dtype), np.integer)


def is_unsigned(dtype) -> bool:
    """Whether dtype is an unsigned NumPy integer type; False for handles."""
    return dtype not in (RESOURCE, VARIANT) and np.issubdtype(np.dtype(dtype), np.unsignedinteger)
