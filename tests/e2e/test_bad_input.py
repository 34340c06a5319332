"""The bad inputs issue 15 lists, made from a real graph as a careless user or an attacker would,
through `hlobridge-compile` as typed and through a Session: each is one line naming the node,
answered within seconds; never a traceback, a crash or a hang."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from google.protobuf import text_format

from hlobridge import HlobridgeError, Session
from hlobridge.frontend.graphdef import read_graphdef

BIN = Path(sys.executable).parent


def _first(gd, op):
    return next(n for n in gd.node if n.op == op)


def _variant_const(gd):
    _first(gd, "Const").attr["dtype"].type = 21  # DT_VARIANT


def _batch_matmul_with_one_input(gd):
    n = _first(gd, "MatMul")
    n.op = "BatchMatMulV2"
    del n.input[1]
    for a in ("transpose_a", "transpose_b", "grad_a", "grad_b"):
        n.attr.pop(a, None)


def _op_swapped_in_a_cycle(gd):
    n = _first(gd, "MatMul")
    n.op = "Relu"  # takes one input, has two; and its first input now reads its own consumer
    consumer = next(m for m in gd.node if any(i.split(":")[0] == n.name for i in m.input))
    n.input[0] = consumer.name


def _huge_dimension(gd):
    _first(gd, "Placeholder").attr["shape"].shape.dim[0].size = 2 ** 40


def _huge_constant(gd):
    t = _first(gd, "Const").attr["value"].tensor
    t.ClearField("tensor_content")
    del t.tensor_shape.dim[:]
    t.tensor_shape.dim.add(size=2 ** 20)
    t.tensor_shape.dim.add(size=2 ** 20)
    t.float_val.append(1.0)


CASES = {
    "variant_const": (_variant_const, "node '"),
    "batch_matmul_with_one_input": (_batch_matmul_with_one_input, "(BatchMatMulV2): takes 2 input(s) (x, y), has 1"),
    "op_swapped_in_a_cycle": (_op_swapped_in_a_cycle, "cycle"),
    "huge_dimension": (_huge_dimension, "over the limit"),
    "huge_constant": (_huge_constant, "over the limit"),
}


@pytest.fixture(params=sorted(CASES))
def bad_graph(request, shared_graphs, tmp_path):
    mutate, message = CASES[request.param]
    gd = read_graphdef(shared_graphs / "cnn_infer_bn" / "graph.pbtxt")
    mutate(gd)
    path = tmp_path / f"{request.param}.pbtxt"
    path.write_text(text_format.MessageToString(gd))
    return path, message


def test_hlobridge_compile_gives_one_line(bad_graph, tmp_path):
    path, message = bad_graph
    shape = [] if path.stem == "huge_dimension" else ["--input-shape", "images=1,32,32,3"]  # it has its own
    proc = subprocess.run([BIN / "hlobridge-compile", path, "-o", tmp_path / "m.vmfb", *shape],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("hlobridge-compile: error: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert message in proc.stderr


def test_hlobridge_explain_explains_or_gives_one_line(bad_graph):
    # explain clusters without inferring shapes: a node it cannot judge is reported, not fatal
    path, message = bad_graph
    proc = subprocess.run([BIN / "hlobridge-explain", path], capture_output=True, text=True, timeout=60)
    assert "Traceback" not in proc.stderr
    assert (proc.returncode, proc.stderr) == (0, "") or (proc.returncode == 1 and proc.stderr.count("\n") == 1)


def test_a_session_raises_one_hlobridge_error(bad_graph):
    path, message = bad_graph
    with pytest.raises(HlobridgeError) as e:
        sess = Session(path, jit="auto", cache_dir=False)
        sess.run("Softmax:0", {"images:0": np.zeros((1, 32, 32, 3), np.float32)})
    assert "\n" not in str(e.value)
