"""The profiler (hlobridge/debug/profile.py and the modules it runs): a Session step's time per
cluster and per IREE dispatch, each dispatch named by the TF nodes it came from.

On a corpus training step (mlp_adam): every dispatch IREE counts is in the profile, named by
nodes of the graph; the rows add up to the step and a cluster's rows to its launch; the
Chrome trace stays valid with the dispatches in it. No wall-clock value is asserted: only how
the numbers relate. The replay's record parsing and the stream IR's labels are checked on
small hand-written inputs."""

import json
import warnings

import pytest

from hlobridge import InputError, RunMetadata, RunOptions, Session, compile_graph, load_graph
from hlobridge.compile.cache import clear_memory_cache
from hlobridge.compile.driver import CompileOptions, compile_mlir
from hlobridge.debug.dispatch_replay import replay, times_from_records
from hlobridge.debug.dispatch_sources import loc_names, parse_stream_ir
from hlobridge.debug.profile import DISPATCH_TID, ClusterProfile, DispatchProfile, Profile, StepTimes, profile
from hlobridge.debug.profile_capture import profile_module
from hlobridge.debug import profile_capture
from hlobridge.errors import HlobridgeError, JitFallbackWarning
from hlobridge.runtime.cluster_launch import ClusterLaunch
from hlobridge.spec import TensorSpec

from tests.corpus import Case
from tests.conftest import TESTS
from tests.debug.test_timeline import check_trace


@pytest.fixture(scope="module")
def mlp_adam(shared_graphs):
    """A session past init, the step's fetches and feeds, and its profile (2 traced steps)."""
    case = Case.load(shared_graphs / "mlp_adam")
    sess = Session(case.graph_path, cache_dir=False)
    sess.run(case.meta["init_op"], case.init_feeds())
    fetches, feeds = [case.meta["train_op"], case.meta["loss"]], case.step_feeds(0)
    return sess, fetches, feeds, profile(sess, fetches, feeds, steps=2, iterations=2)


def test_every_dispatch_iree_counts_is_named_by_nodes_of_the_graph(mlp_adam):
    sess, fetches, feeds, prof = mlp_adam
    launches = [u for u in sess._plan_for(fetches, feeds)[2].units if isinstance(u, ClusterLaunch)]
    assert [c.name for c in prof.clusters] == [u.name for u in launches] and launches
    specs = sess._plan_for(fetches, feeds)[2].specs
    for cluster, launch in zip(prof.clusters, launches):
        stats = {}  # IREE's own count of the dispatches per call of the same module
        inputs = {r: TensorSpec(specs[r].dtype, specs[r].shape, specs[r].value if i in launch.value_inputs else None)
                  for i, r in enumerate(launch.tensor_inputs)}
        options = launch.config.options
        compile_mlir(launch.lower(inputs, options.stages()).text(), options, stats=stats)
        assert len(cluster.dispatches) == stats["dispatches"] and not cluster.note
        assert [d.index for d in cluster.dispatches] == list(range(len(cluster.dispatches)))
        for d in cluster.dispatches:
            assert d.nodes, f"{d.key} is named by no TF node"
            assert set(d.nodes) <= set(launch.nodes), d  # the cluster's own nodes
            assert d.ops == tuple(sess.graph.nodes[n].op for n in d.nodes)
            assert d.ms >= 0 and d.key.startswith("main_dispatch_") and d.label.startswith("#")
    named = {n for c in prof.clusters for d in c.dispatches for n in d.nodes}
    ops = {sess.graph.nodes[n].op for n in named}
    assert {"MatMul", "ResourceApplyAdam"} <= ops  # forward, and the optimizer's update


def test_rows_add_up_to_the_step_and_a_clusters_rows_to_its_launch(mlp_adam):
    _, _, _, prof = mlp_adam
    rows = prof.rows()
    assert sum(r.ms for r in rows) == pytest.approx(prof.step_ms, rel=1e-9)
    assert [r.ms for r in rows] == sorted((r.ms for r in rows), reverse=True)
    for c in prof.clusters:
        mine = [r for r in rows if r.cluster == c.name]
        assert sum(r.cluster_share for r in mine) == pytest.approx(1.0, rel=1e-9)
        assert sum(r.ms for r in mine) == pytest.approx(prof.cluster_ms(c.name), rel=1e-9)
        # inside one replay: attributed dispatch time never exceeds the command buffers' span
        assert 0 < c.dispatch_ms <= c.replay_ms * (1 + 1e-9)
        assert all(r.ms >= 0 for r in mine)
        assert {r.kind for r in mine} == {"dispatch", "other"}
    # the step's only lone nodes were its VarHandleOps: made once, when the plan is made
    # (runtime/session.py HANDLE_OPS), they no longer run, or show, in a step
    assert not [r for r in rows if r.kind == "kernel"] and not prof.kernel_times()
    assert len(prof.runs) == 2 and prof.iterations == 2


def test_the_table_lists_dispatches_with_their_nodes_and_shares(mlp_adam):
    sess, _, _, prof = mlp_adam
    text = prof.table(top=8)
    lines = text.splitlines()
    assert lines[0].startswith("Session step: ") and "median of 2 timed run(s)" in lines[0]
    assert any(line.startswith(f"  {c.name}: ") and f"{len(c.dispatches)} dispatches" in line
               for c in prof.clusters for line in lines)
    top = prof.rows()[:8]
    header = next(i for i, line in enumerate(lines) if line.lstrip().startswith("rank"))
    assert "TF nodes (ops)" in lines[header] and "%clust" in lines[header]
    for row, line in zip(top, lines[header + 1:header + 9]):
        assert line.split()[1] == f"{row.ms:.3f}" and row.label in line
        if row.kind == "dispatch":
            assert f"{row.nodes[0]} ({sess.graph.nodes[row.nodes[0]].op})" in line
    assert "TF nodes (each dispatch at its root node)" in text
    data = json.loads(json.dumps(prof.to_dict()))
    assert sum(r["ms"] for r in data["rows"]) == pytest.approx(data["step_ms"], rel=1e-9)


def test_the_chrome_trace_holds_one_event_per_dispatch_inside_its_launch(mlp_adam):
    _, _, _, prof = mlp_adam
    events = check_trace(prof.to_chrome_trace())
    dispatches = [e for e in events if e["cat"] == "dispatch"]
    assert len(dispatches) == sum(len(c.dispatches) for c in prof.clusters)
    assert {e["tid"] for e in dispatches} == {DISPATCH_TID}
    for c in prof.clusters:
        [launch] = [e for e in events if e["cat"] == "cluster" and e["name"] == c.name]
        mine = [e for e in dispatches if e["args"]["cluster"] == c.name]
        assert [e["args"]["dispatch"] for e in mine] == [d.key for d in c.dispatches]
        assert all(launch["ts"] <= e["ts"] and e["ts"] + e["dur"] <= launch["ts"] + launch["dur"] + 1e-3
                   for e in mine)
        assert mine[0]["args"]["nodes"] == list(c.dispatches[0].nodes)


def test_run_options_profile_fills_run_metadata_and_writes_the_trace(mlp_adam, tmp_path):
    sess, fetches, feeds, _ = mlp_adam
    with pytest.raises(InputError, match="needs a run_metadata"):
        sess.run(fetches, feeds, options=RunOptions(profile=True))
    md = RunMetadata()
    path = tmp_path / "step.json"
    sess.run(fetches, feeds, options=RunOptions(profile=True, profile_iterations=1, trace_path=path),
             run_metadata=md)
    assert len(md.profile.runs) == 1 and md.profile.clusters[0].dispatches
    written = check_trace(json.loads(path.read_text()))
    assert sum(e["cat"] == "dispatch" for e in written) == len(md.profile.clusters[0].dispatches)
    assert md.events == md.profile.to_chrome_trace()["traceEvents"]


