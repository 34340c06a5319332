"""A call into IREE's thread pool waits on the CPU of the pool's last worker
(runtime/caller_affinity.py), and the caller gets its own CPUs back afterwards."""

import os

import numpy as np
import pytest

from hlobridge.frontend.graph_builder import GraphBuilder
from hlobridge.runtime import caller_affinity, cluster_launch
from hlobridge.runtime.session import Session

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no CPU affinity calls here")


def _graph():
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (8,))
    b.op("Tanh", [b.op("Mul", [x, x], T=np.float32)], name="y", T=np.float32)
    return b.graph()


def _affinity_during_calls(monkeypatch, sess: Session, calls: int) -> list:
    seen = []
    invoke = cluster_launch.invoke_or_raise

    def spy(*args):
        seen.append(frozenset(os.sched_getaffinity(0)))
        return invoke(*args)

    monkeypatch.setattr(cluster_launch, "invoke_or_raise", spy)
    for _ in range(calls):
        np.testing.assert_allclose(sess.run("y:0", {"x:0": np.ones(8, np.float32)}), np.tanh(np.ones(8)), rtol=1e-6)
    return seen


def test_a_pool_call_waits_beside_the_last_worker_and_gives_the_cpus_back(monkeypatch, flag_values):
    flag_values("--small-cluster-flops=0")  # this tiny cluster on the pool
    own = frozenset(os.sched_getaffinity(0))
    seen = _affinity_during_calls(monkeypatch, Session(_graph(), cache_dir=False, min_cluster_size=1), 3)
    workers = caller_affinity.last_worker_cpus()
    if workers is None:  # one CPU, or workers left unpinned: nothing to arrange
        assert seen == [own] * 3
    else:
        assert workers < own and seen[1:] == [workers, workers]
        assert caller_affinity._Pool.cpus == workers
    assert frozenset(os.sched_getaffinity(0)) == own


def test_the_flag_and_the_calling_thread_executor_leave_the_caller_alone(monkeypatch, flag_values):
    own = frozenset(os.sched_getaffinity(0))
    flag_values("--small-cluster-flops=0 --no-pin-waiting-thread")
    assert _affinity_during_calls(monkeypatch, Session(_graph(), cache_dir=False, min_cluster_size=1), 2) == [own] * 2
    flag_values("")  # the default: this cluster is small, it runs on the calling thread
    assert _affinity_during_calls(monkeypatch, Session(_graph(), cache_dir=False, min_cluster_size=1), 2) == [own] * 2
