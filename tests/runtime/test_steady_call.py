"""Session.run's steady state (runtime/steady_call.py): a call like the one before it takes its
feeds as they are, and anything that does not fit exactly is resolved in full, with the same
results and the same errors as a first call."""

import numpy as np
import pytest

from hlobridge.errors import InputError
from hlobridge.frontend.graph_builder import GraphBuilder
from hlobridge.runtime import session as session_module
from hlobridge.runtime.session import Session
from hlobridge.runtime.steady_call import steady_key


def _session():
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (None, 3))
    y = b.placeholder("y", np.float32, (3,))
    b.op("Tanh", [b.op("AddV2", [x, y], T=np.float32)], name="z", T=np.float32)
    b.op("Neg", [x], name="n", T=np.float32)
    return Session(b.graph(), cache_dir=False, min_cluster_size=1)


@pytest.fixture
def resolved(monkeypatch):
    """The feeds resolved in full (feeds.feed_array's calls), by name."""
    seen = []
    real = session_module.feed_array

    def spy(name, value, spec, op="Placeholder"):
        seen.append(name)
        return real(name, value, spec, op)
    monkeypatch.setattr(session_module, "feed_array", spy)
    return seen


def test_a_repeated_call_resolves_its_feeds_once(resolved):
    sess = _session()
    x, y = np.ones((2, 3), np.float32), np.arange(3, dtype=np.float32)
    for i in range(3):
        got = sess.run(["z:0", "n:0"], {"x:0": x * i, "y:0": y})
        np.testing.assert_allclose(got[0], np.tanh(x * i + y), rtol=1e-6)
        np.testing.assert_allclose(got[1], -x * i)
    assert resolved == ["x:0", "y:0"]
    assert isinstance(got, list) and len(sess._steady) == 1


@pytest.mark.parametrize("x", [np.ones((2, 3), np.float64), np.ones((4, 3), np.float32),
                               np.ones((3, 2), np.float32).T, [[1.0, 1.0, 1.0]]],
                         ids=["other dtype", "other shape", "not contiguous", "a list"])
def test_a_feed_that_does_not_fit_exactly_is_resolved_again(resolved, x):
    sess = _session()
    y = np.arange(3, dtype=np.float32)
    sess.run("z:0", {"x:0": np.zeros((2, 3), np.float32), "y:0": y})
    resolved.clear()
    np.testing.assert_allclose(sess.run("z:0", {"x:0": x, "y:0": y}), np.tanh(np.asarray(x) + y), rtol=1e-6)
    assert "x:0" in resolved


def test_errors_are_the_same_after_a_steady_call():
    sess = _session()
    y = np.arange(3, dtype=np.float32)
    sess.run("z:0", {"x:0": np.zeros((2, 3), np.float32), "y:0": y})
    with pytest.raises(InputError, match=r"feed 'y:0' \(Placeholder\): expected shape"):
        sess.run("z:0", {"x:0": np.zeros((2, 3), np.float32), "y:0": np.zeros(4, np.float32)})
    with pytest.raises(InputError, match="feed 'x:0' is None"):
        sess.run("z:0", {"x:0": None, "y:0": y})


def test_only_flat_fetches_and_dict_feeds_have_a_steady_key():
    assert steady_key("z:0", None) == ("z:0", ())
    assert steady_key(["a", "b"], {"x": 1}) == ((list, "a", "b"), ("x",))
    assert steady_key(("a",), {}) != steady_key(["a"], {})  # the fetches' structure is part of it
    assert steady_key({"k": "a"}, {}) is None and steady_key([["a"]], {}) is None
    assert steady_key("a", [("x", 1)]) is None  # not a dict: resolution says what is wrong
