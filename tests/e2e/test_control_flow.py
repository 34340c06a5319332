"""Function libraries and control flow: calls inlined, If/Case/While run on their kernels
and compile to stablehlo.case/while, Assert stops a run, v1 loops are functionalized.

The shared corpus' control_flow_v1 and tf2_function_graph are TensorFlow's graphs and
numbers; the small graphs here are built with GraphBuilder in the shape TensorFlow writes
(FunctionDef bodies naming tensors "node:output:0").
"""

import numpy as np
import pytest

import hlobridge
from hlobridge.compile import driver as compiler
from hlobridge import flags
from hlobridge.errors import AssertionFailedError, GraphError, ResourceLimitError
from hlobridge.frontend.graph_builder import GraphBuilder

from tests.corpus import Case, assert_matches

F32, I32 = np.float32, np.int32


def _check_case(case: Case, jit: str) -> hlobridge.Session:
    sess = hlobridge.Session(case.graph_path, jit=jit, cache_dir=False)
    for run in case.meta["runs"]:
        feeds = {name: case.array(key) for name, key in run["feeds"].items()}
        got = sess.run(list(run["expected"]), feeds)
        for (name, key), value in zip(run["expected"].items(), got):
            assert_matches(value, case.array(key), case.tolerance, f"{run['name']} {name}")
    return sess


@pytest.mark.parametrize("jit", ["off", "auto"])
def test_tf2_function_graph(shared_graphs, jit):
    case = Case.load(shared_graphs / "tf2_function_graph")
    sess = _check_case(case, jit)
    if jit == "auto":
        clustering = sess.clustering(["Identity:0", "Identity_1:0"], {"x:0": np.zeros((5, 8), F32)})
        assert clustering.reasons["StatefulPartitionedCall/Assert/AssertGuard"] == "uncompilable_body"
        assert len(clustering.clusters) == 2
        assert "PartitionedCall/MatMul" in clustering.cluster_of  # inlined bodies compile


def test_failed_assert_in_a_function_stops_the_run(shared_graphs):
    case = Case.load(shared_graphs / "tf2_function_graph")
    sess = hlobridge.Session(case.graph_path, cache_dir=False)
    x = np.ones((2, 8), F32)
    sess.run("Identity:0", {"x:0": x})
    x[1, 3] = np.inf
    with pytest.raises(AssertionFailedError, match=r"assertion failed: \[inf\]") as err:
        sess.run("Identity:0", {"x:0": x})
    assert "in node 'StatefulPartitionedCall/Assert/AssertGuard' (If)" in str(err.value)


@pytest.mark.parametrize("jit", ["off", "auto"])
def test_control_flow_v1(shared_graphs, jit):
    sess = _check_case(Case.load(shared_graphs / "control_flow_v1"), jit)
    graph = sess.graph
    assert graph.nodes["sum_loop/While"].op == "While"  # the frame, functionalized
    assert graph.nodes["sum_loop/Exit_1"].op == "Identity"
    assert graph.nodes["branch/If"].op == "If"  # the tf.cond, functionalized (its Assert guard too)
    assert graph.nodes["branch/Merge"].op == "Identity"
    assert not any(n.op in ("Switch", "Merge") for n in graph.nodes.values())
    if jit == "auto":
        clustering = sess.clustering(["result:0", "total:0"], {"x:0": np.ones(3, F32), "n:0": np.int32(2)})
        assert "sum_loop/While" in clustering.cluster_of  # the loop compiles: a stablehlo.while
        assert clustering.reasons["branch/If"] == "uncompilable_body"  # its Assert runs on the host
    x = np.array([3e38, 1], F32)  # the sum overflows: the taken branch's assertion fails
    with pytest.raises(AssertionFailedError, match="assertion failed"):
        sess.run("result:0", {"x:0": x, "n:0": np.int32(5)})


def test_v1_cond_that_is_not_functionalized_runs_with_deadness():
    """A branch value used outside its cond keeps the Switch/Merge form: deadness decides."""
    b = GraphBuilder()
    x = b.placeholder("x", F32, [2])
    p = b.placeholder("p", np.bool_, [])
    f, t = b.op("Switch", [x, p], name="sw", num_outputs=2, T=np.dtype(F32))
    neg = b.op("Neg", [f], name="neg", T=np.dtype(F32))
    dbl = b.op("AddV2", [t, t], name="dbl", T=np.dtype(F32))
    b.op("Merge", [neg, dbl], name="merge", num_outputs=2, T=np.dtype(F32), N=2)
    b.op("Identity", [dbl], name="leak", T=np.dtype(F32))  # read outside the cond
    graph = b.graph()
    assert graph.nodes["merge"].op == "Merge"
    for jit in ("off", "auto"):
        sess = hlobridge.Session(graph, jit=jit, min_cluster_size=1, cache_dir=False)
        xv = np.array([1, -2], F32)
        np.testing.assert_array_equal(sess.run("merge:0", {"x:0": xv, "p:0": True}), 2 * xv)
        np.testing.assert_array_equal(sess.run("merge:0", {"x:0": xv, "p:0": False}), -xv)
        assert sess.run("merge:1", {"x:0": xv, "p:0": False}) == 0
        assert not sess.clustering("merge:0", {"x:0": xv, "p:0": True}).clusters  # may be dead


