"""tools/fuzz_loaders.py in CI: a short seeded run over SavedModel and checkpoint mutants and
over command lines finds no traceback, crash, hang or memory blow-up (the long run:
docs/robustness.md); and the graph fuzzer reports a JitFallbackWarning as a finding."""

from __future__ import annotations

import sys

import numpy as np

from hlobridge.errors import CompileError
from hlobridge.frontend.graph_builder import GraphBuilder
from hlobridge.frontend.graphdef import write_graphdef
from hlobridge.compile import iree
from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import fuzz_file_mutators  # noqa: E402
import fuzz_graphs  # noqa: E402
import fuzz_loaders  # noqa: E402

SHORT_SEED = 33


def test_short_seeded_run_of_saved_model_and_checkpoint_mutants(tmp_path):
    s = fuzz_loaders.fuzz("files", SHORT_SEED, 300, workers=1, out=tmp_path)
    assert sum(s["outcomes"].values()) == 300
    assert s["outcomes"].get("ok", 0) > 30, s["outcomes"]  # mutants that still load: the run goes deep
    assert set(s["targets"]) == {"load", "session", "compile", "read_checkpoint", "restore"}
    assert not s["defects"], fuzz_loaders.format_summary(s)


def test_short_seeded_run_of_command_lines(tmp_path):
    s = fuzz_loaders.fuzz("cli", SHORT_SEED, 120, workers=1, out=tmp_path)
    assert sum(s["outcomes"].values()) == 120
    assert s["outcomes"].get("ok", 0) > 5, s["outcomes"]
    assert not s["defects"], fuzz_loaders.format_summary(s)


def test_mutants_and_command_lines_are_a_function_of_seed_and_index():
    a, b = (fuzz_file_mutators.make_file_mutant(3, 41) for _ in range(2))
    assert (a.files, a.mutations, a.targets) == (b.files, b.mutations, b.targets)
    assert fuzz_file_mutators.make_cli_case(3, 41) == fuzz_file_mutators.make_cli_case(3, 41)
    assert fuzz_file_mutators.make_file_mutant(3, 42).files != a.files


def test_graph_fuzzer_reports_a_jit_fallback_as_a_finding(tmp_path, monkeypatch):
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (2, 3))
    h = x
    for i in range(4):  # a cluster of the default minimum size
        h = b.op("Tanh", [b.op("Mul", [h, x], name=f"m{i}", T=np.float32)], name=f"t{i}", T=np.float32)
    b.op("Relu", [h], name="y", T=np.float32)
    write_graphdef(b.graph_def, tmp_path / "g.pbtxt")

    def fails(*a, **k):
        raise CompileError("IREE failed to compile for llvm-cpu: (made to fail)")
    monkeypatch.setattr(iree, "compile_mlir", fails)
    job = {"tool": "session_auto", "graph": str(tmp_path / "g.pbtxt"), "feed_seed": "1:2", "feed_mutation": None,
           "init_op": None, "train_op": None, "loss": None, "fetches": ["y:0"], "kind": "inference"}
    result = fuzz_graphs.run_job(job, str(tmp_path / "cache"))
    assert result["outcome"] == "ok"
    assert "did not compile" in result["fallback"] and "made to fail" in result["fallback"]
