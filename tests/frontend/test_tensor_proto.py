"""TensorProto decoding: every value encoding TensorFlow writes, and the round trip."""

import ml_dtypes
import numpy as np
import pytest

from hlobridge.frontend import tensor_proto
from hlobridge.frontend.proto import schema


def _const(dtype_enum, shape, **fields):
    proto = schema.TensorProto(dtype=dtype_enum)
    for d in shape:
        proto.tensor_shape.dim.add(size=d)
    for k, v in fields.items():
        if isinstance(v, bytes):
            setattr(proto, k, v)
        else:
            getattr(proto, k).extend(v)
    return proto


DT = schema.DATA_TYPE_VALUES


@pytest.mark.parametrize("proto,want", [
    (_const(DT["DT_FLOAT"], [2, 2], float_val=[1.5]), np.full((2, 2), 1.5, np.float32)),  # splat
    (_const(DT["DT_FLOAT"], [3], float_val=[1, 2]), np.array([1, 2, 2], np.float32)),  # last repeats
    (_const(DT["DT_INT32"], [2], int_val=[]), np.zeros(2, np.int32)),  # no values: zeros
    (_const(DT["DT_INT64"], [2], int64_val=[-1, 1 << 40]), np.array([-1, 1 << 40], np.int64)),
    (_const(DT["DT_DOUBLE"], [1], double_val=[0.1]), np.array([0.1])),
    (_const(DT["DT_BOOL"], [2], bool_val=[True, False]), np.array([True, False])),
    (_const(DT["DT_HALF"], [2], half_val=[0x3C00, 0xC000]), np.array([1, -2], np.float16)),
    (_const(DT["DT_BFLOAT16"], [2], half_val=[0x3F80, 0x4040]), np.array([1, 3], ml_dtypes.bfloat16)),
    (_const(DT["DT_UINT8"], [2], int_val=[255, 7]), np.array([255, 7], np.uint8)),
    (_const(DT["DT_INT8"], [2], int_val=[-128, 7]), np.array([-128, 7], np.int8)),
    (_const(DT["DT_INT16"], [1], int_val=[-300]), np.array([-300], np.int16)),
    (_const(DT["DT_UINT16"], [1], int_val=[60000]), np.array([60000], np.uint16)),
    (_const(DT["DT_UINT32"], [1], uint32_val=[4000000000]), np.array([4000000000], np.uint32)),
    (_const(DT["DT_UINT64"], [1], uint64_val=[1 << 63]), np.array([1 << 63], np.uint64)),
    (_const(DT["DT_COMPLEX64"], [1], scomplex_val=[1, 2]), np.array([1 + 2j], np.complex64)),
    (_const(DT["DT_STRING"], [2], string_val=[b"a", b"bc"]), np.array([b"a", b"bc"], object)),
    (_const(DT["DT_FLOAT"], [2], tensor_content=np.array([3, 4], "<f4").tobytes()),
     np.array([3, 4], np.float32)),
    (_const(DT["DT_BFLOAT16"], [2], tensor_content=np.array([1, 2], ml_dtypes.bfloat16).tobytes()),
     np.array([1, 2], ml_dtypes.bfloat16)),
])
def test_tensor_value_encodings(proto, want):
    got = tensor_proto.to_numpy(proto)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("array", [
    np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1, 2], ml_dtypes.bfloat16),
    np.array([True, False]), np.array(7, np.int64), np.array([b"x", b"yz"], object),
])
def test_tensor_roundtrip(array):
    back = tensor_proto.to_numpy(tensor_proto.from_numpy(array))
    assert back.dtype == array.dtype
    np.testing.assert_array_equal(back, array)
