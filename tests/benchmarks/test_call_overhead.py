"""benchmarks/call_overhead.py as a user runs it, on the tiny graph: every path answers (IREE's
own benchmark included) and, counted rather than timed, a warm call stays a straight call: the
Python function calls per call (cProfile) of each API have a ceiling, so that per-call work
creeping back in fails here, whatever the machine's load."""

import json

import pytest

from benchmarks import call_overhead as bench

# Python calls per warm call measured 2026-11-28 (before the steady state: 112, 67, 49), plus room
CEILINGS = {"Session.run": 60, "runtime.run": 40, "runtime.main": 30}


def test_every_path_is_timed_and_a_warm_call_stays_straight(capsys, tmp_path):
    out = tmp_path / "calls.json"
    assert bench.main(["tiny", "--repeat", "1", "--block-s", "0.01", "--profile", "--markdown",
                       "--json-out", str(out)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0] == "| graph | path | device | us/call median (best) | Python calls/call |"
    rows = {r["path"]: r for r in json.loads(out.read_text())}
    assert list(rows) == ["Session.run", "Session.run pool", "runtime.run", "runtime.main", "invoke",
                          "iree-benchmark-module"]
    assert all(r["us_best"] > 0 for r in rows.values())
    assert rows["Session.run"]["device"] == "cpu" and rows["Session.run pool"]["device"] == "cpu-task"
    for path, ceiling in CEILINGS.items():
        assert rows[path]["python_calls"] <= ceiling, path


def test_an_unknown_graph_is_a_usage_error(capsys):
    with pytest.raises(SystemExit):
        bench.main(["huge"])
    assert "no graph huge; choose from empty, tiny" in capsys.readouterr().err