# -- small graphs ----------------------------------------------------------------------------------

def _loop_graph(stateless: bool = True):
    """i, acc = 0, x; while i < n: acc = acc * 2 + i; i += 1."""
    b = GraphBuilder()
    x = b.placeholder("x", F32, [None])
    n = b.placeholder("n", I32, [])

    def cond(f, i, acc, limit):
        return [(f.op("Less", [i, limit], T=np.dtype(I32)), np.bool_)]

    def body(f, i, acc, limit):
        one = f.const("one", 1, I32)
        two = f.const("two", 2.0, F32)
        step = f.op("AddV2", [f.op("Mul", [acc, two], T=np.dtype(F32)),
                              f.op("Cast", [i], SrcT=np.dtype(I32), DstT=np.dtype(F32), Truncate=False)],
                    T=np.dtype(F32))
        return [(f.op("AddV2", [i, one], T=np.dtype(I32)), I32), (step, F32), (limit, I32)]

    args = {"i": I32, "acc": F32, "limit": I32}
    c = b.function("loop_cond", args, cond)
    d = b.function("loop_body", args, body)
    zero = b.const("zero", 0, I32)
    outs = b.op("StatelessWhile" if stateless else "While", [zero, x, n], name="loop", num_outputs=3,
                T=[np.dtype(I32), np.dtype(F32), np.dtype(I32)], cond=c, body=d, parallel_iterations=10)
    b.op("Identity", [outs[1]], name="acc", T=np.dtype(F32))
    return b.graph()


def _loop_reference(x, n):
    acc = x.copy()
    for i in range(n):
        acc = acc * 2 + i
    return acc


@pytest.mark.parametrize("jit", ["off", "auto"])
@pytest.mark.parametrize("n", [0, 1, 5])
@pytest.mark.parametrize("stateless", [True, False])
def test_while_loop(jit, n, stateless):
    sess = hlobridge.Session(_loop_graph(stateless), jit=jit, cache_dir=False)
    x = np.arange(3, dtype=F32)
    np.testing.assert_array_equal(sess.run("acc:0", {"x:0": x, "n:0": np.int32(n)}), _loop_reference(x, n))


def test_while_lowers_to_stablehlo_while():
    lowered = compiler.lower_graph(_loop_graph(), input_shapes={"x": (3,)}, outputs=["acc:0"])
    text = lowered.text()
    assert "stablehlo.while" in text
    model = compiler.compile_graph(_loop_graph(), input_shapes={"x": (3,)}, outputs=["acc:0"]).load("cpu")
    x = np.arange(3, dtype=F32)
    np.testing.assert_array_equal(model.run({"x:0": x, "n:0": np.int32(4)})["acc:0"], _loop_reference(x, 4))


def _doubling_graph():
    """while acc < bound: acc = acc * 2 + 1; a loop with no counter (float), so it counts its
    own iterations against the limit."""
    b = GraphBuilder()
    bound = b.placeholder("bound", F32, [])

    def cond(f, acc, limit):
        return [(f.op("Less", [acc, limit], T=np.dtype(F32)), np.bool_)]

    def body(f, acc, limit):
        doubled = f.op("Mul", [acc, f.const("two", 2.0, F32)], T=np.dtype(F32))
        return [(f.op("AddV2", [doubled, f.const("one", 1.0, F32)], T=np.dtype(F32)), F32), (limit, F32)]

    args = {"acc": F32, "limit": F32}
    outs = b.op("StatelessWhile", [b.const("zero", 0.0, F32), bound], name="loop", num_outputs=2,
                T=[np.dtype(F32)] * 2, cond=b.function("dcond", args, cond), body=b.function("dbody", args, body))
    b.op("Identity", [outs[0]], name="acc", T=np.dtype(F32))
    return b.graph()


def _runners(graph, feeds_shapes):
    """Ways a user runs a loop: reference kernels, the JIT, a compiled module on both CPU drivers."""
    yield "off", hlobridge.Session(graph, jit="off", cache_dir=False).run
    yield "auto", hlobridge.Session(graph, jit="auto", min_cluster_size=1, cache_dir=False).run
    compiled = compiler.compile_graph(graph, input_shapes=feeds_shapes, outputs=["acc:0"])
    for device in ("cpu", "cpu-task"):
        model = compiled.load(device)
        yield device, lambda fetch, feeds: model.run(feeds)[fetch]


@pytest.mark.parametrize("graph, shapes, feeds, ok, over", [
    # counted: i from 0 to n, checked before the loop, up to the largest int32 (no overflow)
    (_loop_graph, {"x": (3,)}, lambda n: {"x:0": np.zeros(3, F32), "n:0": np.int32(n)}, 10, (11, 2 ** 31 - 1)),
    (_doubling_graph, {}, lambda n: {"bound:0": np.float32(n)}, 1023, (1024,)),  # 10 and 11 iterations
], ids=["counted", "uncounted"])
def test_a_loop_over_the_iteration_limit_is_an_error_naming_the_node(graph, shapes, feeds, ok, over, monkeypatch):
    monkeypatch.setenv("HLOBRIDGE_FLAGS", "--max-loop-iterations=10")
    flags.from_environment.cache_clear()
    try:
        for how, run in _runners(graph(), shapes):
            run("acc:0", feeds(ok))
            for n in over:
                with pytest.raises(ResourceLimitError) as err:
                    run("acc:0", feeds(n))
                assert str(err.value).startswith("node 'loop' (StatelessWhile): the loop runs more than 10 "
                                                 "iterations, the limit (raise it with HLOBRIDGE_FLAGS"), how
                assert "\n" not in str(err.value), how
    finally:
        flags.from_environment.cache_clear()


def _branch_graph(op: str):
    """If/Case on an int selector k: branch j computes x * (j + 1) + k."""
    b = GraphBuilder()
    x = b.placeholder("x", F32, [None])
    k = b.placeholder("k", I32, [])

    def branch(j):
        def build(f, v, sel):
            scaled = f.op("Mul", [v, f.const("s", float(j + 1), F32)], T=np.dtype(F32))
            shift = f.op("Cast", [sel], SrcT=np.dtype(I32), DstT=np.dtype(F32), Truncate=False)
            return [(f.op("AddV2", [scaled, shift], T=np.dtype(F32)), F32)]
        return b.function(f"branch_{j}", {"v": F32, "sel": I32}, build)

    common = dict(Tin=[np.dtype(F32), np.dtype(I32)], Tout=[np.dtype(F32)], output_shapes=[])
    if op.endswith("If"):
        pred = b.op("Greater", [k, b.const("zero", 0, I32)], T=np.dtype(I32))
        out = b.op(op, [pred, x, k], name="cond", then_branch=branch(0), else_branch=branch(1),
                   Tcond=np.dtype(np.bool_), **common)
    else:
        out = b.op(op, [k, x, k], name="cond", branches=[branch(j) for j in range(3)], **common)
    b.op("Identity", [out], name="y", T=np.dtype(F32))
    return b.graph()


def _branch_reference(op, x, k):
    j = (0 if k > 0 else 1) if op.endswith("If") else (k if 0 <= k < 3 else 2)
    return x * (j + 1) + k


@pytest.mark.parametrize("jit", ["off", "auto"])
@pytest.mark.parametrize("op", ["If", "StatelessIf", "Case", "StatelessCase"])
def test_conditionals(op, jit):
    sess = hlobridge.Session(_branch_graph(op), jit=jit, min_cluster_size=1, cache_dir=False)
    x = np.array([1.0, -2.0, 3.0], F32)
    for k in (-1, 0, 1, 2, 7):  # Case: out of range runs the last branch
        np.testing.assert_array_equal(sess.run("y:0", {"x:0": x, "k:0": np.int32(k)}),
                                      _branch_reference(op, x, k), err_msg=f"k={k}")
    if jit == "auto":
        assert "cond" in sess.clustering("y:0", {"x:0": x, "k:0": np.int32(0)}).cluster_of


def test_conditional_lowers_to_stablehlo_case():
    text = compiler.lower_graph(_branch_graph("Case"), input_shapes={"x": (3,)}, outputs=["y:0"]).text()
    assert text.count("stablehlo.case") == 1


def test_call_to_a_missing_function_names_it():
    b = GraphBuilder()
    x = b.placeholder("x", F32, [2])
    b.op("PartitionedCall", [x], name="call", Tin=[np.dtype(F32)], Tout=[np.dtype(F32)],
         f=hlobridge.frontend.graph.FuncAttr("nowhere", {}))
    with pytest.raises(GraphError, match="function 'nowhere' is not in the graph's function library"):
        b.graph()


def test_function_call_with_control_inputs_and_direct_call_op():
    """A library function called by name as an op, with a control input held back."""
    b = GraphBuilder()
    x = b.placeholder("x", F32, [2])
    b.function("double", {"v": F32},
               lambda f, v: [(f.op("Mul", [v, f.const("two", 2.0, F32)], T=np.dtype(F32)), F32)])
    gate = b.op("NoOp", name="gate")
    y = b.op("double", [x], name="call", control_inputs=[gate])
    b.op("Identity", [y], name="y", T=np.dtype(F32))
    graph = b.graph()
    assert graph.nodes["call/two"].control_inputs == ["gate"]
    out = hlobridge.Session(graph, jit="off").run("y:0", {"x:0": np.array([1, 2], F32)})
    np.testing.assert_array_equal(out, [2, 4])
