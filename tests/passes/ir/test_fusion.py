"""Fusion (passes/ir/fusion.py): dispatch counts on every corpus graph, results unchanged, the API.

The counts are pinned because `flow.dispatch.region` is internal to IREE: an IREE upgrade may
change what it makes of our regions. If these numbers change, re-measure (`hlobridge-explain
--dispatches`, benchmarks/fusion.py) before re-pinning; hlobridge must stay below none and at
most iree on every graph.
"""

import json
import warnings

import numpy as np
import pytest
from iree.compiler import ir

from hlobridge.cli import compile as compile_cli
from hlobridge.cli import explain as explain_cli
from hlobridge.compile.driver import CompileOptions, compile_mlir
from hlobridge.errors import FusionFallbackWarning, HlobridgeError
from hlobridge.debug.explain import explain
from hlobridge.passes.ir import fusion
from hlobridge.runtime.session import Session

from tests.corpus import Case

MODES = ("hlobridge", "iree", "none")

# Dispatches per call of one run (training: a train step) summed over its clusters, as IREE
# 3.13 llvm-cpu counts them (--iree-scheduling-dump-statistics), with the module's initializer:
# under "none", cnn_infer_bn's and tf2_function_graph's constant expressions run there, at load
# (compile/options.py's NO_CONST_EVAL_FLAG; 23 and 16 when IREE evaluated them while compiling).
DISPATCHES = {
    "cnn_infer_bn": {"hlobridge": 9, "iree": 9, "none": 27},
    "cnn_train": {"hlobridge": 110, "iree": 108, "none": 289},
    "control_flow_v1": {"hlobridge": 6, "iree": 6, "none": 8},
    "mlp_adam": {"hlobridge": 23, "iree": 24, "none": 141},
    "seed_linreg_ref": {"hlobridge": 6, "iree": 8, "none": 17},
    "seed_linreg_resource": {"hlobridge": 6, "iree": 8, "none": 17},
    "seed_mnist_softmax": {"hlobridge": 13, "iree": 13, "none": 42},
    "tf2_function_graph": {"hlobridge": 8, "iree": 8, "none": 18},
}
# Where IREE's own dispatch formation forms fewer dispatches than hlobridge's policy, and why.
IREE_FEWER = {
    # MaxPoolGrad of tiling windows (ops/nn/pooling.py) finds each window's first maximum with a
    # min-reduction over the taps and selects with it in x's space: IREE puts the select in the
    # reduction's dispatch; hlobridge's policy forms such reduce-then-broadcast regions only for
    # softmax (fusion_policy.py, rule 3).
    "cnn_train": 2,
}


def test_every_corpus_graph_is_pinned(shared_graphs):
    assert {p.name for p in shared_graphs.iterdir() if (p / "case.json").exists()} == set(DISPATCHES)


@pytest.mark.parametrize("name", sorted(DISPATCHES))
def test_dispatch_counts(shared_graphs, name):
    case = Case.load(shared_graphs / name)
    _, _, fetches, feeds = case.first_run()
    result = explain(case.graph_path, fetches=fetches, feeds=list(feeds),
                     input_shapes={n: v.shape for n, v in feeds.items()}, dispatches=MODES)
    counts = {m: sum(c[m]["dispatches"] for c in result.dispatches.values()) for m in MODES}
    assert counts["hlobridge"] < counts["none"], counts
    assert counts["hlobridge"] <= counts["iree"] + IREE_FEWER.get(name, 0), counts
    assert counts == DISPATCHES[name]


def _results(case: Case, mode: str, steps: int = 3) -> list:
    """What a session computes under `mode`: the losses and final variables of a few training
    steps, or every inference run's outputs."""
    sess = Session(case.graph_path, device="cpu", cache_dir=False, recompile_warning=100,
                   compile_options=CompileOptions(fusion=mode))
    meta = case.meta
    if meta["kind"] == "train":
        init, init_feeds, fetches, _ = case.first_run()
        sess.run(init, init_feeds)
        out = [sess.run(fetches, case.step_feeds(s))[1] for s in range(steps)]
        return out + [sess.run(v["read_tensor"]) for v in meta["variables"]]
    return [sess.run(list(run["expected"]), {n: case.array(k) for n, k in run["feeds"].items()})
            for run in meta["runs"]]


@pytest.fixture(scope="module")
def iree_results():
    return {}


