"""The progress line (debug/progress.py): on a terminal while a long compile runs, erased when it
ends, absent when stderr is piped or -q is given; the library logs and never prints."""

import ast
import io
import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from hlobridge import Session
from hlobridge.debug import progress
from hlobridge.frontend.graph_builder import GraphBuilder
from hlobridge.frontend.graphdef import write_graphdef
from tests.conftest import ROOT


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def fast(monkeypatch):
    """Lines from the first moment, redrawn often; the mode put back afterwards."""
    monkeypatch.setattr(progress, "DELAY", 0.0)
    monkeypatch.setattr(progress, "INTERVAL", 0.01)
    monkeypatch.delenv("HLOBRIDGE_PROGRESS", raising=False)
    yield
    progress.configure("auto")


def _lines(written: str) -> list[str]:
    """The status lines drawn (each begins with carriage return and erase-line)."""
    return [part for part in written.split("\r\x1b[K") if part]


def _work(seconds=0.1):
    with progress.activity("outer"):
        progress.expect(2)
        progress.report("lowering", "cluster_0 (3 ops)")
        with progress.activity("inner"):  # reports into the outer line
            time.sleep(seconds)
            progress.advance()
            progress.report("iree-compile", "cluster_0 (3 ops)")
            progress.phase("flow")
            time.sleep(seconds)


def test_a_terminal_sees_the_stage_count_and_time_then_an_erased_line(fast):
    terminal = FakeTerminal()
    progress.configure("auto", terminal)
    _work()
    lines = _lines(terminal.getvalue())
    assert any(line.startswith("hlobridge 0 s, outer [0/2]: lowering: cluster_0 (3 ops)") for line in lines)
    assert "hlobridge 0 s, outer [1/2]: iree-compile (flow): cluster_0 (3 ops)" in lines
    assert not any("inner" in line for line in lines)
    assert terminal.getvalue().endswith("\r\x1b[K")  # erased at the end


@pytest.mark.parametrize("how", ["pipe", "off", "env"])
def test_nothing_is_drawn_off_a_terminal_or_when_switched_off(fast, monkeypatch, how):
    stream = io.StringIO() if how == "pipe" else FakeTerminal()
    progress.configure("off" if how == "off" else "auto", stream)
    if how == "env":
        monkeypatch.setenv("HLOBRIDGE_PROGRESS", "0")
    _work(0.05)
    assert stream.getvalue() == ""


def test_nothing_is_drawn_before_the_delay(monkeypatch):
    monkeypatch.setattr(progress, "DELAY", 5.0)
    terminal = FakeTerminal()
    progress.configure("on", terminal)
    try:
        _work(0.05)
    finally:
        progress.configure("auto")
    assert terminal.getvalue() == ""


def test_a_sessions_first_run_counts_its_clusters(fast, tmp_path):
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (2, 3))
    y = x
    for i in range(4):
        y = b.op("Tanh", [b.op("Mul", [y, y], name=f"m{i}", T=np.float32)], name=f"t{i}", T=np.float32)
    terminal = FakeTerminal()
    progress.configure("on", terminal)
    session = Session(b.graph_def, cache_dir=False)
    out = session.run("t3:0", {"x:0": np.ones((2, 3), np.float32)})
    assert out.shape == (2, 3)
    lines = _lines(terminal.getvalue())
    assert any(line.startswith("hlobridge") and "Session.run, first run [" in line and "/1]" in line
               for line in lines), lines
    assert any("lowering: " in line or "iree-compile" in line for line in lines), lines
    before = terminal.getvalue()
    session.run("t3:0", {"x:0": np.ones((2, 3), np.float32)})  # compiled: no activity
    assert terminal.getvalue() == before


@pytest.fixture(scope="module")
def graph_file(tmp_path_factory):
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (None, 3))
    b.op("Relu", [b.op("Mul", [x, x], name="mul", T=np.float32)], name="y", T=np.float32)
    path = tmp_path_factory.mktemp("graph") / "g.pbtxt"
    write_graphdef(b.graph_def, path)
    return path


def _compile(graph_file, tmp_path, *flags, terminal=True, delay="0"):
    """hlobridge-compile as a user types it, its stderr a terminal (a pty) or a pipe."""
    cmd = [Path(sys.executable).parent / "hlobridge-compile", graph_file, "-o", tmp_path / "m.vmfb",
           "--input-shape", "x=4,3", *flags]
    env = {**os.environ, "HLOBRIDGE_PROGRESS_DELAY": delay}
    env.pop("HLOBRIDGE_PROGRESS", None)
    if not terminal:
        run = subprocess.run(cmd, capture_output=True, text=True, env=env)
        return run.returncode, run.stderr
    leader, follower = pty.openpty()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return proc.wait(), b"".join(chunks).decode(errors="replace")


def test_the_cli_shows_progress_on_a_terminal_and_none_in_a_pipe_or_with_q(graph_file, tmp_path):
    rc, terminal = _compile(graph_file, tmp_path)
    assert rc == 0, terminal
    assert "\x1b[K" in terminal and "compile: iree-compile (" in terminal and "wrote " in terminal
    rc, piped = _compile(graph_file, tmp_path, "-v", terminal=False)
    assert rc == 0, piped
    assert "\x1b[K" not in piped and "hlobridge " not in piped.replace("hlobridge.", "")
    assert "hlobridge.compile.driver: lowered" in piped and "iree-compile (llvm-cpu)" in piped  # -v logs
    rc, quiet = _compile(graph_file, tmp_path, "-q", delay="1")  # (-q is read after the line could start)
    assert rc == 0 and quiet.strip() == "", quiet


def test_the_library_logs_and_never_prints():
    found = []
    for path in (ROOT / "hlobridge").rglob("*.py"):
        if "cli" in path.relative_to(ROOT).parts or 'if __name__ == "__main__":' in path.read_text():
            continue  # a command's output (cli/, or a `python -m` entry point) is its product
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []
