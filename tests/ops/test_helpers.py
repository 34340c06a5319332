"""helpers.py: the limits the families share (one `lowest`)."""

import ml_dtypes
import numpy as np
import pytest

from hlobridge.ops.helpers import highest, lowest


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32, np.float64])
def test_lowest_and_highest_of_floats_are_infinite(dtype):
    assert lowest(dtype) == -np.inf and highest(dtype) == np.inf


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint16])
def test_lowest_and_highest_of_integers_are_their_limits(dtype):
    assert lowest(dtype) == np.iinfo(dtype).min and highest(dtype) == np.iinfo(dtype).max


def test_lowest_and_highest_of_bool():
    assert lowest(np.bool_) is False and highest(np.bool_) is True
