"""The XLA backend (XLA through PJRT, compile/xla.py and runtime/pjrt.py) on jaxlib's CPU
plugin: a subset of the conformance, training and corpus tests at their own tolerances, the
artifact path (hlobridge-compile --backend xla, runtime.load), variables written in place
(donated buffers), compiled checks, and the core install never importing jax.

The whole conformance set on XLA (docs/backends.md):
    HLOBRIDGE_TEST_BACKEND=xla pytest tests/e2e/test_conformance.py tests/e2e/test_training.py
"""

import subprocess
import sys

import numpy as np
import pytest

import hlobridge
from hlobridge.cli import compile as compile_cli
from hlobridge.errors import HlobridgeError
from hlobridge.runtime.session import Session

from tests.conftest import ROOT, TESTS
from tests.corpus import Case, check_case, judge_training, run_training
from tests.e2e.test_conformance import CONFORMANCE, _session
from tests.e2e.test_corpus_inference import _check_runs

jax = pytest.importorskip("jax", reason="the xla extra (jax, jaxlib) is not installed")

# One or two cases per family: elementwise, integer, casts, convolutions and their gradients,
# batch norm, gathers, attention, v2 control flow, tensor lists, compiled checks (Assert),
# stateless random, complex FFTs, a JAX-exported module, training with optimizers.
CONFORMANCE_SUBSET = ["activations", "binary_int", "cast", "conv2d", "conv_backprop", "fused_batch_norm",
                      "gather_scatter_nd", "keras_attention_block", "select_where", "cond_v2", "tensor_list_ops", "assert_v2",
                      "random_stateless_fn", "complex_fft_algebra", "jax_mlp", "softmax_xent",
                      "train_optimizers", "train_conv_batchnorm"]


@pytest.mark.parametrize("name", CONFORMANCE_SUBSET)
def test_conformance_case_on_xla(name):
    case = Case.load(CONFORMANCE / name)
    session = _session(case, "auto", backend="xla")
    check_case(case, session)
    events = [e for e in session.compile_events if e.source != "fallback"]
    assert events and {e.backend for e in events} == {"xla"}


@pytest.mark.parametrize("where,name", [("shared", "seed_linreg_resource"), ("shared", "mlp_adam"),
                                        ("own", "stateful_mix"), ("own", "adam_ref")])
def test_training_case_on_xla(shared_graphs, where, name):
    case = Case.load((shared_graphs if where == "shared" else TESTS / "graphs") / name)
    judge_training(case, run_training(case, Session(case.graph_path, cache_dir=False, backend="xla")))


def test_cli_writes_a_portable_artifact_that_runtime_load_runs(shared_graphs, tmp_path):
    case = Case.load(shared_graphs / "cnn_infer_bn")
    batch = case.array("batch4/feed/images:0").shape[0]
    out = tmp_path / "model.mlirbc"
    assert compile_cli.main([str(case.graph_path), "-o", str(out), "--backend", "xla",
                             "--input-shape", f"images:0={batch},32,32,3"]) == 0
    assert out.read_bytes()[:4] == b"ML\xefR"  # MLIR bytecode: StableHLO's portable artifact
    from jax.extend import mlir as jax_mlir  # anyone with jaxlib reads it back, no hlobridge needed
    from hlobridge.runtime.pjrt import _mlir_context
    text = str(jax_mlir.deserialize_portable_artifact(out.read_bytes(), context=_mlir_context()))
    assert "stablehlo.convolution" in text and "hlobridge.reflection" in text and "flow." not in text
    m = hlobridge.runtime.load(out, device="cpu")
    assert m.input_names == ["images:0"] and m.output_names == ["Identity:0", "Identity_1:0"]
    _check_runs(case, m)


def test_compile_graph_with_the_xla_backend_loads_on_xla(shared_graphs):
    case = Case.load(shared_graphs / "cnn_infer_bn")
    model = hlobridge.compile_graph(case.graph_path, input_shapes={"images": (4, 32, 32, 3)},
                                    options=hlobridge.CompileOptions(backend="xla", fusion="hlobridge"))
    assert model.options.backend == "xla" and model.stats == {"backend": "xla"}
    _check_runs(case, model.load("cpu"))


def test_variables_stay_on_the_device_and_tied_ones_are_donated(shared_graphs):
    case = Case.load(shared_graphs / "mlp_adam")
    session = Session(case.graph_path, cache_dir=False, backend="xla")
    meta = case.meta
    session.run(meta["init_op"], case.init_feeds())
    session.run([meta["train_op"], meta["loss"]], case.step_feeds(0))
    before = dict(session.variables.values)
    assert all(type(v).__module__.startswith("jaxlib") for v in before.values())  # on the device
    session.run([meta["train_op"], meta["loss"]], case.step_feeds(1))
    donated = [name for name, v in before.items() if v.is_deleted()]
    assert donated and all("/Adam" in name for name in donated), donated  # the Adam slots: in place


def test_a_failing_compiled_check_raises_the_kernels_error():
    # CheckNumerics compiles to a check (cf.assert) that XLA gets back as a flag result
    from hlobridge.debug.testing import single_op_graph
    from hlobridge.errors import CheckNumericsError
    graph, feeds = single_op_graph("CheckNumerics", [np.ones(3, np.float32)], {"message": "bad x"})
    session = Session(graph, cache_dir=False, min_cluster_size=1, jit="strict", backend="xla")
    np.testing.assert_array_equal(session.run("op:0", {"p0:0": np.ones(3, np.float32)}), 1)
    with pytest.raises(CheckNumericsError, match="bad x"):
        session.run("op:0", {"p0:0": np.array([1, np.nan, 2], np.float32)})


