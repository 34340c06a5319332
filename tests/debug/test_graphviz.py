"""Graphviz output (hlobridge/debug/graphviz.py): the clustered TF graph and StableHLO with fusion
groups. Every file is parsed by tests/dot_check.py (structure and content) and, where
Graphviz is installed, rendered by `dot -Tpng`."""

import shutil
import subprocess

import pytest

import hlobridge
from hlobridge.cli import compile as compile_cli
from hlobridge.cli import explain as explain_cli
from hlobridge.compile.driver import lower_graph
from hlobridge.debug.graphviz import clustered_graph_dot, quote, stablehlo_dot

from tests import dot_check
from tests.conftest import ROOT

MIXED = ROOT / "tests" / "graphs" / "mixed_fallback" / "graph.pbtxt"

REGIONS = """
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<f32>) {
  %0:2 = flow.dispatch.region -> (tensor<4xf32>, tensor<4xf32>) {
    %1 = stablehlo.add %a, %b : tensor<4xf32>
    %2 = stablehlo.multiply %1, %1 : tensor<4xf32>
    flow.return %1, %2 : tensor<4xf32>, tensor<4xf32>
  }
  %3 = stablehlo.subtract %0#1, %a : tensor<4xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %4 = flow.dispatch.region -> (tensor<f32>) {
    %5 = stablehlo.reduce(%0#0 init: %z) applies stablehlo.add across dimensions = [0]
        : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    flow.return %5 : tensor<f32>
  }
  return %3, %4 : tensor<4xf32>, tensor<f32>
}
"""


def checked(text: str) -> dot_check.Dot:
    """Parse strictly; render with Graphviz where it is installed (no warnings allowed)."""
    parsed = dot_check.parse(text)
    if shutil.which("dot"):
        out = subprocess.run(["dot", "-Tpng"], input=text.encode(), capture_output=True, timeout=120)
        assert out.returncode == 0 and out.stderr == b"", out.stderr.decode()
        assert out.stdout.startswith(b"\x89PNG\r\n\x1a\n")
    return parsed


def _by_label(dot, first_line):
    return [n for n, a in dot.nodes.items() if a.get("label", "").split("\n")[0] == first_line]


def test_quote_escapes_what_dot_would_misread():
    assert quote('a "b" \\ c\nd') == r'"a \"b\" \\ c\nd"'
    name, label = quote('x"y'), quote("1\n2")
    assert dot_check.parse(f"digraph g {{ {name} [label={label}]; }}").nodes == {'x"y': {"label": "1\n2"}}


def test_clusters_are_boxes_and_left_out_nodes_carry_their_reason():
    e = hlobridge.explain(MIXED)
    dot = checked(clustered_graph_dot(e.graph, e.clustering))
    boxes = {s.name: set(s.all_nodes()) for s in dot.subgraphs()}
    assert boxes == {c.name: set(c.nodes) for c in e.clustering.clusters}
    assert set(dot.nodes) == set(e.graph.nodes)
    for node, code in e.clustering.reasons.items():
        assert dot.nodes[node]["label"].split("\n")[2] == f"[{code}]", node
        assert code in dot.nodes[node]["tooltip"]
    data = [(r.node, n) for n in e.graph.nodes for r in e.graph.nodes[n].inputs]
    control = [(c, n) for n in e.graph.nodes for c in e.graph.nodes[n].control_inputs]
    assert sorted((a, b) for a, b, attrs in dot.edges if "style" not in attrs) == sorted(data)
    assert sorted((a, b) for a, b, attrs in dot.edges if attrs.get("style") == "dashed") == sorted(control)
    # Unique's second output feeds Cast: the edge says which output
    assert ("unique", "Cast", {"taillabel": ":1"}) in dot.edges


def test_a_plan_draws_its_fed_producers_outside_the_run():
    e = hlobridge.explain(MIXED, fetches=["total:0"], feeds=["x:0"])
    dot = checked(clustered_graph_dot(e.graph, e.clustering, e.nodes))
    assert "(fed: outside this run)" in dot.nodes["x"]["label"] and dot.nodes["x"]["style"] == "dashed"
    assert "s" in dot.nodes  # a placeholder the run feeds through its own edge: part of the plan
    assert "as_string" not in dot.nodes  # not needed for total:0
    assert all(a in dot.nodes and b in dot.nodes for a, b, _ in dot.edges)


