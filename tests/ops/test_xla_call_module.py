"""XlaCallModule (ops/xla/call_module.py, ops/xla/stablehlo_artifact.py): JAX's StableHLO modules
inlined into clusters and run on their kernel.

The modules come from the conformance cases jax_* (tools/conformance_cases/jax_exports.py,
written by jax2tf), whose whole graphs tests/e2e/test_conformance.py checks against
TensorFlow's and JAX's numbers. Here: the same modules in graphs of our own (two calls in one
cluster, a call inside a loop of ours), the polymorphic batch resolved per fed shape, and every
refusal as one line naming the node."""

import json
import warnings

import numpy as np
import pytest

import hlobridge
from hlobridge.compile.cache import clear_memory_cache
from hlobridge.errors import HlobridgeError, JitFallbackWarning
from hlobridge.frontend.graph_builder import GraphBuilder, Shape
from hlobridge.frontend.load import load_graph
from hlobridge.ops.xla import stablehlo_artifact
from tests.conftest import TESTS

COVERED_OPS = ("XlaCallModule",)
CONFORMANCE = TESTS / "conformance"
F32 = np.float32


@pytest.fixture(autouse=True)
def _fresh_memory_cache():
    """The tests below count what compiled; a binary another test of this worker built would
    come back from the process's memory cache instead ("memory" where they expect "compiled")."""
    clear_memory_cache()


def _call_node(case: str):
    graph = load_graph(CONFORMANCE / case / "graph.pbtxt")
    return next(n for n in graph.nodes.values() if n.op == "XlaCallModule")


def _fetch(case: str) -> str:
    """The case's (first) fetch, as tools/make_conformance_corpus.py recorded it."""
    return json.loads((CONFORMANCE / case / "case.json").read_text())["fetches"][0]["name"]


def _attrs(case: str, **changes) -> dict:
    """The case's XlaCallModule attributes, re-encodable by GraphBuilder, with `changes`."""
    attrs = {k: v for k, v in _call_node(case).attrs.items() if not k.startswith("_")}
    attrs["Sout"] = [Shape(s) for s in attrs["Sout"]]
    attrs.update(changes)
    return attrs


def _loops_graph(calls: int = 2, **changes):
    """x [2, 6] through jax_loops' module `calls` times in a row (one input, one output)."""
    b = GraphBuilder()
    y = b.placeholder("x", F32, (2, 6))
    for i in range(calls):
        y = b.op("XlaCallModule", [y], name=f"call{i}", **_attrs("jax_loops", **changes))
    b.op("Identity", [y], name="y", T=F32)
    return b.graph()


def _run(graph, jit, feeds, fetch="y:0"):
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        sess = hlobridge.Session(graph, jit=jit, cache_dir=False, min_cluster_size=1)
        return sess, sess.run(fetch, feeds)


X = np.linspace(-1, 1, 12, dtype=F32).reshape(2, 6)


def test_two_calls_of_one_module_compile_into_one_cluster():
    """Two copies of the same module in one cluster: the renamed functions cannot clash."""
    graph = _loops_graph(2)
    _, want = _run(graph, "off", {"x:0": X})
    sess, got = _run(graph, "auto", {"x:0": X})
    assert [e.source for e in sess.compile_events] == ["compiled"]
    assert len(sess.clustering("y:0", {"x:0": X}).clusters) == 1
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    _, once = _run(_loops_graph(1), "off", {"x:0": X})
    _, twice = _run(_loops_graph(1), "off", {"x:0": once})
    np.testing.assert_array_equal(want, twice)


def test_the_kernel_matches_the_recorded_jax_outputs():
    case = np.load(CONFORMANCE / "jax_loops" / "data.npz")
    _, got = _run(_loops_graph(1), "off", {"x:0": case["x/feed/x:0"]})
    np.testing.assert_allclose(got, case[f"x/expected/{_fetch('jax_loops')}"], rtol=1e-4, atol=1e-5)


