"""A plan that is one compiled call runs its steady steps as that call (runtime/direct_call.py):
the same values, arrays the user owns, the same errors; plans whose steps need the plan keep it."""

import numpy as np
import pytest

from hlobridge import RunMetadata, RunOptions
from hlobridge.errors import CheckNumericsError
from hlobridge.frontend.graph_builder import GraphBuilder
from hlobridge.runtime.cluster_launch import ClusterLaunch
from hlobridge.runtime.direct_call import DirectCall
from hlobridge.runtime.session import Session

F32 = np.dtype(np.float32)


def _session(build) -> Session:
    b = GraphBuilder()
    build(b)
    return Session(b.graph(), cache_dir=False, min_cluster_size=1)


def _tanh_and_neg(b):
    x = b.placeholder("x", np.float32, (2, 3))
    y = b.placeholder("y", np.float32, (3,))
    s = b.op("AddV2", [x, y], name="s", T=F32)
    b.op("Tanh", [s], name="z", T=F32)
    b.op("Neg", [s], name="n", T=F32)  # one cluster: both read the sum


@pytest.fixture
def launches(monkeypatch):
    """How many times a launch ran through the plan."""
    count = [0]
    real = ClusterLaunch.run

    def spy(self, *args, **kwargs):
        count[0] += 1
        return real(self, *args, **kwargs)
    monkeypatch.setattr(ClusterLaunch, "run", spy)
    return count


def _plan(sess, fetches, feeds):
    return sess._plan_for(fetches, feeds)[2]


def test_steady_steps_of_one_cluster_are_one_call(launches):
    sess = _session(_tanh_and_neg)
    x, y = np.ones((2, 3), np.float32), np.arange(3, dtype=np.float32)
    for i in range(4):
        z, n = sess.run(["z:0", "n:0"], {"x:0": x * i, "y:0": y})
        np.testing.assert_allclose(z, np.tanh(x * i + y), rtol=1e-6)
        np.testing.assert_array_equal(n, -(x * i + y))
    assert isinstance(_plan(sess, ["z:0", "n:0"], {"x:0": x, "y:0": y}).direct, DirectCall)
    assert launches[0] == 2  # the first run and the one that found the direct call


def test_fetched_values_are_the_users_own():
    sess = _session(_tanh_and_neg)
    feeds = {"x:0": np.ones((2, 3), np.float32), "y:0": np.zeros(3, np.float32)}
    runs = [sess.run(["z:0", "n:0"], feeds) for _ in range(4)]
    last = runs[-1]
    assert all(a.flags.writeable and a.flags.owndata for a in last)
    last[1][...] = 7
    np.testing.assert_array_equal(sess.run(["z:0", "n:0"], feeds)[1], -np.ones((2, 3)))
    assert not np.shares_memory(runs[-2][0], last[0])
    np.testing.assert_array_equal(runs[-2][1], -np.ones((2, 3)))


def test_a_feed_a_constant_and_an_op_fetched_beside_the_call():
    def build(b):
        _tanh_and_neg(b)
        b.const("c", np.arange(4, dtype=np.int32))
    sess = _session(build)
    x, y = np.full((2, 3), 0.5, np.float32), np.ones(3, np.float32)
    fetches = {"z": "z:0", "x": "x:0", "c": "c:0", "op": "n", "pair": ("n:0", ["z:0"])}
    first = sess.run(fetches, {"x:0": x, "y:0": y})
    for _ in range(3):
        got = sess.run(fetches, {"x:0": x, "y:0": y})
    assert isinstance(_plan(sess, fetches, {"x:0": x, "y:0": y}).direct, DirectCall)
    assert got.keys() == first.keys() and got["op"] is None and first["op"] is None
    for key in ("z", "x", "c"):
        np.testing.assert_array_equal(got[key], first[key])
        assert got[key].dtype == first[key].dtype
    np.testing.assert_array_equal(got["pair"][0], -(x + y))
    assert isinstance(got["pair"], tuple) and isinstance(got["pair"][1], list)


def test_a_traced_step_still_runs_the_plan(launches):
    sess = _session(_tanh_and_neg)
    feeds = {"x:0": np.ones((2, 3), np.float32), "y:0": np.ones(3, np.float32)}
    for _ in range(3):
        plain = sess.run("z:0", feeds)
    before = launches[0]
    md = RunMetadata()
    traced = sess.run("z:0", feeds, options=RunOptions(trace=True), run_metadata=md)
    np.testing.assert_array_equal(traced, plain)
    assert launches[0] == before + 1
    assert "cluster" in {e["cat"] for e in md.events if e["ph"] == "X"}


def test_an_input_read_by_value_from_a_feed_keeps_the_plan():
    def build(b):
        x = b.placeholder("x", np.float32, (6,))
        shape = b.placeholder("shape", np.int32, (2,))
        b.op("Reshape", [b.op("Exp", [x], T=F32), shape], name="r", T=F32, Tshape=np.dtype(np.int32))
    sess = _session(build)
    x = np.arange(6, dtype=np.float32)
    for shape in ([2, 3], [3, 2], [2, 3], [6, 1]):
        got = sess.run("r:0", {"x:0": x, "shape:0": np.array(shape, np.int32)})
        np.testing.assert_allclose(got, np.exp(x).reshape(shape), rtol=1e-6)
    assert _plan(sess, "r:0", {"x:0": x, "shape:0": np.array([2, 3], np.int32)}).direct is False


def test_variables_and_host_kernels_keep_the_plan():
    def build(b):
        x = b.placeholder("x", np.float32, (4,))
        b.op("Where", [b.op("Greater", [b.op("Exp", [x], T=F32), b.const("one", np.float32(1))], T=F32)],
             name="where", T=np.dtype(np.bool_))
    sess = _session(build)
    x = np.array([-1.0, 0.0, 1.0, 2.0], np.float32)
    for _ in range(3):
        np.testing.assert_array_equal(sess.run("where:0", {"x:0": x}), [[2], [3]])
    assert _plan(sess, "where:0", {"x:0": x}).direct is False  # Where runs on its kernel


def test_a_failing_check_raises_the_same_error_on_the_direct_call():
    def build(b):
        x = b.placeholder("x", np.float32, (3,))
        b.op("CheckNumerics", [b.op("Log", [x], T=F32)], name="checked", T=F32, message="log of x")
    sess = _session(build)
    for _ in range(3):
        np.testing.assert_allclose(sess.run("checked:0", {"x:0": np.ones(3, np.float32)}), 0)
    assert isinstance(_plan(sess, "checked:0", {"x:0": np.ones(3, np.float32)}).direct, DirectCall)
    with pytest.raises(CheckNumericsError, match="log of x") as direct:
        sess.run("checked:0", {"x:0": np.array([1, -1, 1], np.float32)})
    with pytest.raises(CheckNumericsError) as planned:
        _session(build).run("checked:0", {"x:0": np.array([1, -1, 1], np.float32)})
    assert str(direct.value) == str(planned.value)
