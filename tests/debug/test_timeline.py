"""Timelines (hlobridge/debug/timeline.py): Session.run(..., options=RunOptions(trace=True)) writes
Chrome trace-event JSON, one complete event per cluster launch, reference-kernel op and compile."""

import json
import statistics
import warnings
from pathlib import Path

import pytest

from hlobridge import InputError, RunMetadata, RunOptions, Session
from hlobridge.runtime.cluster_launch import ClusterLaunch
from hlobridge.compile.cache import clear_memory_cache
from hlobridge.compile.driver import CompileOptions
from hlobridge.errors import JitFallbackWarning

from tests.corpus import Case
from tests.conftest import TESTS

GRAPHS = TESTS / "graphs"
METADATA = {"process_name": "name", "thread_name": "name", "thread_sort_index": "sort_index"}


def check_trace(trace: dict) -> list[dict]:
    """The trace-event format's rules that chrome://tracing and Perfetto rely on; returns the
    complete ("X") events."""
    assert isinstance(trace["traceEvents"], list) and trace.get("displayTimeUnit") in ("ms", "ns")
    named_threads, named_processes, complete = set(), set(), []
    for e in trace["traceEvents"]:
        assert isinstance(e["name"], str) and e["name"], e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        if e["ph"] == "M":
            assert e["name"] in METADATA and METADATA[e["name"]] in e["args"], e
            named_threads.add((e["pid"], e["tid"])) if e["name"] == "thread_name" else None
            named_processes.add(e["pid"]) if e["name"] == "process_name" else None
        else:
            assert e["ph"] == "X", e
            assert isinstance(e["cat"], str) and isinstance(e["args"], dict)
            assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float)) and e["dur"] >= 0
            complete.append(e)
    for e in complete:
        assert (e["pid"], e["tid"]) in named_threads and e["pid"] in named_processes, e
    # complete events on one thread must nest (chrome://tracing drops ones that overlap partly)
    for tid in {e["tid"] for e in complete}:
        stack = []
        for e in sorted((e for e in complete if e["tid"] == tid), key=lambda e: (e["ts"], -e["dur"])):
            while stack and stack[-1] <= e["ts"]:
                stack.pop()
            assert not stack or e["ts"] + e["dur"] <= stack[-1] + 1e-3, f"{e['name']} overlaps its parent"
            stack.append(e["ts"] + e["dur"])
    return complete


def _start(case, jit, **options):
    sess = Session(case.graph_path, jit=jit, cache_dir=False, **options)
    sess.run(case.meta["init_op"], case.init_feeds())
    return sess, [case.meta["train_op"], case.meta["loss"]]


def _within(inner, outer) -> bool:
    return outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + 1e-3


def test_a_traced_step_is_valid_trace_event_json_with_one_event_per_unit(tmp_path):
    case = Case.load(GRAPHS / "linreg_batch")
    clear_memory_cache()
    sess, fetches = _start(case, "auto")
    path = tmp_path / "timeline.ctf.json"
    _, loss = sess.run(fetches, case.step_feeds(0), options=RunOptions(trace=True, trace_path=path))
    assert loss == pytest.approx(case.array(case.meta["train"]["loss_per_step"])[0], rel=1e-5)
    events = check_trace(json.loads(path.read_text()))
    by_cat = {c: [e for e in events if e["cat"] == c] for c in ("run", "cluster", "kernel", "compile")}
    [run] = by_cat["run"]
    [launch] = by_cat["cluster"]
    [compile_] = by_cat["compile"]
    assert launch["name"] == launch["args"]["cluster"] == "cluster_0"
    assert launch["args"]["ran_on"] == "IREE" and launch["args"]["compiled_now"] == ["compiled"]
    feeds = {k if ":" in k else k + ":0": f"{v.dtype}[{','.join(map(str, v.shape))}]"
             for k, v in case.step_feeds(0).items()}
    assert launch["args"]["inputs"] == feeds
    assert launch["args"]["variables"] and launch["args"]["outputs"] == {case.meta["loss"]: "float32[]"}
    assert sum(launch["args"]["op_types"].values()) == launch["args"]["ops"]
    [event] = sess.compile_events
    assert compile_["args"] == {"cluster": "cluster_0", "source": "compiled", "backend": "iree",
                                "shapes": [f"{d}[{','.join(map(str, s))}]" for d, s in event.shapes],
                                "hlobridge_s": event.lowering, "iree_s": event.iree}
    assert 0 < event.lowering + event.iree <= event.seconds
    assert _within(compile_, launch) and _within(launch, run)
    # every other unit of the plan ran on a reference kernel: one event each, named by op type
    units = sess._plan_for(fetches, case.step_feeds(0))[2].units
    kernels = sorted((e["args"]["name"], e["name"]) for e in by_cat["kernel"])
    assert kernels == sorted((u.name, u.node.op) for u in units if not isinstance(u, ClusterLaunch))
    assert all(_within(k, run) for k in by_cat["kernel"])
    assert len(events) == 3 + len(kernels)


def test_a_clustered_step_shows_fewer_longer_events_than_jit_off():
    case = Case.load(GRAPHS / "linreg_batch")
    work = {}
    for jit in ("auto", "off"):
        sess, fetches = _start(case, jit)
        sess.run(fetches, case.step_feeds(0))  # compiles (auto): the traced step below is warm
        md = RunMetadata()
        sess.run(fetches, case.step_feeds(1), options=RunOptions(trace=True), run_metadata=md)
        work[jit] = [e for e in check_trace(md.chrome_trace()) if e["cat"] in ("cluster", "kernel")]
    auto, off = work["auto"], work["off"]
    assert not [e for e in off if e["cat"] == "cluster"]
    launches = [e for e in auto if e["cat"] == "cluster"]
    assert launches and len(auto) < len(off) / 4
    # one launch does the work of many kernels: longer than a typical reference-kernel op
    assert statistics.median(e["dur"] for e in launches) > statistics.median(e["dur"] for e in off)


def test_a_cluster_that_fell_back_shows_its_ops_inside_its_launch():
    case = Case.load(GRAPHS / "linreg_batch")
    clear_memory_cache()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JitFallbackWarning)
        sess, fetches = _start(case, "auto", compile_options=CompileOptions(extra_flags=["--iree-no-such-flag"]))
        md = RunMetadata()
        sess.run(fetches, case.step_feeds(0), options=RunOptions(trace=True), run_metadata=md)
    events = check_trace(md.chrome_trace())
    [launch] = [e for e in events if e["cat"] == "cluster"]
    assert launch["args"]["ran_on"] == "reference kernels (fallback)"
    assert launch["args"]["compiled_now"] == ["fallback"]
    inside = {e["args"]["name"] for e in events if e["cat"] == "kernel" and _within(e, launch)}
    [cluster] = sess.clustering(fetches, case.step_feeds(0)).clusters
    assert inside == set(cluster.nodes)


def test_trace_needs_a_destination_and_trace_off_records_nothing(tmp_path, monkeypatch):
    case = Case.load(GRAPHS / "linreg_batch")
    sess, fetches = _start(case, "off")
    with pytest.raises(InputError, match="trace_path=... or a run_metadata"):
        sess.run(fetches, case.step_feeds(0), options=RunOptions(trace=True))
    md = RunMetadata()
    md.events = ["untouched"]
    monkeypatch.chdir(tmp_path)
    sess.run(fetches, case.step_feeds(0), options=RunOptions(trace=False, trace_path="t.json"), run_metadata=md)
    assert md.events == ["untouched"] and not (tmp_path / "t.json").exists()
