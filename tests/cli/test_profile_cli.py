"""hlobridge-profile as users type it: a GraphDef with fetches, random feeds of given shapes and
an initializer; a corpus case folder; and one-line errors for bad arguments."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hlobridge.cli import profile as profile_cli

from tests.debug.test_timeline import check_trace

PROG = "hlobridge-profile"


def _table_rows(text: str) -> list[list[str]]:
    """The rows of the top-N table (the lines after its header, up to the next section)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["rank", "ms"]) + 1
    rows = []
    for line in lines[start:]:
        if not line.startswith("  "):
            break
        rows.append(line.split())
    return rows


def test_console_script_profiles_a_graph_with_random_feeds(shared_graphs, tmp_path):
    """The installed entry point on cnn_train's GraphDef, as its README's user would type it."""
    script = Path(sys.executable).parent / PROG
    assert script.exists(), f"{script} is missing: install the package again (pip install -e .) to get it"
    trace = tmp_path / "step.json"
    proc = subprocess.run([script, shared_graphs / "cnn_train" / "graph.pbtxt", "--fetch", "train",
                           "--fetch", "loss:0", "--init", "init", "--input-shape", "x:0=8,28,28,1",
                           "--input-shape", "y_:0=8,10", "--steps", "1", "--iterations", "1", "--top", "6",
                           "--trace", trace], capture_output=True, text=True,
                          env={**os.environ, "HLOBRIDGE_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Session step: ") and "cluster_0: " in proc.stdout
    compiles = [line for line in proc.stdout.splitlines() if " compiled in " in line]
    assert len(compiles) == 2 and all("hlobridge" in line and "IREE" in line for line in compiles)  # init, step
    assert "cluster_0 (float32[8,10], float32[8,28,28,1]): compiled in " in proc.stdout
    rows = _table_rows(proc.stdout)
    assert len(rows) == 6 and [r[0] for r in rows] == ["1", "2", "3", "4", "5", "6"]
    dispatch_rows = [r for r in rows if r[6].startswith("#")]
    assert dispatch_rows and all(r[5] == "cluster_0" for r in dispatch_rows)
    named = " ".join(" ".join(r[8:]) for r in dispatch_rows)
    assert any(n in named for n in ("conv1/Conv2D", "conv2/Conv2D", "fc1/MatMul", "Conv2DBackprop"))
    events = check_trace(json.loads(trace.read_text()))
    assert any(e["cat"] == "dispatch" for e in events)


def test_a_corpus_case_folder_runs_its_protocol_and_json_adds_up(shared_graphs, capsys):
    assert profile_cli.main([str(shared_graphs / "mlp_adam"), "--steps", "1", "--iterations", "1",
                             "--json", "--top", "1000"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [c["name"] for c in data["clusters"]] == ["cluster_0"] and data["clusters"][0]["dispatches"] > 10
    assert sum(r["ms"] for r in data["rows"]) == pytest.approx(data["step_ms"], rel=1e-9)
    dispatches = [r for r in data["rows"] if r["kind"] == "dispatch"]
    assert len(dispatches) == data["clusters"][0]["dispatches"]
    assert data["compiles"] and {c["source"] for c in data["compiles"]} <= {"compiled", "disk", "memory"}
    for c in data["compiles"]:  # a compile's time is hlobridge's part, IREE's, and a little between
        parts = c["lowering_s"] + c["iree_s"]
        assert (parts > 0 and parts <= c["seconds"]) if c["source"] == "compiled" else parts == 0
    assert all(r["nodes"] and len(r["nodes"]) == len(r["ops"]) for r in dispatches)
    assert {"ResourceApplyAdam", "MatMul"} <= {op for r in dispatches for op in r["ops"]}


def test_a_small_cluster_is_profiled_on_the_calling_thread(shared_graphs, capsys):
    """seed_mnist_softmax's step (about 5 Mflop) runs on local-sync: replayed there, and said."""
    assert profile_cli.main([str(shared_graphs / "seed_mnist_softmax"), "--steps", "1", "--iterations", "1",
                             "--json"]) == 0
    (cluster,) = json.loads(capsys.readouterr().out)["clusters"]
    assert cluster["executor"] == "cpu" and cluster["dispatches"] > 5
    assert profile_cli.main([str(shared_graphs / "seed_mnist_softmax"), "--steps", "1", "--iterations", "1"]) == 0
    assert "on the calling thread (local-sync" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["{cnn}", "--steps", "0"], "--steps must be >= 1, got 0"),
    (["{cnn}/graph.pbtxt"], "give --fetch NAME"),
    (["{cnn}/graph.pbtxt", "--fetch", "loss:0"], "placeholder x:0 has shape ?,28,28,1: give --input-shape x:0=DIMS"),
    (["{cnn}/graph.pbtxt", "--fetch", "loss:0", "--input-shape", "x:0=8;28"], "bad shape '8;28'"),
    (["{cnn}/graph.pbtxt", "--fetch", "loss:0", "--input-shape", "nope:0=8"], "nope"),
    (["{cnn}/graph.pbtxt", "--fetch", "loss:0", "--feed", "x:0=missing.npy"], "--feed x:0: cannot read missing.npy"),
    (["{cnn}/graph.pbtxt", "--fetch", "loss:0", "--input-shape", "loss:0=1"], "--input-shape loss:0: not a placeholder"),
    (["{cnn}/graph.pbtxt", "--fetch", "nope:0", "--input-shape", "x:0=8,28,28,1"], "no node named 'nope'"),
    (["no/such/graph.pbtxt", "--fetch", "y:0"], "no/such/graph.pbtxt"),
])
def test_bad_arguments_are_one_line_errors(shared_graphs, capsys, argv, message):
    argv = [a.replace("{cnn}", str(shared_graphs / "cnn_train")) for a in argv]
    assert profile_cli.run_main(PROG, profile_cli.main, argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{PROG}: error: ") and message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
