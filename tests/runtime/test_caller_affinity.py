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
    seen = _affinity_during_calls(monkeypatch, Session(_graph(), cache_dir=False, min_cluster_size=1), 4)
    workers = caller_affinity.last_worker_cpus()
    if workers is None:  # one CPU, or workers left unpinned: nothing to arrange
        assert seen == [own] * 4
    else:  # the first call finds them (a second, if they were still pinning themselves)
        assert workers < own and seen[2:] == [workers, workers]
        assert caller_affinity._Pool.cpus == workers
    assert frozenset(os.sched_getaffinity(0)) == own


def test_workers_still_pinning_themselves_are_looked_at_again(monkeypatch):
    """A worker starts on its maker's CPUs and pins itself when it first runs: found on another
    worker's CPU, the caller is not pinned there, and the next pool call looks again."""
    own = frozenset(os.sched_getaffinity(0))
    if len(own) < 2:
        pytest.skip("one CPU: nothing to pin")
    first, last = sorted(own)[:2]
    found = iter([{0: frozenset({first}), 1: frozenset({first})},  # worker 1 not pinned yet
                  {0: frozenset({first}), 1: frozenset({last})}])
    monkeypatch.setattr(caller_affinity, "pool_workers", lambda: next(found))
    monkeypatch.setattr(caller_affinity._Pool, "looks", 0)
    monkeypatch.setattr(caller_affinity._Pool, "cpus", None)
    during = []
    for _ in range(3):
        with caller_affinity.waiting_beside_the_pool("local-task"):
            during.append(frozenset(os.sched_getaffinity(0)))
    assert during == [own, own, frozenset({last})]
    assert caller_affinity._Pool.looks == caller_affinity.MAX_LOOKS  # settled: not looked at again
    assert frozenset(os.sched_getaffinity(0)) == own


def test_settled_workers_are_each_on_cpus_of_their_own():
    assert caller_affinity.settled({0: frozenset({0}), 1: frozenset({1})})
    assert not caller_affinity.settled({0: frozenset({0}), 1: frozenset({0})})
    assert not caller_affinity.settled({0: frozenset({0, 1}), 1: frozenset({0, 1})})  # unpinned
    assert not caller_affinity.settled({})


def test_the_flag_and_the_calling_thread_executor_leave_the_caller_alone(monkeypatch, flag_values):
    own = frozenset(os.sched_getaffinity(0))
    flag_values("--small-cluster-flops=0 --no-pin-waiting-thread")
    assert _affinity_during_calls(monkeypatch, Session(_graph(), cache_dir=False, min_cluster_size=1), 2) == [own] * 2
    flag_values("")  # the default: this cluster is small, it runs on the calling thread
    assert _affinity_during_calls(monkeypatch, Session(_graph(), cache_dir=False, min_cluster_size=1), 2) == [own] * 2