def test_polymorphic_batch_is_resolved_per_fed_shape():
    graph = load_graph(CONFORMANCE / "jax_mlp_poly_batch" / "graph.pbtxt")
    sess = hlobridge.Session(graph, jit="auto", cache_dir=False, min_cluster_size=1)
    for batch in (1, 4, 7):
        x = np.linspace(-2, 2, batch * 8, dtype=F32).reshape(batch, 8)
        y = sess.run(_fetch("jax_mlp_poly_batch"), {"x:0": x})
        assert y.shape == (batch, 4)
        np.testing.assert_allclose(y.sum(axis=1), np.ones(batch), rtol=1e-5)  # a softmax
    assert [e.source for e in sess.compile_events] == ["compiled"] * 3


def test_a_failed_shape_assertion_is_jaxs_message():
    graph = load_graph(CONFORMANCE / "jax_mlp_poly_batch" / "graph.pbtxt")
    with pytest.raises(HlobridgeError, match=r"node 'XlaCallModule' \(XlaCallModule\): Input shapes do not match "
                                             r".*Expected value >= 1 for dimension variable 'b'.*'b' = 0"):
        hlobridge.Session(graph, jit="auto").run(_fetch("jax_mlp_poly_batch"), {"x:0": np.zeros((0, 8), F32)})


def test_specializing_leaves_static_shapes_and_no_assertion():
    text = stablehlo_artifact.deserialize(_call_node("jax_mlp_poly_batch").attrs["module"])
    assert "?x8xf32" in text and "shape_assertion" in text
    params = [((8, 16), F32), ((16,), F32), ((16, 16), F32), ((16,), F32), ((16, 4), F32), ((4,), F32)]
    special = stablehlo_artifact.specialize(text, tuple(params + [((5, 8), F32)]), None)
    assert special.results == (((5, 4), np.dtype(F32)),)
    assert "?" not in special.text and "custom_call" not in special.text and "dynamic_" not in special.text


@pytest.mark.parametrize("changes, message", [
    ({"platforms": ["TPU"]}, r"exported for platform\(s\) \['TPU'\]; hlobridge runs CPU or CUDA modules"),
    ({"module": b"not a module"}, r"IREE could not read the StableHLO module: custom op 'not' is unknown"),
    ({"module": b"ML\xefR\x00garbage"}, r"IREE could not read the StableHLO module: attempting to parse"),
    ({"Sout": [Shape((2, 5))]}, r"result 0: the module returns float32\[2, 6\], Tout/Sout declare float32\[2,5\]"),
    ({"version": 4}, r"XlaCallModule version 4 is not supported \(versions 5..10\)"),
    ({"disabled_checks": ["custom_call:foo"]}, r"disabled_checks \['custom_call:foo'\] are not supported"),
    ({"has_token_input_output": True}, r"takes and returns a token"),
    ({"dim_args_spec": ["0.0"]}, r"dim_args_spec"),
    ({"Tin": [F32, F32]}, r"takes 2 input\(s\) \(args\), has 1"),
])
@pytest.mark.parametrize("jit", ["auto", "off"])
def test_what_it_cannot_run_is_one_line_naming_the_node(changes, message, jit):
    graph = _loops_graph(1, **changes)
    with pytest.raises(HlobridgeError, match=r"node 'call0' \(XlaCallModule\): .*" + message) as info:
        hlobridge.Session(graph, jit=jit, cache_dir=False, min_cluster_size=1).run("y:0", {"x:0": X})
    assert "\n" not in str(info.value)