@pytest.mark.parametrize("mode", ["hlobridge", "none"])
@pytest.mark.parametrize("name", sorted(DISPATCHES))
def test_results_match_iree_dispatch_formation(shared_graphs, iree_results, name, mode):
    """Fusion moves work between kernels; it may reassociate float sums, nothing more."""
    case = Case.load(shared_graphs / name)
    if name not in iree_results:
        iree_results[name] = _results(case, "iree")
    with warnings.catch_warnings():
        warnings.simplefilter("error", FusionFallbackWarning)  # our regions must compile as they are
        got = _results(case, mode)
    for g, w in zip(got, iree_results[name]):
        for a, b in zip(g if isinstance(g, list) else [g], w if isinstance(w, list) else [w]):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6, err_msg=name)


MODULE = """
func.func @main(%x: tensor<4x16xf32>, %w: tensor<16x8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %relu0 = stablehlo.constant dense<0.0> : tensor<4x8xf32>
  %d = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
  %s = stablehlo.add %d, %bb : tensor<4x8xf32>
  %r = stablehlo.maximum %s, %relu0 : tensor<4x8xf32>
  %e = stablehlo.exponential %x : tensor<4x16xf32>
  %sum = stablehlo.reduce(%e init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<4x16xf32>, tensor<f32>) -> tensor<4xf32>
  return %r, %sum : tensor<4x8xf32>, tensor<4xf32>
}
"""


def test_fusion_groups_describe_the_regions_without_forming_them():
    with ir.Context():
        module = ir.Module.parse(MODULE)
        before = str(module)
        groups = fusion.fusion_groups(module)["main"]
        assert str(module) == before
        assert [(g.kind, g.root.name, [op.name.removeprefix("stablehlo.") for op in g.ops]) for g in groups] == [
            ("contraction", "stablehlo.dot_general", ["dot_general", "broadcast_in_dim", "add", "maximum"]),
            ("reduce", "stablehlo.reduce", ["exponential", "reduce"]),
        ]
        assert fusion.fusion_groups(module, "iree") == {"main": []}
        assert len(fusion.fusion_groups(module, "none")["main"]) == 6
        assert fusion.fuse(module) == 2
        regions = [o for o in module.body.operations[0].regions[0].blocks[0].operations
                   if o.operation.name == "flow.dispatch.region"]
        assert len(regions) == 2
        module.operation.verify()


def test_fused_module_compiles_to_fewer_dispatches_with_equal_results():
    import iree.runtime as rt
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32) for s in ((4, 16), (16, 8), (8,))]
    outputs, counts = {}, {}
    for mode in MODES:
        with ir.Context():
            module = ir.Module.parse(MODULE)
            fusion.fuse(module, mode)
            text = str(module)
        stats = {}
        vmfb = compile_mlir(text, CompileOptions(), stats=stats)
        counts[mode] = stats["dispatches"]
        outputs[mode] = [np.asarray(r.to_host()) for r in rt.load_vm_flatbuffer(vmfb, driver="local-sync").main(*args)]
    assert counts == {"hlobridge": 2, "iree": 2, "none": 6}
    for mode in ("hlobridge", "none"):
        for a, b in zip(outputs[mode], outputs["iree"]):
            np.testing.assert_allclose(a, b, rtol=1e-6)


def test_unknown_mode_is_an_error():
    with ir.Context():
        module = ir.Module.parse(MODULE)
        with pytest.raises(HlobridgeError, match="fusion must be one of"):
            fusion.fuse(module, "xla")
    with pytest.raises(HlobridgeError, match="fusion must be one of"):
        CompileOptions(fusion="xla").stages()


def test_regions_iree_cannot_compile_fall_back_to_iree_formation():
    # two unrelated iteration spaces in one region: IREE 3.13 fails to distribute it
    text = """
    func.func @main(%x: tensor<100x10xf32>, %y: tensor<100xf32>) -> (tensor<100x10xf32>, tensor<100xf32>) {
      %r:2 = flow.dispatch.region -> (tensor<100x10xf32>, tensor<100xf32>) {
        %e = stablehlo.exponential %y : tensor<100xf32>
        %p = stablehlo.exponential %x : tensor<100x10xf32>
        flow.return %p, %e : tensor<100x10xf32>, tensor<100xf32>
      }
      return %r#0, %r#1 : tensor<100x10xf32>, tensor<100xf32>
    }"""
    stats = {}
    with pytest.warns(FusionFallbackWarning, match="IREE formed the dispatches itself"):
        compile_mlir(text, CompileOptions(), stats=stats)
    assert stats["dispatches"] == 2


