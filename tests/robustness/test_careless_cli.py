"""What a careless user types into hlobridge-compile: each a one-line error naming the flag (issue
33), the output path refused before anything compiles."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from hlobridge.cli import compile as compile_cli
from hlobridge.frontend.graph_builder import GraphBuilder
from hlobridge.frontend.graphdef import write_graphdef
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    """y = Relu(x[?,3] * w)."""
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (None, 3))
    w = b.const("w", np.array([1.0, -2.0, 0.5], np.float32))
    b.op("Relu", [b.op("Mul", [x, w], name="mul", T=np.float32)], name="y", T=np.float32)
    path = tmp_path_factory.mktemp("g") / "g.pbtxt"
    write_graphdef(b.graph_def, path)
    return path


def _error(capsys, graph, *argv) -> str:
    from hlobridge.cli.common import run_main
    assert run_main(compile_cli.PROG, compile_cli.main, [str(graph), *argv]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err.strip()


@pytest.mark.parametrize("argv,message", [
    (["--input-shape", "x=-1,3"], "error: bad shape '-1,3': dimension -1 is negative"),
    (["--input-shape", "x=4,3", "--outputs", "y:7"], "error: --outputs names y:7, but node 'y' (Relu) has 1 output(s)"),
    (["--input-shape", "x=4,3", "--inputs", "x:1"], "error: --inputs names x:1, but node 'x' (Placeholder) has 1 output"),
    (["--input-shape", "x=99999999999,3"], "error: --input-shape x=99999999999,3: a tensor of 99,999,999,999 elements"),
    (["--input-shape", "x=0,99999999999999999999"], "error: --input-shape x=0,99999999999999999999: a tensor of"),
    (["--input-shape", "x=4,three"], "error: bad shape '4,three': expected comma-separated integers"),
])
def test_bad_shapes_and_tensor_names(graph, tmp_path, capsys, argv, message):
    assert message in _error(capsys, graph, "-o", str(tmp_path / "m.vmfb"), *argv)


@pytest.mark.parametrize("output,message", [
    ("/nonexistent_dir/m.vmfb", "error: -o /nonexistent_dir/m.vmfb: the folder /nonexistent_dir does not exist"),
    ("{tmp}", "error: -o {tmp}: is a directory; give a file name (e.g. {tmp}/model.vmfb)"),
    ("/proc/x.vmfb", "error: -o /proc/x.vmfb: cannot write in /proc"),
])
def test_unwritable_output_is_refused_before_compiling(graph, tmp_path, capsys, monkeypatch, output, message):
    compiles = []
    monkeypatch.setattr(compile_cli.compiler, "compile_graph", lambda *a, **k: compiles.append(a))
    monkeypatch.setattr(compile_cli.compiler, "lower_graph", lambda *a, **k: compiles.append(a))
    output = output.format(tmp=tmp_path)
    for emit in ("vmfb", "stablehlo"):
        err = _error(capsys, graph, "-o", output, "--input-shape", "x=4,3", "--emit", emit)
        assert message.format(tmp=tmp_path) in err
    assert compiles == []  # nothing lowered, nothing compiled


def test_unwritable_stats_file_is_refused_before_compiling(graph, tmp_path, capsys):
    err = _error(capsys, graph, "-o", str(tmp_path / "m.vmfb"), "--input-shape", "x=4,3",
                 "--stats", "/nonexistent_dir/s.json")
    assert "error: --stats /nonexistent_dir/s.json: the folder /nonexistent_dir does not exist" in err
    assert not (tmp_path / "m.vmfb").exists()


def test_as_typed_in_a_shell(graph, tmp_path):
    """The installed command, in a subprocess: exit status 1 and one line."""
    proc = subprocess.run([sys.executable, "-m", "hlobridge.cli.compile", str(graph), "-o", "/proc/x.vmfb",
                           "--input-shape", "x=4,3"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr == "hlobridge-compile: error: -o /proc/x.vmfb: cannot write in /proc: No such file or directory\n"
