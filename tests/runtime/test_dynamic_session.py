"""Session(dynamic_dims="batch"): each cluster compiled once, run at every batch size
(issue 31 part 4, docs/dynamic_shapes.md)."""

import numpy as np
import pytest

from hlobridge import HlobridgeError
from hlobridge.compile.cache import clear_memory_cache
from hlobridge.runtime.cluster_launch import batch_key
from hlobridge.runtime.session import Session
from tests.conftest import TESTS
from tests.corpus import Case, assert_matches


def test_batch_key_leaves_the_shared_batch_dynamic():
    keys = [("float32", (4, 8)), ("float32", (1, 8)), ("int32", ()), ("float32", (4,))]
    assert batch_key(keys) == [("float32", (None, 8)), ("float32", (1, 8)), ("int32", ()), ("float32", (None,))]
    assert batch_key(keys, skip={0}) == [("float32", (4, 8)), ("float32", (None, 8)), ("int32", ()),
                                         ("float32", (4,))]


def test_five_batch_sizes_one_compile_per_cluster():
    case = Case.load(TESTS / "conformance" / "dynamic_batch")
    clear_memory_cache()  # count compiles, not what another test left in memory
    sess = Session(case.graph_path, cache_dir=False, dynamic_dims="batch")
    runs = {run["name"]: run for run in case.meta["runs"]}
    x = {n: case.array(r["feeds"]["x:0"]) for n, r in runs.items()}
    want = {n: case.array(r["expected"]["Identity:0"]) for n, r in runs.items()}
    # a fifth size: the network treats rows alone, so batch 7 is batch 3 and batch 4 stacked
    x["batch7"] = np.concatenate([x["batch3"], x["batch4"]])
    want["batch7"] = np.concatenate([want["batch3"], want["batch4"]])
    for name in ("batch1", "batch3", "batch4", "batch8", "batch7"):
        got = sess.run("Identity:0", {"x:0": x[name]})
        assert_matches(got, want[name], case.tolerance, name)
    # (each feed shape makes a plan; its launch finds the one module in memory)
    events = sess.compile_events
    compiled = [e.cluster for e in events if e.source == "compiled"]
    assert compiled and len(compiled) == len(set(compiled)), [(e.cluster, e.source, e.input_texts()) for e in events]
    assert {e.source for e in events} <= {"compiled", "memory"}
    assert all(len({e.shapes for e in events if e.cluster == c}) == 1 for c in compiled)
    assert any("?" in t for e in events for t in e.input_texts())


def test_dynamic_dims_takes_only_known_modes(tmp_path):
    with pytest.raises(HlobridgeError, match="dynamic_dims must be None or 'batch'"):
        Session(TESTS / "conformance" / "dynamic_batch" / "graph.pbtxt", dynamic_dims="everything")


def test_a_cluster_without_a_dynamic_rule_compiles_per_shape_without_falling_back():
    from hlobridge.frontend.graph_builder import GraphBuilder
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (None, 4))
    r = b.op("Reshape", [b.op("Exp", [x], name="e", T=np.float32), b.const("s", np.array([-1, 8], np.int32))],
             name="r", T=np.float32, Tshape=np.int32)  # [b, 4] -> [b/2, 8]: no merge or split of a `?`
    y = b.op("Tanh", [b.op("Mul", [r, r], name="m", T=np.float32)], name="t", T=np.float32)
    b.op("Sigmoid", [y], name="y", T=np.float32)
    clear_memory_cache()
    sess = Session(b.graph(), cache_dir=False, dynamic_dims="batch", min_cluster_size=2)
    for n in (2, 4, 6):
        v = np.linspace(-1, 1, n * 4, dtype=np.float32).reshape(n, 4)
        e = np.exp(v).reshape(-1, 8)
        np.testing.assert_allclose(sess.run("y:0", {"x:0": v}), 1 / (1 + np.exp(-np.tanh(e * e))), rtol=1e-5)
    assert {e.source for e in sess.compile_events} == {"compiled"}
    assert all("?" not in t for e in sess.compile_events for t in e.input_texts())


def test_load_saved_model_runs_every_batch_with_one_compile_per_cluster():
    """`load_saved_model(..., dynamic_dims="batch")`: the Keras export's `None` batch stays `?`, so
    rows 1, 3, 4 and 5 of TF's batch run on the clusters compiled for the first size."""
    import hlobridge
    from tests.frontend.saved_model_data import array, case

    root, ref = case("keras_export")
    sig = ref["signatures"]["serving_default"]
    clear_memory_cache()
    model = hlobridge.load_saved_model(root / "saved_model", jit="auto", cache_dir=False, dynamic_dims="batch")
    x = {k: array(v) for k, v in sig["inputs"].items()}
    want = {k: array(v) for k, v in sig["outputs"].items()}
    for n in (5, 1, 3, 4):
        got = model.run({k: v[:n] for k, v in x.items()})
        for key, expected in want.items():
            np.testing.assert_allclose(got[key], expected[:n], rtol=1e-5, atol=1e-5, err_msg=f"{key} batch {n}")
    events = model.session.compile_events
    compiled = [e.cluster for e in events if e.source == "compiled"]
    assert compiled and len(compiled) == len(set(compiled)), [(e.cluster, e.source) for e in events]
    assert {e.source for e in events} <= {"compiled", "memory"}