def test_dispatch_regions_are_subgraphs_of_their_ops():
    dot = checked(stablehlo_dot(REGIONS, title="regions"))
    [func] = dot.subgraphs()[:1]
    assert func.name == "cluster_func_main"
    regions = [s for s in dot.subgraphs() if s.name.startswith("cluster_main.region")]
    labels = [sorted(dot.nodes[n]["label"].split("\n")[0] for n in r.all_nodes()) for r in regions]
    assert labels == [["add", "multiply"], ["reduce(add)"]]
    assert [r.attrs["label"] for r in regions] == ["dispatch region 1: 2 ops", "dispatch region 2: 1 ops"]
    [add], [mul], [sub], [red] = (_by_label(dot, x) for x in ("add", "multiply", "subtract", "reduce(add)"))
    edges = {(a, b) for a, b, _ in dot.edges}
    # a region's results come from the ops its flow.return returns
    assert {(mul, sub), (add, red), ("main.arg0", add), ("main.arg1", add), ("main.arg0", sub),
            (sub, "main.ret"), (red, "main.ret")} <= edges
    assert not any("flow.return" in a["label"] for a in dot.nodes.values())


def test_without_regions_every_op_is_a_node_named_after_its_tf_node():
    lowered = lower_graph(ROOT / "examples" / "cnn_infer_bn" / "graph.pbtxt", input_shapes={"images:0": (2, 32, 32, 3)})
    with lowered.context:
        [func] = [op for op in lowered.module.body.operations if op.operation.name == "func.func"]
        n_ops = len(list(func.regions[0].blocks[0].operations))
    dot = checked(stablehlo_dot(lowered.module))
    assert len(dot.subgraphs()) == 1  # the function's box only
    assert len(dot.nodes) == n_ops + 1  # ops (return included) and the one argument
    conv = [a["label"] for a in dot.nodes.values() if a["label"].startswith("dot_general")]
    assert conv and all(len(label.split("\n")) == 3 for label in conv)  # op, type, TF node


def test_explain_cli_writes_dot(tmp_path, capsys):
    out = tmp_path / "clusters.dot"
    assert explain_cli.main([str(MIXED), "--dot", str(out)]) == 0
    dot = checked(out.read_text())
    assert len(dot.subgraphs()) == 2
    missing = tmp_path / "no" / "such" / "dir.dot"
    assert explain_cli.run_main("hlobridge-explain", explain_cli.main, [str(MIXED), "--dot", str(missing)]) == 1
    assert f"cannot write {missing}" in capsys.readouterr().err


@pytest.mark.parametrize("bad", ['digraph g { "a" -> "b"; }', 'digraph g { "a" [label="x"] }',
                                 'digraph g { subgraph "c" { "a"; }'])
def test_the_structural_check_rejects_broken_dot(bad):
    with pytest.raises(dot_check.DotSyntaxError):
        dot_check.parse(bad)


def test_compile_dumps_the_final_stablehlo_as_dot(tmp_path):
    graph = ROOT / "examples" / "cnn_infer_bn" / "graph.pbtxt"
    args = [str(graph), "--emit", "stablehlo", "-o", str(tmp_path / "m.mlir"), "--input-shape", "images:0=2,32,32,3"]
    assert compile_cli.main(args + ["--dump-to", str(tmp_path / "all")]) == 0
    names = sorted(p.name for p in (tmp_path / "all").iterdir())
    graphviz = [n for n in names if n.endswith("-graphviz.dot")]
    assert len(graphviz) == 1 and graphviz[0] == names[-1]  # after the last pass
    dot = checked((tmp_path / "all" / graphviz[0]).read_text())
    assert dot.root.attrs["label"] == str(graph)
    assert compile_cli.main(args + ["--dump-to", str(tmp_path / "only"), "--dump-pass", "graphviz"]) == 0
    assert [p.name for p in (tmp_path / "only").iterdir()] == ["00-graphviz.dot"]


def test_a_session_dumps_each_cluster_compile_as_dot(tmp_path, monkeypatch):
    from hlobridge import Session, flags
    from hlobridge.compile.cache import clear_memory_cache

    from tests.corpus import Case

    case = Case.load(ROOT / "tests" / "graphs" / "linreg_batch")
    monkeypatch.setenv("HLOBRIDGE_FLAGS", f"--dump-to={tmp_path} --dump-pass=graphviz")
    flags.from_environment.cache_clear()
    clear_memory_cache()
    try:
        sess = Session(case.graph_path, jit="auto", cache_dir=False)
        sess.run(case.meta["init_op"], case.init_feeds())
        sess.run([case.meta["train_op"], case.meta["loss"]], case.step_feeds(0))
    finally:
        flags.from_environment.cache_clear()
    [cluster_dir] = [p for p in tmp_path.iterdir() if p.name.endswith("-cluster_0")]
    assert [p.name for p in cluster_dir.iterdir()] == ["00-graphviz.dot"]
    dot = checked((cluster_dir / "00-graphviz.dot").read_text())
    assert dot.root.attrs["label"] == "cluster_0"
    assert any("ResourceApplyGradientDescent" in a["label"] for a in dot.nodes.values())
