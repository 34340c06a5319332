"""Clusters that differ only in names share one binary (runtime/cluster_key.py): a graph that
repeats a block around host kernels compiles it once, and each launch reads and writes its
own variables through the shared binary (by position: cluster_launch.VARIABLES_KEY)."""

import numpy as np
import pytest

from hlobridge.compile.cache import clear_memory_cache
from hlobridge.frontend.graph_builder import GraphBuilder, Shape
from hlobridge.runtime import session as session_module
from hlobridge.runtime.session import Session

F32 = np.float32
N = 8
W = (np.random.default_rng(5).standard_normal((N, N)) / 3).astype(F32)


def _block(b, x, prefix, colocated_with):
    """v_<prefix> += relu(x . W) . W; returns relu(x . W + v) (four ops and a variable update)."""
    v = b.op("VarHandleOp", name=f"{prefix}v", dtype=F32, shape=Shape((1, N)), shared_name=f"{prefix}v",
             container="")
    w = b.const(f"{prefix}w", W)
    h = b.op("Relu", [b.op("MatMul", [x, w], name=f"{prefix}mm", T=F32)], name=f"{prefix}relu", T=F32)
    b.op("AssignAddVariableOp", [v, b.op("MatMul", [h, w], name=f"{prefix}mm2", T=F32)], name=f"{prefix}update",
         dtype=F32, _class=[f"loc:@{colocated_with}"])
    read = b.op("ReadVariableOp", [v], name=f"{prefix}read", dtype=F32, control_inputs=[f"{prefix}update"])
    return b.op("Relu", [b.op("AddV2", [h, read], name=f"{prefix}add", T=F32)], name=f"{prefix}out", T=F32)


def repeated_graph():
    """x -> block a -> a string round trip (host kernels) -> block b: two clusters alike but
    for names (their `_class` attrs name different nodes too)."""
    b = GraphBuilder()
    x = b.placeholder("x", F32, (1, N))
    for prefix in ("a", "b"):
        b.op("AssignVariableOp", [b.op("VarHandleOp", name=f"{prefix}v", dtype=F32, shape=Shape((1, N)),
                                       shared_name=f"{prefix}v", container=""),
                                  b.const(f"{prefix}zero", np.zeros((1, N), F32))],
             name=f"{prefix}init", dtype=F32)
    a = _block(b, x, "a", "x")
    back = b.op("StringToNumber", [b.op("AsString", [a], name="text", T=F32)], name="back", out_type=F32)
    _block(b, back, "b", "back")
    for prefix in ("a", "b"):  # the variables' values, read on their own
        b.op("ReadVariableOp", [f"{prefix}v"], name=f"{prefix}final", dtype=F32)
    return b.graph()


@pytest.fixture(autouse=True)
def _nothing_compiled_yet():
    clear_memory_cache()


@pytest.mark.parametrize("ahead", [True, False], ids=["compiled_ahead", "compiled_as_they_run"])
def test_one_compile_two_launches_each_with_its_variables(monkeypatch, ahead):
    if not ahead:
        monkeypatch.setattr(session_module, "compile_ahead", lambda *args: None)
    x = np.random.default_rng(6).standard_normal((1, N)).astype(F32)
    feeds = {"x:0": x}
    fetches = ["bout:0", "aupdate", "bupdate"]
    results = {}
    for jit in ("auto", "off"):
        sess = Session(repeated_graph(), jit=jit, cache_dir=False)
        sess.run(["ainit", "binit"])
        outs = [sess.run(fetches, feeds)[0] for _ in range(3)]
        results[jit] = (outs, sess.run(["afinal:0", "bfinal:0"]))
        if jit == "auto":
            step = [e for e in sess.compile_events if len(e.shapes) == 1]  # the step's clusters (each takes x)
            assert sorted(e.source for e in step) == ["compiled", "memory"]
    for got, want in zip(results["auto"][0] + results["auto"][1], results["off"][0] + results["off"][1]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert not np.allclose(results["auto"][1][0], results["auto"][1][1])  # two variables, two values