def test_a_replay_that_fails_leaves_the_step_and_says_why(mlp_adam, monkeypatch):
    sess, fetches, feeds, _ = mlp_adam

    def failing(*args, **kwargs):
        raise HlobridgeError("profiling cluster_0: iree-benchmark-module failed (exit 1): no luck")

    monkeypatch.setattr(profile_capture, "replay", failing)
    md = RunMetadata()
    _, loss = sess.run(fetches, feeds, options=RunOptions(profile=True), run_metadata=md)
    assert loss > 0
    [cluster] = md.profile.clusters
    assert not cluster.dispatches and cluster.note.startswith("not profiled: profiling cluster_0: ")
    assert "not profiled" in md.profile.table().splitlines()[1]
    assert [r.label for r in md.profile.rows() if r.cluster == cluster.name] == ["launch (no dispatches timed)"]


def test_cuda_says_it_has_no_dispatch_profiling_before_replaying():
    """IREE 3.13 cannot profile dispatches on cuda (measured on an H100): the replay says so
    without writing the arguments out or starting iree-benchmark-module."""
    with pytest.raises(HlobridgeError, match="IREE driver 'cuda' has no dispatch profiling"):
        replay(b"not a module", [], "cuda", what="cluster_0")


def test_a_cluster_that_fell_back_has_no_dispatches_and_keeps_its_kernels():
    case = Case.load(TESTS / "graphs" / "linreg_batch")
    clear_memory_cache()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JitFallbackWarning)
        sess = Session(case.graph_path, cache_dir=False,
                       compile_options=CompileOptions(extra_flags=["--iree-no-such-flag"]))
        sess.run(case.meta["init_op"], case.init_feeds())
        prof = profile(sess, [case.meta["train_op"], case.meta["loss"]], case.step_feeds(0), steps=1)
    [cluster] = prof.clusters
    assert not cluster.dispatches and "fell back" in cluster.note
    inside = [r for r in prof.rows() if r.cluster == cluster.name]
    assert {r.kind for r in inside} == {"kernel", "other"} and len(inside) == len(sess.clustering(
        [case.meta["train_op"], case.meta["loss"]], case.step_feeds(0)).clusters[0].nodes) + 1
    assert sum(r.ms for r in prof.rows()) == pytest.approx(prof.step_ms, rel=1e-9)


def test_a_compiled_module_is_profiled_per_call(shared_graphs):
    case = Case.load(shared_graphs / "cnn_infer_bn")
    run = case.meta["runs"][0]
    feeds = {name: case.array(key) for name, key in run["feeds"].items()}
    graph = load_graph(case.graph_path)
    model = compile_graph(graph, outputs=list(run["expected"]),  # untiled: no packing in the initializer,
                          input_shapes={name: v.shape for name, v in feeds.items()},  # which IREE's count adds
                          options=CompileOptions(data_tiling="off"))
    prof = profile_module(model, feeds, steps=2, iterations=1, graph=graph)
    [cluster] = prof.clusters
    assert len(cluster.dispatches) == model.stats["dispatches"] and not cluster.note
    assert all(d.nodes and d.ops == tuple(graph.nodes[n].op for n in d.nodes) for d in cluster.dispatches)
    assert {"Conv2D", "DepthwiseConv2dNative"} <= {op for d in cluster.dispatches for op in d.ops}
    assert sum(r.ms for r in prof.rows()) == pytest.approx(prof.step_ms, rel=1e-9)
    assert prof.table(5).startswith("call of main: ")
    events = check_trace(prof.to_chrome_trace())
    assert sum(e["cat"] == "dispatch" for e in events) == len(cluster.dispatches)


def test_profile_refuses_bad_counts(mlp_adam):
    sess, fetches, feeds, _ = mlp_adam
    with pytest.raises(InputError, match="steps >= 1"):
        profile(sess, fetches, feeds, steps=0)


def _event(submission, index, start, end, buffer=1):
    return {"record_type": "host_execution_event", "op": "dispatch", "submission_id": submission,
            "command_buffer_id": buffer, "command_index": index, "start_host_time_ns": start,
            "end_host_time_ns": end, "duration_ns": end - start}


