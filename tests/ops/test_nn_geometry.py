"""nn/geometry.py: one Format and one Window for 1-, 2- and 3-D, SAME padding written once."""

import numpy as np
import pytest

from hlobridge.errors import ShapeInferenceError
from hlobridge.ops.nn.geometry import Format, np_pad, np_windows, same_padding, valid_counts, window


class _Ctx:
    """The attribute-reading part of an OpContext."""

    def __init__(self, op="Conv", **attrs):
        self.op, self.attrs = op, attrs

    def attr(self, name, default=None):
        return self.attrs.get(name, default)

    def error(self, message):
        return ShapeInferenceError(message)


@pytest.mark.parametrize("rank,last,first", [(1, "NWC", "NCW"), (2, "NHWC", "NCHW"), (3, "NDHWC", "NCDHW")])
def test_format_axes_in_every_rank(rank, last, first):
    fl, ff = Format(_Ctx(data_format=last), rank), Format(_Ctx(data_format=first), rank)
    assert (fl.channel, fl.spatial) == (rank + 1, tuple(range(1, rank + 1)))
    assert (ff.channel, ff.spatial) == (1, tuple(range(2, rank + 2)))
    sizes = tuple(range(5, 5 + rank))
    assert fl.shape(2, sizes, 3) == (2, *sizes, 3) and ff.shape(2, sizes, 3) == (2, 3, *sizes)
    x = np.zeros(ff.shape(2, sizes, 3))
    assert ff.to_last(x).shape == fl.shape(2, sizes, 3)
    assert ff.from_last(ff.to_last(x)).shape == x.shape
    assert ff.full(sizes, 1) == [1, 1, *sizes]
    assert fl.conv_io.count(",") == rank + 1 and fl.filter_layout("i", "o").endswith("i, o]")


def test_format_rejects_another_ranks_name():
    with pytest.raises(ShapeInferenceError, match="data_format 'NHWC' is not supported"):
        Format(_Ctx(data_format="NHWC"), 3)


@pytest.mark.parametrize("size,eff,stride,want", [
    (7, 3, 2, (1, 1)), (8, 3, 2, (0, 1)), (6, 2, 2, (0, 0)), (5, 4, 1, (1, 2)), (1, 5, 3, (2, 2)),
])
def test_same_padding_puts_the_odd_element_after(size, eff, stride, want):
    lo, hi = same_padding(size, eff, stride)
    assert (lo, hi) == want
    assert (size + lo + hi - eff) // stride + 1 == -(-size // stride)  # SAME: ceil(size / stride) outputs


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_window_in_every_rank(rank):
    ones = [1] * (rank + 2)
    strides = [1] + [2] * rank + [1]
    ctx = _Ctx(strides=strides, dilations=ones, padding="SAME")
    fmt = Format(_Ctx(), rank)
    win = window(ctx, fmt, (7,) * rank, (3,) * rank)
    assert win.out == (4,) * rank and win.pads == ((1, 1),) * rank
    assert win.transposed_pads((7,) * rank) == [(1, 1)] * rank
    valid = window(_Ctx(strides=strides, padding="VALID"), fmt, (None,) * rank, (3,) * rank)
    assert valid.out == (None,) * rank and valid.pads == ((0, 0),) * rank


def test_window_explicit_padding_and_3d_refusal():
    fmt = Format(_Ctx(), 2)
    ctx = _Ctx(strides=[1, 1, 1, 1], padding="EXPLICIT", explicit_paddings=[0, 0, 1, 2, 0, 1, 0, 0])
    assert window(ctx, fmt, (5, 5), (3, 3)).pads == ((1, 2), (0, 1))
    with pytest.raises(ShapeInferenceError, match="padding 'EXPLICIT' is not SAME or VALID"):
        window(_Ctx(strides=[1] * 5, padding="EXPLICIT"), Format(_Ctx(), 3), (5,) * 3, (3,) * 3)


def test_windows_and_valid_counts():
    fmt = Format(_Ctx(), 2)
    win = window(_Ctx(strides=[1, 2, 2, 1], padding="SAME"), fmt, (5, 4), (3, 3))
    x = np.arange(20.0).reshape(1, 5, 4, 1)
    views = np_windows(np_pad(x, win.pads), win)
    assert views.shape == (1, 3, 2, 1, 3, 3)
    np.testing.assert_array_equal(valid_counts((5, 4), win), [[6, 4], [9, 6], [6, 4]])  # pads (1, 1), (0, 1)
    assert views[0, 1, 0, 0].sum() == x[0, 1:4, 0:3, 0].sum()  # output (1, 0) reads rows 1..3, cols 0..2
