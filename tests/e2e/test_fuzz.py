"""The fuzzer (tools/fuzz_graphs.py): a short seeded run finds no defect, and every defect it ever
found stays fixed (tests/e2e/fuzz_regressions/).

A regression folder holds the mutant (graph.pbtxt or graph.pb) and job.json: the job the fuzzer
ran (tool, feeds, fetches) and `expect`: the clean error a user should get (`message`, a regular
expression), `open: true` while the defect is not fixed yet (an xfail that fails once it passes:
then drop `open`), and where it came from.
"""

import json
import re
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import fuzz_graphs  # noqa: E402
import fuzz_mutators  # noqa: E402

REGRESSIONS = Path(__file__).parent / "fuzz_regressions"
CASES = sorted(p.parent for p in REGRESSIONS.glob("*/job.json"))
SHORT_SEED, SHORT_COUNT = 15, 400

def test_short_seeded_run_finds_no_defect(shared_graphs, tmp_path):
    summary = fuzz_graphs.fuzz(SHORT_SEED, SHORT_COUNT, workers=1, timeout=30, out=tmp_path)
    counts = summary["mutants"]
    assert sum(counts.values()) == SHORT_COUNT
    assert counts.get("ok", 0) > SHORT_COUNT // 10, counts  # mutants that still run: the run goes deep
    assert not summary["defects"], fuzz_graphs.format_summary(summary)


def test_mutants_are_a_function_of_seed_and_index(shared_graphs):
    corpus = fuzz_mutators.load_corpus()
    a, b = (fuzz_mutators.make_mutant(3, 41, corpus) for _ in range(2))
    assert (a.data, a.mutations, a.tools) == (b.data, b.mutations, b.tools)
    assert fuzz_mutators.make_mutant(3, 42, corpus).data != a.data


def test_binary_wire_tree_round_trips(shared_graphs):
    data = (shared_graphs / "cnn_infer_bn" / "graph.pb").read_bytes()
    assert fuzz_mutators.write_wire(fuzz_mutators.parse_wire(data)) == data


def test_worker_reports_hangs_and_crashes_without_dying(tmp_path):
    worker = fuzz_graphs.Worker(2048, str(tmp_path))
    try:
        job = {"tool": "explain", "graph": str(tmp_path / "missing.pbtxt")}
        assert worker.run(job, 30)["outcome"] == "error"
        worker.proc.stdin.write("not json\n")  # the worker dies on a malformed job: a crash
        assert worker.run(job, 30)["outcome"] == "crash"
        assert worker.run(job, 30)["outcome"] == "error"  # restarted
    finally:
        worker.stop()


@pytest.fixture(scope="module")
def regression_results():
    """Every regression job, replayed in one worker (a subprocess with the fuzzer's limits)."""
    return fuzz_graphs.replay_all(CASES)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=pytest.mark.xfail(
    strict=True, reason=json.loads((c / "job.json").read_text())["expect"].get("open", ""))
    if json.loads((c / "job.json").read_text())["expect"].get("open") else ()) for c in CASES])
def test_fuzz_regression_gives_a_clean_error(case, regression_results):
    expect = json.loads((case / "job.json").read_text())["expect"]
    result = regression_results[case.name]
    assert result["outcome"] == "error", result
    assert re.search(expect["message"], result["message"]), result["message"]
    assert "Traceback" not in result["message"]
