"""Small clusters on the calling thread (runtime/cluster_launch.py `executor_device`): on
"cpu-task", a cluster whose estimated work (passes/ir/work_estimate.py) is at most
HLOBRIDGE_FLAGS --small-cluster-flops runs on IREE's local-sync, the rest on the thread pool;
a variable written by one and read by the other keeps its value."""

import numpy as np
import pytest

from hlobridge import flags
from hlobridge.frontend.graph_builder import GraphBuilder, Shape
from hlobridge.runtime.session import Session

N = 64
W = np.random.default_rng(3).standard_normal((N, N)).astype(np.float32)


def step_graph():
    """v += 2x (a small cluster: 64 elements), then y = sum(reshape(v, [8, 8]) broadcast to
    [64, 8, 8] . W-ish) (a matmul of 2 * 64^3 = 524,288 flops): two runs, two clusters."""
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (N,))
    v = b.op("VarHandleOp", name="v", dtype=np.float32, shape=Shape((N,)), shared_name="v", container="")
    b.op("AssignVariableOp", [v, b.const("zeros", np.zeros(N, np.float32))], name="init", dtype=np.float32)
    b.op("AssignAddVariableOp", [v, b.op("Mul", [x, b.const("two", np.float32(2))], T=np.float32)],
         name="update", dtype=np.float32)
    read = b.op("ReadVariableOp", [v], name="read", dtype=np.float32)
    rows = b.op("Tile", [b.op("Reshape", [read, b.const("row", np.array([1, N], np.int32))], T=np.float32),
                         b.const("times", np.array([N, 1], np.int32))], T=np.float32)
    product = b.op("MatMul", [rows, b.const("w", W)], T=np.float32)
    b.op("Sum", [product, b.const("axes", np.array([0, 1], np.int32))], name="y", T=np.float32)
    return b.graph()


def executors(sess: Session) -> dict:
    """The device each compiled cluster runs on, by the run it serves ("update" or "y")."""
    found = {}
    for plan in sess._plans.values():
        for unit in plan.units:
            for exe in getattr(unit, "executables", {}).values():
                found["update" if "update" in unit.nodes else "y"] = exe.device
    return found


@pytest.fixture
def small_cluster_flops(monkeypatch):
    def set_to(value: int):
        monkeypatch.setenv(flags.ENV_VAR, f"--small-cluster-flops={value}")
        flags.from_environment.cache_clear()
    yield set_to
    monkeypatch.undo()
    flags.from_environment.cache_clear()


def expected_y(step: int) -> np.float32:
    v = 2 * np.arange(N, dtype=np.float64) * step
    return np.float32(np.tile(v[None], (N, 1)) @ W.astype(np.float64)).sum()


def _train(sess: Session, steps: int) -> list:
    sess.run("init")
    x = np.arange(N, dtype=np.float32)
    ys = []
    for _ in range(steps):
        sess.run("update", {"x:0": x})
        ys.append(sess.run("y:0"))
    return ys


def test_by_default_small_clusters_run_on_the_calling_thread():
    sess = Session(step_graph(), cache_dir=False, min_cluster_size=1)
    ys = _train(sess, 2)
    assert executors(sess) == {"update": "cpu", "y": "cpu"}  # both well under 3e7 flops
    np.testing.assert_allclose(ys, [expected_y(1), expected_y(2)], rtol=1e-5)


def test_a_variable_moves_between_the_calling_thread_and_the_pool(small_cluster_flops):
    small_cluster_flops(100_000)  # the update (64 elements) under it, the matmul (524,288 flops) over
    sess = Session(step_graph(), cache_dir=False, min_cluster_size=1)
    ys = _train(sess, 3)
    assert executors(sess) == {"update": "cpu", "y": "cpu-task"}
    np.testing.assert_allclose(ys, [expected_y(s) for s in (1, 2, 3)], rtol=1e-5)


def test_zero_puts_every_cluster_on_the_pool(small_cluster_flops):
    small_cluster_flops(0)
    sess = Session(step_graph(), cache_dir=False, min_cluster_size=1)
    ys = _train(sess, 2)
    assert executors(sess) == {"update": "cpu-task", "y": "cpu-task"}
    np.testing.assert_allclose(ys, [expected_y(1), expected_y(2)], rtol=1e-5)


def test_only_cpu_task_chooses():
    from hlobridge.runtime.cluster_launch import executor_device
    assert executor_device("cpu-task", 10) == "cpu"
    assert executor_device("cpu-task", 10**9) == "cpu-task"
    assert executor_device("cpu-task", None) == "cpu-task"  # no estimate (a dynamic shape): the pool
    assert [executor_device(d, 10) for d in ("cpu", "cuda")] == ["cpu", "cuda"]


def test_the_flag_takes_counts_in_any_spelling():
    assert flags.parse("--small-cluster-flops=2e7").small_cluster_flops == 20_000_000
    assert flags.parse("--small-cluster-flops=1_000").small_cluster_flops == 1000
    assert flags.parse("").small_cluster_flops == 30_000_000
    with pytest.raises(Exception, match="small-cluster-flops"):
        flags.parse("--small-cluster-flops=-1")
