"""The stateless random ops and tf.random.Generator's ops against TensorFlow's recorded results.

tests/data/random_references.npz is written by tools/make_random_references.py (TF 2.21's
CPU kernels). Uniform and integer results must be TF's bits, kernel and compiled; normals
may differ by glibc's rare 1-ulp logf/sincosf cases (tests/ops/test_philox.py measures them).
The Generator cases run in a Session, on the kernels and compiled, and must leave the
Philox state where TensorFlow left it.
"""

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from hlobridge.debug.testing import compiled, reference, single_op_graph
from hlobridge.ops import REGISTRY
from hlobridge.frontend.graph_builder import GraphBuilder, Shape
from hlobridge.runtime.session import Session

DATA = np.load(Path(__file__).resolve().parents[1] / "data" / "random_references.npz")
INDEX = json.loads(DATA["index"].tobytes())
# (rtol, atol) of the normals: a float32 ulp, or one rounding step of the narrower types
# when that ulp moves a value across a rounding boundary.
TOLERANCE = {"float32": 1e-6, "float64": 1e-12, "float16": 1e-3, "bfloat16": 8e-3}
# RandomGammaGrad iterates series in the element type with logs and digamma from float64:
# float32 rounding noise (float64 matches TF exactly).
GAMMA_GRAD_TOLERANCE = {"float32": 2e-5, "float64": 1e-12}  # measured: 4.3e-6, exact
# Compiling costs seconds per case (all of them pass; about 6 minutes): the compiled test
# takes every op, dtype and edge once.
COMPILED = {
    "StatelessRandomUniformV2-f32-carry", "StatelessRandomUniformV2-bf16-ctr", "StatelessRandomUniformV2-f16-ctr",
    "StatelessRandomUniformV2-f64-ctr", "StatelessRandomNormalV2-f32-carry", "StatelessRandomNormalV2-f64-ctr",
    "StatelessRandomNormalV2-f16-ctr", "StatelessTruncatedNormalV2-f32-ctr", "StatelessTruncatedNormalV2-f64-carry",
    "StatelessTruncatedNormalV2-bf16-ctr", "StatelessRandomUniformIntV2-i32", "StatelessRandomUniformIntV2-i64",
    "StatelessRandomUniformFullIntV2-u64", "StatelessRandomUniform-f32-sneg", "StatelessRandomNormal-f32-s12",
    "StatelessTruncatedNormal-f32-large", "StatelessRandomUniformInt-i32full-sneg", "StatelessRandomUniformFullInt-i32",
    "StatelessRandomGetKeyCounterAlg-s32", "StatelessRandomGetKeyCounter-sneg", "StatelessRandomUniformV2-f32-empty-auto",
    "StatelessMultinomial-f32", "StatelessMultinomial-edges", "StatelessMultinomial-f64-i32", "StatelessMultinomial-f16",
    "StochasticCastToInt-f32-int32-53", "StochasticCastToInt-f64-int32-53", "StochasticCastToInt-f32-int32-specials",
    "StochasticCastToInt-f16-int8-specials", "StochasticCastToInt-bf16-int32-specials",
    "StochasticCastToInt-f64-int16-53",
}


def _dtype(name):
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def _attrs(recorded):
    return {k: _dtype(v["dtype"]) if isinstance(v, dict) else v for k, v in recorded.items()}


def load(case_id):
    case = BY_ID[case_id]
    inputs = [DATA[f"{case['id']}/in{i}"] for i in range(len(case["inputs"]))]
    for i in case["bfloat16_inputs"]:
        inputs[i] = inputs[i].view(ml_dtypes.bfloat16)
    outputs = [DATA[f"{case['id']}/out{i}"] for i in range(case["outputs"])]
    for i in case["bfloat16_outputs"]:
        outputs[i] = outputs[i].view(ml_dtypes.bfloat16)
    return inputs, _attrs(case["attrs"]), outputs