def test_compile_cli_writes_stats(shared_graphs, tmp_path):
    graph = shared_graphs / "cnn_infer_bn" / "graph.pbtxt"
    counts = {}
    for mode in ("hlobridge", "none"):
        stats = tmp_path / f"{mode}.json"
        assert compile_cli.main([str(graph), "-o", str(tmp_path / "m.vmfb"), "--fusion", mode,
                                 "--input-shape", "images:0=4,32,32,3", "--stats", str(stats),
                                 "--data-tiling", "off"]) == 0  # no packing dispatches in the counts
        data = json.loads(stats.read_text())
        assert data["fusion"] == mode and data["executables"] <= data["dispatches"]
        counts[mode] = data["dispatches"]
    # untiled, the hlobridge mode has no packing of the one activation its data-tiled count includes
    assert counts == {"hlobridge": DISPATCHES["cnn_infer_bn"]["hlobridge"] - 1, "none": DISPATCHES["cnn_infer_bn"]["none"]}


def test_explain_cli_shows_dispatches_per_cluster(shared_graphs, capsys):
    graph = shared_graphs / "tf2_function_graph" / "graph.pbtxt"
    assert explain_cli.main([str(graph), "--fetch", "Identity:0", "--fetch", "Identity_1:0", "--feed", "x:0",
                             "--input-shape", "x:0=5,8", "--dispatches", "hlobridge,none"]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith("dispatches:")]
    assert len(lines) == 2
    assert all("hlobridge" in ln and "none" in ln and "iree" not in ln for ln in lines)
    with pytest.raises(HlobridgeError, match="unknown fusion mode"):
        explain_cli.main([str(graph), "--dispatches", "xla"])


def test_explain_without_shapes_says_which_input_needs_one(shared_graphs):
    result = explain(shared_graphs / "seed_mnist_softmax" / "graph.pbtxt", fetches=["Mean:0"], feeds=["x:0", "y_:0"],
                     dispatches=["hlobridge"])
    (per_cluster,) = result.dispatches.values()
    assert "--input-shape" in per_cluster["error"]
    assert "dispatches: unknown" in str(result)


# For CUDA, MatMul is one dot_general (matmul.py: no TF CPU blocks of 256 along K = 784): three
# block products and their adds fewer than on the CPU.
CUDA_DISPATCHES = {"seed_mnist_softmax": 10, "mlp_adam": 20}


@pytest.mark.parametrize("name", ["seed_mnist_softmax", "mlp_adam"])
def test_regions_compile_for_cuda_with_the_same_counts(shared_graphs, name):
    """Compile-only (no GPU needed): IREE's CUDA backend accepts our regions as they are, and
    forms the dispatches pinned for its lowering (the CPU's count, less MatMul's K blocks)."""
    case = Case.load(shared_graphs / name)
    _, _, fetches, feeds = case.first_run()
    with warnings.catch_warnings():
        warnings.simplefilter("error", FusionFallbackWarning)
        result = explain(case.graph_path, fetches=fetches, feeds=list(feeds),
                         input_shapes={n: v.shape for n, v in feeds.items()}, dispatches=["hlobridge"],
                         compile_options=CompileOptions(target="cuda"))
    assert sum(c["hlobridge"]["dispatches"] for c in result.dispatches.values()) == CUDA_DISPATCHES[name]
    assert DISPATCHES[name]["hlobridge"] == CUDA_DISPATCHES[name] + 3


def test_fusion_benchmark_reports_each_mode(capsys, tmp_path):
    """benchmarks/fusion.py as a user runs it (one tiny timing block): a Markdown row per case
    with every mode's time and the dispatch counts, and the same in --json-out."""
    from benchmarks import fusion as bench
    out = tmp_path / "fusion.json"
    assert bench.main(["seed_linreg_ref", "--steps", "1", "--repeat", "1", "--warmup", "0", "--counts",
                       "--device", "cpu", "--json-out", str(out)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].startswith("| case | iree ms/step | hlobridge ms/step | none ms/step")
    assert table[2].startswith("| seed_linreg_ref |") and table[2].endswith("| 8/6/17 |")
    (row,) = json.loads(out.read_text())
    assert row["dispatches"] == {m: DISPATCHES["seed_linreg_ref"][m] for m in MODES}
    assert all(row[f"{m}_ms"] > 0 for m in MODES)
