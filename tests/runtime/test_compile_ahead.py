"""Clusters compiled side by side (runtime/cluster_launch.py `compile_ahead`): before a plan's
first run, the launches whose signatures planning knows start compiling together, each on a
compile thread; the results are those of compiling one at a time, and a cluster that fails
still falls back to its kernels."""

import warnings

import numpy as np
import pytest

from hlobridge.compile.cache import clear_memory_cache
from hlobridge.errors import JitFallbackWarning
from hlobridge.frontend.graph_builder import GraphBuilder
from hlobridge.runtime import cluster_launch
from hlobridge.runtime.session import Session

F32 = np.float32
RNG = np.random.default_rng(11)
WEIGHTS = [RNG.standard_normal((16, 16)).astype(F32) / 4 for _ in range(6)]


def _dense_stack(b, x, weights, prefix):
    for i, w in enumerate(weights):
        x = b.op("Relu", [b.op("MatMul", [x, b.const(f"{prefix}w{i}", w)], name=f"{prefix}mm{i}", T=F32)],
                 name=f"{prefix}relu{i}", T=F32)
    return x


def two_cluster_graph(dynamic: bool = False):
    """Dense layers, a round trip through strings (host kernels), more dense layers: two
    clusters with the host ops between them. With `dynamic`, the second stack also adds the sum
    of Unique's values of fed ids, whose length planning does not know (as in a sparse
    embedding gradient)."""
    b = GraphBuilder()
    x = b.placeholder("x", F32, (4, 16))
    a = _dense_stack(b, x, WEIGHTS[:3], "a")
    text = b.op("AsString", [a], name="text", T=F32)
    back = b.op("StringToNumber", [text], name="back", out_type=F32)
    if dynamic:
        unique = b.op("Unique", [b.placeholder("ids", np.int32, (8,))], name="unique", T=np.int32, out_idx=np.int32)
        total = b.op("Sum", [unique, b.const("axis", np.array([0], np.int32))], name="total", T=np.int32)
        back = b.op("AddV2", [back, b.op("Cast", [total], name="ftotal", SrcT=np.int32, DstT=F32)], name="plus", T=F32)
    _dense_stack(b, back, WEIGHTS[3:], "b")
    return b.graph()


def _reference(x, **feeds):
    """The same run on reference kernels."""
    return Session(two_cluster_graph(bool(feeds)), jit="off").run("brelu2:0", {"x:0": x, **feeds})


@pytest.fixture(autouse=True)
def _nothing_compiled_yet():
    """Every test compiles its clusters: none is in this process's memory cache yet."""
    clear_memory_cache()


def _launches(sess):
    return [u for plan in sess._plans.values() for u in plan.units if isinstance(u, cluster_launch.ClusterLaunch)]


def test_both_clusters_compile_before_the_first_runs():
    x = RNG.standard_normal((4, 16)).astype(F32)
    sess = Session(two_cluster_graph(), cache_dir=False)
    out = sess.run("brelu2:0", {"x:0": x})
    np.testing.assert_allclose(out, _reference(x), rtol=1e-5, atol=1e-5)
    first, second = sess.compile_events
    assert (first.source, second.source) == ("compiled", "compiled")
    assert second.started < first.started + first.seconds  # began before the first was done
    assert all(not launch.ahead for launch in _launches(sess))
    np.testing.assert_allclose(sess.run("brelu2:0", {"x:0": x}), out)


def test_unknown_signature_compiles_when_it_runs():
    """The second cluster reads Unique's values: only the first cluster's signature is known
    at planning, and one cluster alone is not compiled ahead."""
    x = RNG.standard_normal((4, 16)).astype(F32)
    feeds = {"x:0": x, "ids:0": np.array([3, 1, 3, 2, 1, 1, 5, 3], np.int32)}
    sess = Session(two_cluster_graph(dynamic=True), cache_dir=False)
    _, resolved, plan = sess._plan_for("brelu2:0", feeds)
    launches = [u for u in plan.units if isinstance(u, cluster_launch.ClusterLaunch)]
    assert [launch.planned_args({**plan.constants, **resolved}) is not None for launch in launches] == [True, False]
    out = sess.run("brelu2:0", feeds)
    np.testing.assert_allclose(out, _reference(x, **{"ids:0": feeds["ids:0"]}), rtol=1e-5, atol=1e-5)
    first, second = sess.compile_events
    assert second.started >= first.started + first.seconds


def test_a_failed_ahead_compile_falls_back(monkeypatch):
    """IREE rejecting one cluster compiled ahead: that cluster runs on its kernels, with the
    usual warning, and the answer is the same."""
    x = RNG.standard_normal((4, 16)).astype(F32)
    sess = Session(two_cluster_graph(), cache_dir=False)
    plan = sess._plan_for("brelu2:0", {"x:0": x})[2]
    second = [u for u in plan.units if isinstance(u, cluster_launch.ClusterLaunch)][1]
    monkeypatch.setattr(second, "lower", lambda *a, **k: (_ for _ in ()).throw(
        cluster_launch.HlobridgeError("no lowering today")))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = sess.run("brelu2:0", {"x:0": x})
    assert any(issubclass(w.category, JitFallbackWarning) and "no lowering today" in str(w.message) for w in caught)
    np.testing.assert_allclose(out, _reference(x), rtol=1e-5, atol=1e-5)
    assert [e.source for e in sess.compile_events] == ["compiled", "fallback"]


@pytest.mark.parametrize("cached", [False, True])
def test_cache_hits_need_no_compile_thread(tmp_path, cached):
    x = RNG.standard_normal((4, 16)).astype(F32)
    if cached:
        Session(two_cluster_graph(), cache_dir=tmp_path).run("brelu2:0", {"x:0": x})
    sess = Session(two_cluster_graph(), cache_dir=tmp_path)
    np.testing.assert_allclose(sess.run("brelu2:0", {"x:0": x}), _reference(x), rtol=1e-5, atol=1e-5)
    assert {e.source for e in sess.compile_events} == ({"memory"} if cached else {"compiled"})
    assert (sess._jit_state._compile_threads is None) == cached