def assert_tf_equal(got, want, what):
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, got.shape, want.dtype, want.shape)
    if "GammaGrad" in what:
        tol = GAMMA_GRAD_TOLERANCE[want.dtype.name]
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=what)
    elif want.dtype.kind in "biu" or "Normal" not in what:
        np.testing.assert_array_equal(got.view(f"u{got.dtype.itemsize}"), want.view(f"u{want.dtype.itemsize}"),
                                      err_msg=what)
    else:
        tol = TOLERANCE[want.dtype.name]
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol, err_msg=what)


BY_ID = {c["id"]: c for c in INDEX["ops"]}
CASES = [pytest.param(c["op"], c["id"], id=c["id"]) for c in INDEX["ops"]]


def _first_run(op, inputs, attrs):
    """A stateful op's (Multinomial, RandomShuffle) first run in a new session, on its kernel."""
    graph, feeds = single_op_graph(op, inputs, attrs)
    return Session(graph, jit="off", cache_dir=False).run(["op:0"], feeds)


@pytest.mark.parametrize("op,case_id", CASES)
def test_kernel_matches_tensorflow(op, case_id):
    inputs, attrs, want = load(case_id)
    got = (_first_run if REGISTRY[op].stateful else reference)(op, inputs, attrs)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert_tf_equal(g, w, f"{case_id} output {i}")


@pytest.mark.parametrize("op,case_id", [c for c in CASES if c.values[1] in COMPILED])
def test_compiled_matches_tensorflow(op, case_id):
    inputs, attrs, want = load(case_id)
    got = compiled(op, inputs, attrs)
    for i, (g, w) in enumerate(zip(got, want)):
        assert_tf_equal(g, w, f"{case_id} output {i} (compiled)")


def test_references_cover_the_stateless_ops():
    from hlobridge.ops.random.stateless import STATELESS_V1, STATELESS_V2
    assert set(STATELESS_V1) | set(STATELESS_V2) <= {c["op"] for c in INDEX["ops"]}


# -- tf.random.Generator's ops on a state variable ------------------------------------------------------

STATEFUL = {c["id"]: c for c in INDEX["stateful"]}
COVERED_OPS = {c["op"] for c in INDEX["stateful"]}  # for test_coverage.py


def _generator_graph(case_id):
    """The state variable initialised to the recorded state, the op on it with its other inputs
    as constants (the algorithm and shape must be), and a read of the state."""
    case = STATEFUL[case_id]
    b = GraphBuilder()
    state = DATA[f"{case_id}/var0"]
    h = b.op("VarHandleOp", name="v0", dtype=state.dtype, shape=Shape(state.shape), shared_name="v0", container="")
    b.op("AssignVariableOp", [h, b.const("init0", state)], name="init", dtype=state.dtype)
    args = [b.const(f"x{i}", DATA[f"{case_id}/in{i}"]) for i in range(case["inputs"])]
    b.op(case["op"], [h] + args, name="op", **_attrs(case["attrs"]))
    b.op("ReadVariableOp", [h], name="read0", dtype=state.dtype)
    return b.graph()


@pytest.mark.parametrize("jit", ["off", "auto"])
@pytest.mark.parametrize("case_id", [pytest.param(c, id=c) for c in STATEFUL])
def test_generator_ops_match_tensorflow(case_id, jit):
    case = STATEFUL[case_id]
    sess = Session(_generator_graph(case_id), jit=jit, cache_dir=False, min_cluster_size=1)
    sess.run("init")
    fetch = ["op:0"] if case["outputs"] else ["op"]
    if jit == "auto":
        assert "op" in sess.clustering(fetch, {}).cluster_of, "the op compiles"
    outputs = sess.run(fetch)
    for i in range(case["outputs"]):
        assert_tf_equal(outputs[i], DATA[f"{case_id}/out{i}"], f"{case['op']} output {i}")
    assert_tf_equal(sess.run("read0:0"), DATA[f"{case_id}/after0"], f"{case['op']} state")