def test_auto_picks_iree_on_the_cpu_and_explain_says_so(shared_graphs):
    from hlobridge.compile.backend import resolve
    assert resolve("auto", "llvm-cpu") == "iree" and resolve("auto", "cuda") == "xla"
    result = hlobridge.explain(shared_graphs / "mlp_adam" / "graph.pbtxt", backend="xla")
    assert all(c["backend"] == "xla" for c in result.to_dict()["clusters"])
    assert " (xla): " in str(result)


def test_an_unknown_backend_is_a_one_line_error(shared_graphs):
    with pytest.raises(HlobridgeError, match="unknown backend 'tpu'"):
        Session(shared_graphs / "mlp_adam" / "graph.pbtxt", backend="tpu")


def test_the_core_never_imports_jax(shared_graphs):
    code = ("import sys, numpy as np, hlobridge\n"
            "from hlobridge.runtime.session import Session\n"
            f"s = Session({str(shared_graphs / 'seed_linreg_resource' / 'graph.pbtxt')!r}, cache_dir=False)\n"
            "import hlobridge.runtime, hlobridge.compile.backend\n"
            "assert not [m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib')], 'jax imported'\n")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]


def test_host_and_device_values_mix_in_one_call():
    from hlobridge.runtime.pjrt import to_device
    x = np.arange(6, dtype=np.int64).reshape(2, 3)
    d = to_device(x, "cpu")
    assert d.dtype == np.int64  # 64-bit values stay 64-bit (jax would make them 32-bit)
    assert to_device(d, "cpu") is d
    np.testing.assert_array_equal(hlobridge.runtime.host.to_host(d), x)


@pytest.mark.parametrize("which, feeds, ok, over", [
    ("counted", lambda n: {"x:0": np.zeros(3, np.float32), "n:0": np.int32(n)}, 10, 11),
    ("uncounted", lambda n: {"bound:0": np.float32(n)}, 1023, 1024)])
def test_a_loop_over_the_iteration_limit_is_the_same_error_on_xla(which, feeds, ok, over, monkeypatch):
    # (a counted loop's check comes back after the loop ran: docs/backends.md, limits)
    from hlobridge import flags
    from hlobridge.errors import ResourceLimitError
    from tests.e2e.test_control_flow import _doubling_graph, _loop_graph
    monkeypatch.setenv("HLOBRIDGE_FLAGS", "--max-loop-iterations=10")
    flags.from_environment.cache_clear()
    try:
        graph = _loop_graph() if which == "counted" else _doubling_graph()
        session = Session(graph, jit="strict", min_cluster_size=1, cache_dir=False, backend="xla")
        session.run("acc:0", feeds(ok))
        with pytest.raises(ResourceLimitError, match="node 'loop' .StatelessWhile.: the loop runs more than 10"):
            session.run("acc:0", feeds(over))
    finally:
        flags.from_environment.cache_clear()


def _checked_loop_graph():
    """acc = 2 * acc + 1 while acc < bound, each step's acc through CheckNumerics(sqrt(6 - acc)):
    a check inside the loop's body, which XLA gets back as a flag the loop carries out."""
    from hlobridge.frontend.graph_builder import GraphBuilder
    f32 = np.float32
    b = GraphBuilder()
    bound = b.placeholder("bound", f32, [])

    def cond(f, acc, limit):
        return [(f.op("Less", [acc, limit], T=np.dtype(f32)), np.bool_)]

    def body(f, acc, limit):
        room = f.op("Sqrt", [f.op("Sub", [f.const("six", 6.0, f32), acc], T=np.dtype(f32))], T=np.dtype(f32))
        checked = f.op("CheckNumerics", [room], T=np.dtype(f32), message="acc passed 6")
        doubled = f.op("Mul", [acc, f.const("two", 2.0, f32)], T=np.dtype(f32))
        grown = f.op("AddV2", [doubled, f.op("Mul", [checked, f.const("zero", 0.0, f32)], T=np.dtype(f32))],
                     T=np.dtype(f32))
        return [(f.op("AddV2", [grown, f.const("one", 1.0, f32)], T=np.dtype(f32)), f32), (limit, f32)]

    args = {"acc": f32, "limit": f32}
    outs = b.op("StatelessWhile", [b.const("zero", 0.0, f32), bound], name="loop", num_outputs=2,
                T=[np.dtype(f32)] * 2, cond=b.function("ccond", args, cond), body=b.function("cbody", args, body))
    b.op("Identity", [outs[0]], name="acc", T=np.dtype(f32))
    return b.graph()


def test_a_check_inside_a_loop_body_raises_on_xla_as_on_iree():
    from hlobridge.errors import CheckNumericsError
    for backend in ("iree", "xla"):
        session = Session(_checked_loop_graph(), jit="strict", min_cluster_size=1, cache_dir=False, backend=backend)
        assert float(session.run("acc:0", {"bound:0": np.float32(5)})) == 7  # acc 0, 1, 3, 7: sqrt(6 - 3) ok
        with pytest.raises(CheckNumericsError, match="acc passed 6"):
            session.run("acc:0", {"bound:0": np.float32(12)})  # acc 7 then sqrt(-1)


def test_a_saved_model_runs_on_xla():
    from tests.frontend.saved_model_data import array, case
    root, ref = case("tf1_builder")
    for signature, sig_ref in ref["signatures"].items():
        model = hlobridge.load_saved_model(root / "saved_model", signature=signature, cache_dir=False,
                                           min_cluster_size=1, backend="xla")
        outputs = model.run({k: array(v) for k, v in sig_ref["inputs"].items()})
        for key, expected in sig_ref["outputs"].items():
            np.testing.assert_allclose(outputs[key], array(expected), rtol=1e-5, atol=1e-5, err_msg=key)
        assert {e.backend for e in model.session.compile_events} == {"xla"}
