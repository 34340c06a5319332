"""Anything a user passes to Session.run as a feed or fetch works or gets an error naming it."""

import numpy as np
import pytest

from hlobridge import InputError, Session
from hlobridge.frontend.graph_builder import GraphBuilder


@pytest.fixture(scope="module")
def sess():
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (2, 3))
    b.op("Sum", [x, b.const("axes", np.array([0, 1], np.int32))], name="total",
         T=np.dtype(np.float32), Tidx=np.dtype(np.int32), keep_dims=False)
    b.placeholder("s", np.object_, ())
    b.op("Identity", ["s:0"], name="same", T=np.dtype(np.object_))
    return Session(b.graph(), jit="off")


@pytest.mark.parametrize("value, message", [
    (None, "feed 'x:0' is None"),
    ([[1.0, 2.0, 3.0], [1.0]], "feed 'x:0' is not a tensor"),
    ([[object(), 1, 2], [1, 2, 3]], "feed 'x:0' holds Python objects (object)"),
    ([["a", "b", "c"], ["d", "e", "f"]], "feed 'x:0': expected float32, got strings"),
    (np.ones((2, 3), np.complex64), "feed 'x:0': expected float32, got complex64"),
    (np.ones((3, 2), np.float32), "feed 'x:0' (Placeholder): expected shape float32[2,3], got [3, 2]"),
    (np.float32(1), "feed 'x:0' (Placeholder): expected shape float32[2,3], got []"),
    ({"a": 1}, "feed 'x:0' holds Python objects (dict)"),
])
def test_a_bad_feed_is_one_error_naming_it(sess, value, message):
    with pytest.raises(InputError) as e:
        sess.run("total:0", {"x:0": value})
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("value", [
    [[1, 2, 3], [4, 5, 6]],  # ints and nested lists cast
    np.arange(12, dtype=np.float64).reshape(2, 6)[:, ::2],  # float64, not contiguous
    np.broadcast_to(np.float32(1), (2, 3)),  # read-only, zero strides
    np.asfortranarray(np.ones((2, 3), np.float32)),
])
def test_array_likes_work(sess, value):
    np.testing.assert_allclose(sess.run("total:0", {"x:0": value}), np.sum(np.asarray(value, np.float64)), rtol=1e-6)


def test_strings_feed_string_tensors(sess):
    assert sess.run("same:0", {"s:0": "path/ckpt"}) == b"path/ckpt"
    assert sess.run("same:0", {"s:0": b"raw"}) == b"raw"


@pytest.mark.parametrize("fetches, feeds, message", [
    (3, {}, "fetch must be a tensor or op name, got int"),
    ("total:0", {7: 1.0}, "feed names must be strings, got int"),
    ("total:0", [("x:0", 1.0)], "feed_dict must be a dict"),
    ("nothing:0", {}, "fetch 'nothing:0': no node 'nothing'"),
])
def test_bad_fetches_and_feed_names_are_input_errors(sess, fetches, feeds, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        sess.run(fetches, feeds)