def test_overlapping_dispatches_share_their_time_and_the_warmup_call_is_dropped():
    ops = [{"record_type": "command_operation", "op": op, "command_buffer_id": 1, "command_index": i, "key": key}
           for i, (op, key) in enumerate([("dispatch", "a"), ("barrier", "barrier"), ("dispatch", "b"),
                                          ("dispatch", "c")])]
    warmup = [_event(1, 0, 0, 9000), _event(1, 2, 9000, 9500), _event(1, 3, 9000, 9500)]
    # a alone for 100 ns; b and c overlap for 50 ns, then c alone for 50 ns; the buffer spans 250 ns
    call = [_event(2, 0, 1000, 1100), _event(2, 2, 1100, 1150), _event(2, 3, 1100, 1200)]
    spans = [{"record_type": "host_execution_event", "op": "execute", "submission_id": s, "duration_ns": d}
             for s, d in ((1, 10000), (2, 250))]
    times = times_from_records(ops + warmup + call + spans, calls=2)
    [buffer] = times.buffers
    assert buffer.keys == ("a", "b", "c") and buffer.executions == 1
    assert buffer.ms == pytest.approx([100e-6, 25e-6, 75e-6])
    assert buffer.span_ms == pytest.approx(250e-6) and times.span_ms == pytest.approx(250e-6)


def test_one_shot_buffers_without_command_indices_are_ordered_by_start_time():
    unknown = 2 ** 32 - 1  # what the profile says of a one-shot buffer's command index

    def event(submission, key, start, end, event_id):
        return {**_event(submission, unknown, start, end, buffer=0), "key": key, "event_id": event_id}

    # in the timed call, c started before b: slots follow start order, each event names its key
    records = [event(1, "a", 0, 10, 1), event(1, "b", 10, 20, 2), event(1, "c", 20, 30, 3),
               event(2, "a", 100, 200, 4), event(2, "c", 200, 260, 5), event(2, "b", 260, 300, 6)]
    [buffer] = times_from_records(records, calls=2).buffers
    assert buffer.keys == ("a", "c", "b") and buffer.ms == pytest.approx([100e-6, 60e-6, 40e-6])
    assert buffer.span_ms == pytest.approx(200e-6)


def _execute(submission, start, duration, buffer=1):
    return {"record_type": "host_execution_event", "op": "execute", "submission_id": submission,
            "command_buffer_id": buffer, "start_host_time_ns": start, "duration_ns": duration}


def test_the_replayed_call_is_timed_from_one_calls_start_to_the_next_after_the_warmup():
    # the initializer's buffer runs once; then 4 calls of one buffer: a warm-up, then periods
    # of 1000 and 1400 ns, each call's buffer taking 800 of them
    records = [_execute(0, 0, 50, buffer=9)] + [
        _execute(s, start, 800) for s, start in ((1, 100), (2, 5000), (3, 6000), (4, 7400))]
    records += [_event(s, 0, r["start_host_time_ns"], r["start_host_time_ns"] + 700)
                for s, r in zip(range(1, 5), records[1:])]
    times = times_from_records(records, calls=4)
    assert times.call_ms == pytest.approx(1200e-6) and times.span_ms == pytest.approx(800e-6)
    # without a period after the warm-up, or without start times, the call is not known
    assert times_from_records(records[:3] + records[5:7], calls=2).call_ms == 0.0
    assert times_from_records([{**r, "start_host_time_ns": None} if r["op"] == "execute" else r
                               for r in records], calls=4).call_ms == 0.0


