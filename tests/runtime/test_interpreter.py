"""The reference-kernel interpreter: node steps with TF's deadness, and function bodies run by
FunctionRunner (the kernels of If/While/Case reach them through ctx.functions)."""

import numpy as np
import pytest

from hlobridge import HlobridgeError
from hlobridge.frontend.functions import library_of
from hlobridge.frontend.graph import TensorRef
from hlobridge.frontend.graph_builder import GraphBuilder
from hlobridge.frontend.load import load_graph
from hlobridge.ops import registry
from hlobridge.ops.kinds import DEAD
from hlobridge.ops.control.state import VariableStore
from hlobridge.runtime.interpreter import FunctionRunner, NodeStep, dead_marker, run_step
from hlobridge.spec import TensorSpec

F32 = np.dtype(np.float32)


def _step(graph, name, deadness=True):
    node = graph.nodes[name]
    return NodeStep(name, node, registry.lookup(node.op), [TensorSpec(F32, ())],
                    [TensorSpec(F32, ())] * len(node.inputs), deadness)


def test_a_dead_input_makes_the_node_dead_without_running_it():
    b = GraphBuilder()
    b.op("Neg", [b.placeholder("x", np.float32, ())], name="neg", T=F32)
    graph = b.graph()
    values = {TensorRef("x"): DEAD}
    run_step(_step(graph, "neg"), values, VariableStore())
    assert values[TensorRef("neg")] is DEAD and dead_marker("neg") in values


def test_a_kernel_failing_on_real_data_names_its_node():
    b = GraphBuilder()
    b.op("Neg", [b.placeholder("x", np.float32, ())], name="neg", T=F32)
    graph = b.graph()
    with pytest.raises(HlobridgeError, match=r"node 'neg' \(Neg\) failed: "):
        run_step(_step(graph, "neg"), {TensorRef("x"): object()}, VariableStore())


def test_function_runner_runs_and_infers_a_library_function(shared_graphs):
    graph = load_graph(shared_graphs / "control_flow_v1" / "graph.pbtxt")
    library = library_of(graph)
    name = next(n for n in library._graphs if n.endswith("_body"))
    fn = library.get(name)
    runner = FunctionRunner(library, VariableStore())
    specs = [TensorSpec(np.dtype(n.attrs["dtype"]), ()) for n in (fn.graph.nodes[a] for a in fn.args)]
    assert len(runner.infer(name, specs)) == len(fn.rets)