def test_a_disabled_platform_check_runs_another_platforms_module():
    graph = _loops_graph(1, platforms=["TPU"], disabled_checks=["platform"])
    _, got = _run(graph, "auto", {"x:0": X})
    _, want = _run(_loops_graph(1), "off", {"x:0": X})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_call_in_a_jax_loop_inside_a_graph_loop_of_ours():
    """The call's functions go into the module while the lowering writes inside a While region."""
    b = GraphBuilder()
    x = b.placeholder("x", F32, (2, 6))
    i32 = np.int32

    def cond(body, i, v):
        return [(body.op("Less", [i, body.const("n", np.array(2, i32))], T=i32), np.bool_)]

    def step(body, i, v):
        y = body.op("XlaCallModule", [v], name="inner", **_attrs("jax_loops"))
        return [(body.op("AddV2", [i, body.const("one", np.array(1, i32))], T=i32), i32), (y, F32)]

    cond_f = b.function("cond", {"i": i32, "v": F32}, cond)
    body_f = b.function("body", {"i": i32, "v": F32}, step)
    _, out = b.op("While", [b.const("zero", np.array(0, i32)), x], name="loop", num_outputs=2,
                  T=[i32, F32], cond=cond_f, body=body_f, output_shapes=[Shape(()), Shape((2, 6))],
                  parallel_iterations=10)
    b.op("Identity", [out], name="y", T=F32)
    graph = b.graph()
    _, want = _run(_loops_graph(2), "off", {"x:0": X})
    sess, got = _run(graph, "auto", {"x:0": X})
    assert [e.source for e in sess.compile_events] == ["compiled"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("jit", ["auto", "off"])
def test_a_jax2tf_saved_model_runs_its_signature(jit):
    """tools/make_jax_saved_model.py: parameters as variables in the checkpoint, a polymorphic
    batch, a dict of two outputs (float log-probabilities and an int32 argmax)."""
    from tests.frontend.saved_model_data import array, case
    root, ref = case("jax_export")
    model = hlobridge.load_saved_model(root / "saved_model", jit=jit, cache_dir=False, min_cluster_size=1)
    sig = ref["signatures"]["serving_default"]
    outputs = model.run({k: array(v) for k, v in sig["inputs"].items()})
    for key, expected in sig["outputs"].items():
        expected = array(expected)
        assert outputs[key].dtype == expected.dtype and outputs[key].shape == expected.shape
        np.testing.assert_allclose(outputs[key], expected, rtol=1e-5, atol=1e-6, err_msg=key)
    x = np.ones((7, 5), F32)  # another batch: specialized again
    assert model.run({"x": x})["label"].shape == (7,)


def _stablehlo_module(text: str) -> bytes:
    """StableHLO text as MLIR bytecode: the deserializer reads plain StableHLO as well as VHLO,
    which lets these tests write modules JAX would not (without JAX)."""
    import io

    from iree.compiler import ir
    with ir.Context():
        buf = io.BytesIO()
        ir.Module.parse(text).operation.write_bytecode(buf)
        return buf.getvalue()


_ADD_ONE = """func.func public @main(%x: tensor<2x6xf32>) -> tensor<2x6xf32> {
  %one = stablehlo.constant dense<1.0> : tensor<2x6xf32>
  %y = stablehlo.add %x, %one : tensor<2x6xf32>
  return %y : tensor<2x6xf32>
}"""


@pytest.mark.parametrize("body, message", [
    ("""func.func public @main(%x: tensor<2x6xf32>) -> tensor<2x6xf32> {
          %y = stablehlo.custom_call @lapack_sgetrf(%x) : (tensor<2x6xf32>) -> tensor<2x6xf32>
          return %y : tensor<2x6xf32> }""", r"custom_call @lapack_sgetrf is not supported"),
    ("""func.func public @main(%t: !stablehlo.token, %x: tensor<2x6xf32>) -> tensor<2x6xf32> {
          return %x : tensor<2x6xf32> }""", r"takes or returns a !stablehlo.token"),
    ("""func.func public @main(%x: tensor<2x6xf32>) -> tensor<?x6xf32> {
          %s = stablehlo.convert %x : (tensor<2x6xf32>) -> tensor<2x6xi32>
          %r = stablehlo.slice %s [0:1, 0:2] : (tensor<2x6xi32>) -> tensor<1x2xi32>
          %v = stablehlo.reshape %r : (tensor<1x2xi32>) -> tensor<2xi32>
          %y = stablehlo.dynamic_broadcast_in_dim %x, %v, dims = [0, 1]
            : (tensor<2x6xf32>, tensor<2xi32>) -> tensor<?x6xf32>
          return %y : tensor<?x6xf32> }""", r"shapes stay dynamic after specializing to the fed shapes: "
                                            r"stablehlo.dynamic_broadcast_in_dim"),
    ("""func.func public @f(%x: tensor<2x6xf32>) -> tensor<2x6xf32> { return %x : tensor<2x6xf32> }""",
     r"the module has no function 'main'"),
])
def test_module_contents_it_cannot_run_are_one_line_naming_the_node(body, message):
    graph = _loops_graph(1, module=_stablehlo_module(body), Sout=[Shape((2, 6))])
    with pytest.raises(HlobridgeError, match=r"node 'call0' \(XlaCallModule\): .*" + message) as info:
        hlobridge.Session(graph, jit="auto", cache_dir=False, min_cluster_size=1).run("y:0", {"x:0": X})
    assert "\n" not in str(info.value)


def test_a_plain_stablehlo_module_runs_too():
    graph = _loops_graph(2, module=_stablehlo_module(_ADD_ONE))
    for jit in ("auto", "off"):
        _, got = _run(graph, jit, {"x:0": X})
        np.testing.assert_allclose(got, X + 2, rtol=1e-6)


def test_int64_and_float64_keep_their_precision_compiled_and_on_the_kernel():
    """A module with JAX's x64 types and two results (IREE would demote float64 by default)."""
    module = _stablehlo_module("""func.func public @main(%x: tensor<2xi64>, %y: tensor<2xf64>)
          -> (tensor<2xi64>, tensor<2xf64>) {
      %a = stablehlo.add %x, %x : tensor<2xi64>
      %b = stablehlo.multiply %y, %y : tensor<2xf64>
      return %a, %b : tensor<2xi64>, tensor<2xf64> }""")
    b = GraphBuilder()
    x, y = b.placeholder("x", np.int64, (2,)), b.placeholder("y", np.float64, (2,))
    out = b.op("XlaCallModule", [x, y], name="call", num_outputs=2, version=10, module=module,
               Tin=[np.int64, np.float64], Tout=[np.int64, np.float64], Sout=[Shape((2,)), Shape((2,))],
               platforms=["CPU"], dim_args_spec=[], disabled_checks=[], has_token_input_output=False,
               function_list=[], use_shardy_partitioner=True)
    feeds = {"x:0": np.array([2 ** 40, -3], np.int64), "y:0": np.array([1e-200, 1 / 3], np.float64)}
    for jit in ("auto", "off"):
        _, (a, m) = _run(b.graph(), jit, feeds, out)
        assert a.dtype == np.int64 and m.dtype == np.float64
        np.testing.assert_array_equal(a, 2 * feeds["x:0"])
        np.testing.assert_array_equal(m, feeds["y:0"] ** 2)


@pytest.mark.parametrize("jit", ["auto", "off"])
def test_disabled_shape_assertions_are_not_checked(jit):
    graph = load_graph(CONFORMANCE / "jax_mlp_poly_batch" / "graph.pbtxt")
    graph.nodes["XlaCallModule"].attrs["disabled_checks"] = ["shape_assertions"]
    y = hlobridge.Session(graph, jit=jit, cache_dir=False).run(_fetch("jax_mlp_poly_batch"),
                                                                {"x:0": np.zeros((0, 8), F32)})
    assert y.shape == (0, 4)


@pytest.mark.parametrize("jit", ["auto", "manual"])
def test_a_lone_module_compiles_like_tensorflows_on_demand_kernel(jit):
    """TF only runs XlaCallModule compiled: one node is never a cluster too small (default
    min_cluster_size 4), and jit="manual" compiles it unmarked."""
    sess = hlobridge.Session(_loops_graph(1), jit=jit, cache_dir=False)
    sess.run("y:0", {"x:0": X})
    assert [e.source for e in sess.compile_events] == ["compiled"]


def test_a_composite_on_polymorphic_shapes_becomes_its_decomposition():
    """JAX writes some ops (lax.top_k) as stablehlo.composite: its decomposition's types must
    equal its operands', so the specializer calls (and inlines) the decomposition instead."""
    module = _stablehlo_module("""
        func.func public @main(%x: tensor<?x6xf32>) -> tensor<?x6xf32> {
          %y = stablehlo.composite "my.double" %x {decomposition = @double_impl} : (tensor<?x6xf32>) -> tensor<?x6xf32>
          return %y : tensor<?x6xf32> }
        func.func private @double_impl(%x: tensor<?x6xf32>) -> tensor<?x6xf32> {
          %y = stablehlo.add %x, %x : tensor<?x6xf32>
          return %y : tensor<?x6xf32> }""")
    graph = _loops_graph(1, module=module, Sout=[Shape((None, 6))])
    for jit in ("auto", "off"):
        _, got = _run(graph, jit, {"x:0": X})
        np.testing.assert_array_equal(got, 2 * X)
