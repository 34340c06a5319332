"""Plans are lists of units with one `run(values, env)`: the Session runs them in order and
knows nothing of their kinds; a traced run wraps them."""

import numpy as np

from hlobridge import RunMetadata, RunOptions
from hlobridge.frontend.graph import TensorRef
from hlobridge.frontend.graph_builder import GraphBuilder
from hlobridge.runtime.cluster_launch import ClusterLaunch
from hlobridge.runtime.interpreter import NodeStep
from hlobridge.runtime.plan import Plan, RunEnv
from hlobridge.runtime.session import Session


class _Double:
    """A unit of any kind: reads x:0, writes y:0."""

    def __init__(self, log):
        self.log = log

    def run(self, values, env):
        self.log.append(env)
        values[TensorRef("y")] = values[TensorRef("x")] * 2


def test_execute_runs_every_unit_with_the_env_and_returns_fetches_as_numpy():
    log = []
    env = RunEnv(variables=None, functions=None)
    plan = Plan([_Double(log)], {}, {}, [TensorRef("y"), None], clustering=None)
    out = plan.execute({TensorRef("x"): np.arange(3.0)}, env)
    assert log == [env]
    np.testing.assert_array_equal(out[TensorRef("y")], [0.0, 2.0, 4.0])


def _session():
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (4,))
    y = b.op("Exp", [b.op("Neg", [x], T=np.dtype(np.float32))], T=np.dtype(np.float32))
    b.op("Where", [b.op("Greater", [y, b.const("one", np.float32(1))], T=np.dtype(np.float32))],
         name="where", T=np.dtype(np.bool_))
    return Session(b.graph(), jit="auto", min_cluster_size=1, cache_dir=False)


def test_a_sessions_plan_holds_launches_and_node_steps_in_dependency_order():
    sess = _session()
    units = sess._plan_for(["where:0"], {"x:0": np.ones(4, np.float32)})[2].units
    kinds = [type(u) for u in units]
    assert kinds == [ClusterLaunch, NodeStep]  # Where has data-dependent shape: a kernel
    assert [s.name for s in units[0].members] == list(units[0].nodes)


def test_a_traced_run_gives_the_same_values_as_a_plain_one():
    sess = _session()
    x = np.array([-1.0, 0.0, 1.0, 2.0], np.float32)
    md = RunMetadata()
    traced = sess.run("where:0", {"x:0": x}, options=RunOptions(trace=True), run_metadata=md)
    np.testing.assert_array_equal(traced, sess.run("where:0", {"x:0": x}))
    assert {e["cat"] for e in md.events if e["ph"] == "X"} >= {"cluster", "kernel", "run"}
