"""The graph before and after clustering as .pbtxt (hlobridge/clustering_dump.py), as
TensorFlow's --tf_xla_clustering_debug writes it."""

import pytest
from google.protobuf import text_format

import hlobridge
from hlobridge import Session, flags
from hlobridge.cli import explain as explain_cli
from hlobridge.debug.clustering_dump import (CLUSTER_ATTR, OUTSIDE_PLAN, REASON_ATTR, after_graphdef,
                                             before_graphdef, dump_clustering)
from hlobridge.frontend.load import load_graph
from hlobridge.frontend.graphdef import read_graphdef
from hlobridge.frontend.proto.schema import GraphDef

from tests import dot_check
from tests.conftest import ROOT
from tests.corpus import Case

MIXED = ROOT / "tests" / "graphs" / "mixed_fallback" / "graph.pbtxt"


def _without(gd: GraphDef, *attrs) -> GraphDef:
    out = GraphDef()
    out.CopyFrom(gd)
    for nd in out.node:
        for a in attrs:
            if a in nd.attr:
                del nd.attr[a]
    return out


def test_after_is_before_plus_cluster_and_reason_attributes():
    e = hlobridge.explain(MIXED)
    before, after = before_graphdef(e.graph), after_graphdef(e.graph, e.clustering)
    original = read_graphdef(MIXED)
    assert [n.name for n in before.node] == [n.name for n in original.node]
    assert list(before.node) == list(original.node)
    assert _without(after, CLUSTER_ATTR, REASON_ATTR) == before
    clusters = {nd.name: nd.attr[CLUSTER_ATTR].s.decode() for nd in after.node if CLUSTER_ATTR in nd.attr}
    reasons = {nd.name: nd.attr[REASON_ATTR].s.decode() for nd in after.node if REASON_ATTR in nd.attr}
    assert clusters == e.clustering.cluster_of
    assert reasons == e.clustering.reasons
    assert set(clusters) | set(reasons) == set(e.graph.nodes)


def test_a_plan_dump_is_a_complete_graph_with_its_fed_producers_marked():
    e = hlobridge.explain(MIXED, fetches=["total:0"], feeds=["x:0"])
    after = after_graphdef(e.graph, e.clustering, e.nodes)
    names = {nd.name for nd in after.node}
    assert set(e.nodes) < names and names - set(e.nodes) == {"x"}
    assert {nd.name: nd.attr[REASON_ATTR].s.decode() for nd in after.node if nd.name == "x"} == {"x": OUTSIDE_PLAN}
    reloaded = load_graph(after)  # every edge resolves
    assert reloaded.nodes["picked"].attrs[CLUSTER_ATTR] == e.clustering.cluster_of["picked"]


def test_dump_files_round_trip_and_never_overwrite(tmp_path):
    e = hlobridge.explain(MIXED)
    first = dump_clustering(tmp_path, e.graph, e.clustering)
    second = dump_clustering(tmp_path, e.graph, e.clustering)
    assert [p.name for p in first] == ["before_mark_for_compilation.pbtxt", "mark_for_compilation.pbtxt",
                                       "mark_for_compilation.dot"]
    assert [p.name for p in second] == ["before_mark_for_compilation_1.pbtxt", "mark_for_compilation_1.pbtxt",
                                        "mark_for_compilation_1.dot"]
    after = text_format.Parse(first[1].read_text(), GraphDef())
    assert after == after_graphdef(e.graph, e.clustering)
    assert load_graph(first[1]).nodes["unique"].attrs[REASON_ATTR] == "no_lowering"
    assert len(dot_check.parse(first[2].read_text()).subgraphs()) == len(e.clustering.clusters)


def test_explain_cli_dump_to(tmp_path, shared_graphs, capsys):
    graph = str(shared_graphs / "seed_linreg_resource" / "graph.pbtxt")
    assert explain_cli.main([graph, "--fetch", "GradientDescent", "--fetch", "Mean:0",
                             "--dump-to", str(tmp_path / "d")]) == 0
    after = load_graph(tmp_path / "d" / "mark_for_compilation.pbtxt")
    clustered = {n for n, node in after.nodes.items() if CLUSTER_ATTR in node.attrs}
    assert clustered and "GradientDescent/update_weights/ResourceApplyGradientDescent" in clustered
    assert after.nodes["x_observed"].attrs[REASON_ATTR] == "graph_input"


@pytest.fixture
def fresh_flags():
    flags.from_environment.cache_clear()
    yield
    flags.from_environment.cache_clear()


def test_a_session_dumps_each_plans_clustering_when_hlobridge_flags_ask(tmp_path, monkeypatch, fresh_flags):
    case = Case.load(ROOT / "tests" / "graphs" / "linreg_batch")
    monkeypatch.setenv("HLOBRIDGE_FLAGS", f"--dump-to={tmp_path}")
    sess = Session(case.graph_path, jit="auto", cache_dir=False)
    clustering = sess.clustering([case.meta["train_op"], case.meta["loss"]], case.step_feeds(0))
    sess.clustering(case.meta["init_op"], case.init_feeds())
    sess.clustering([case.meta["train_op"], case.meta["loss"]], case.step_feeds(1))  # same plan: no new dump
    dirs = sorted(p.name for p in tmp_path.iterdir())
    assert dirs == ["000-mark_for_compilation", "001-mark_for_compilation"]
    step = tmp_path / dirs[0]
    assert sorted(p.name for p in step.iterdir()) == ["before_mark_for_compilation.pbtxt",
                                                      "mark_for_compilation.dot", "mark_for_compilation.pbtxt"]
    after = load_graph(step / "mark_for_compilation.pbtxt")
    assert {n: node.attrs[CLUSTER_ATTR] for n, node in after.nodes.items()
            if CLUSTER_ATTR in node.attrs} == clustering.cluster_of
    fed = [n for n in case.step_feeds(0)]
    assert all(after.nodes[f.split(":")[0]].attrs[REASON_ATTR] == OUTSIDE_PLAN for f in fed)


def test_a_dump_pass_filter_that_does_not_match_skips_the_clustering_dump(tmp_path, monkeypatch, fresh_flags):
    case = Case.load(ROOT / "tests" / "graphs" / "linreg_batch")
    monkeypatch.setenv("HLOBRIDGE_FLAGS", f"--dump-to={tmp_path} --dump-pass=simplify")
    Session(case.graph_path, jit="auto", cache_dir=False).clustering(case.meta["init_op"], case.init_feeds())
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv("HLOBRIDGE_FLAGS", f"--dump-to={tmp_path} --dump-pass=mark_for")
    flags.from_environment.cache_clear()
    Session(case.graph_path, jit="auto", cache_dir=False).clustering(case.meta["init_op"], case.init_feeds())
    assert [p.name for p in tmp_path.iterdir()] == ["000-mark_for_compilation"]