@pytest.mark.parametrize("launch_ms", [30.0, 10.0])
def test_a_launch_splits_into_its_replayed_call_and_what_the_step_took_beyond_it(launch_ms):
    """Replayed: dispatches 8 ms, command buffers 9, the call 12. A 30 ms launch keeps the
    replay's times and shows 18 ms beyond the call; a 10 ms one scales them to fit."""
    cluster = ClusterProfile("c", 3, [DispatchProfile("c", 0, "main_dispatch_0_x", 8.0)], replay_ms=9.0,
                             call_ms=12.0)
    prof = Profile([StepTimes(launch_ms, {"c": launch_ms}, {})], [cluster], "cpu-task")
    rows = {r.label: r.ms for r in prof.rows() if r.cluster == "c"}
    scale = min(1.0, launch_ms / 12.0)
    assert rows["#0 x"] == pytest.approx(8.0 * scale)
    assert rows["between dispatches (barriers, idle)"] == pytest.approx(1.0 * scale)
    assert rows["outside command buffers (call, alloc)"] == pytest.approx(3.0 * scale)
    assert rows["launch beyond its replayed call (a slower step)"] == pytest.approx(max(launch_ms - 12.0, 0.0))
    assert sum(rows.values()) == pytest.approx(launch_ms)


STREAM = """\
  stream.executable private @main_dispatch_0 {
    stream.executable.export public @main_dispatch_0_matmul_4x8x16_f32 workgroups() -> (index, index, index) {
    } loc("dense/MatMul")
    builtin.module {
      func.func @main_dispatch_0_matmul_4x8x16_f32(%arg0: !stream.binding loc(fused["x", "producer"])) {
        %0 = stream.binding.subspan %arg0[%c0] : !stream.binding -> tensor<4x16xf32> loc("producer")
        %cst = arith.constant 0.0 : f32 loc("some/Const")
        %1 = linalg.matmul ins(%a, %b) outs(%c) -> tensor<4x8xf32> loc("dense/MatMul")
        %2 = linalg.generic {iterator_types = ["parallel"]} ins(%1) outs(%1) -> tensor<4x8xf32> loc(fused["dense/BiasAdd", "dense/Relu"])
      } loc("dense/MatMul")
    } loc("dense/MatMul")
  } loc("dense/MatMul")
  stream.executable private @main_dispatch_1 {
    stream.executable.export public @main_dispatch_1_elementwise_8_f32 workgroups() -> (index, index, index) {
    } loc("a/Add")
    builtin.module {
      func.func @main_dispatch_1_elementwise_8_f32() {
        %0 = arith.addf %x, %y : f32 loc("a/Add")
      } loc("a/Add")
    } loc("a/Add")
  } loc("a/Add")
  util.func public @main() {
    %0 = stream.cmd.execute with(%r as %arg1) {
      stream.cmd.dispatch @main_dispatch_0::@main_dispatch_0_matmul_4x8x16_f32 {
        ro %arg1[%c0 for %c64] : !stream.resource<external>{%c64}
      } loc("dense/MatMul")
      stream.cmd.concurrent {
        stream.cmd.dispatch @main_dispatch_1::@main_dispatch_1_elementwise_8_f32 {
          rw %arg1[%c0 for %c32] : !stream.resource<external>{%c32}
        } loc("first/Add")
        stream.cmd.dispatch @main_dispatch_1::@main_dispatch_1_elementwise_8_f32 {
          rw %arg1[%c0 for %c32] : !stream.resource<external>{%c32}
        } loc("second/Add")
      }
    } => !stream.timepoint loc("dense/MatMul")
  }
"""


def test_stream_ir_names_each_dispatch_by_its_root_and_its_bodys_compute_ops():
    [region] = parse_stream_ir(STREAM)
    assert [s.key for s in region] == ["main_dispatch_0_matmul_4x8x16_f32"] + ["main_dispatch_1_elementwise_8_f32"] * 2
    # root first; bindings and constants carry their producers' names and are left out
    assert region[0].nodes == ("dense/MatMul", "dense/BiasAdd", "dense/Relu") and region[0].shared == 1
    # a deduplicated executable's body names its first site only: each site keeps its own name
    assert [(s.nodes, s.shared) for s in region[1:]] == [(("first/Add",), 2), (("second/Add",), 2)]


def test_loc_names_reads_name_fused_and_escaped_locations():
    text = 'x loc(fused["a\\"b", "c(d)"]) loc("f.py":1:2) loc("n"("f.py":3:4)) loc(unknown)'
    assert loc_names(text) == ['a"b', "c(d)", "n"]
