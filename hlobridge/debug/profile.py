"""Where a Session step's time goes, per cluster and per IREE dispatch, each dispatch named by
the TensorFlow nodes it came from: what `--xla_hlo_profile` gave XLA users.

    prof = profile(sess, ["train", "loss:0"], feed_dict, steps=5)   # runs 1 + 5 real steps
    print(prof.table(top=10))
    sess.run(fetches, feeds, options=RunOptions(profile=True), run_metadata=md)   # md.profile
    hlobridge-profile graph.pbtxt --fetch train --fetch loss:0 --input-shape x:0=32,784 --init init

How it measures (docs/profiling.md says more):
- the step: timeline.py's trace of real Session.run steps gives the step, each cluster launch
  and each op run on a reference kernel (medians over the steps, compile time left out);
- the dispatches: the profiled step's launches keep the arguments they were called with
  (profile_capture.py); each cluster's binary is replayed with them in iree-benchmark-module
  with IREE's HAL profiler on (dispatch_replay.py), and each dispatch is named by the TF
  nodes whose locations it carries (dispatch_sources.py).
A dispatch's ms is its time in the replay (scaled down to the launch where the replayed
command buffers took longer than the whole launch did: a busier machine), its share of the
step that time over the measured step, its share of the cluster that time over the measured
launch. Each cluster also has two "other" rows: its command buffers beyond their dispatches
(barriers, idle workers), and its launch beyond its command buffers (the call from Python,
allocation); the step's "Session.run" row is what no unit accounts for (planning, feeds,
fetches). The rows add up to the step, and a cluster's rows to its launch.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field

from ..errors import InputError
from .profile_report import format_table, profile_dict
from .timeline import RunMetadata, RunOptions, Tracer, complete_event, thread_metadata

DISPATCH_TID = 5  # the timeline row of the replayed dispatches (timeline.py has rows 1-4)
_KEY = re.compile(r"_dispatch_(\d+)(?:_(.+))?$")


@dataclass
class DispatchProfile:
    """One dispatch of a cluster's call, in command order: IREE's function name, its time per
    call in the replay, and the TF nodes it came from (root first) with their op types."""

    cluster: str
    index: int  # position among the cluster's dispatches
    key: str  # IREE's export name, e.g. main_dispatch_139_matmul_800x64x6272_f32
    ms: float
    nodes: tuple = ()
    ops: tuple = ()
    shared: int = 1  # call sites of its executable (IREE deduplicated identical dispatches)

    @property
    def label(self) -> str:
        """'#139 matmul_800x64x6272_f32': IREE's dispatch number and what its name says it does."""
        m = _KEY.search(self.key)
        return f"#{m.group(1)} {m.group(2) or ''}".rstrip() if m else self.key


@dataclass
class ClusterProfile:
    """A cluster's replayed dispatches; `replay_ms` is the replayed call's command-buffer span,
    `call_ms` the replayed call's whole time (0: not known)."""

    name: str
    nodes: int
    dispatches: list = field(default_factory=list)
    replay_ms: float = 0.0
    call_ms: float = 0.0
    note: str = ""  # why dispatches are missing or named by kernel only
    executor: str = ""  # the device it ran on, where that is not the Session's (a small cluster: "cpu")
    backend: str = "iree"  # who compiled and ran it (compile/backend.py)

    @property
    def dispatch_ms(self) -> float:
        """The time of its dispatches per call, replayed."""
        return sum(d.ms for d in self.dispatches)

    @property
    def replayed_call_ms(self) -> float:
        """The replayed call's time (never less than its command buffers), or where that is not
        known the command buffers' span."""
        return max(self.call_ms, self.replay_ms)


@dataclass
class StepTimes:
    """One traced step (compile time left out): the step, each launch, each kernel op
    (node -> (op type, ms, the cluster it ran inside when its cluster fell back, else None))."""

    step_ms: float
    clusters: dict
    kernels: dict


@dataclass
class Row:
    """One line of the table: a dispatch, a kernel op, a cluster's other time or Session.run's."""

    kind: str  # "dispatch" | "kernel" | "other" | "session"
    ms: float
    cluster: str | None
    label: str
    nodes: tuple = ()
    ops: tuple = ()
    cluster_share: float | None = None
    replayed_ms: float | None = None  # a dispatch's own time in the replay, before replay_scale


def _median(values, default: float = 0.0) -> float:
    values = list(values)
    return statistics.median(values) if values else default


@dataclass
class Profile:
    """The profile of a Session step: medians of the traced steps (`runs`), the profiled
    step's replayed clusters, and its timeline events (for the Chrome trace)."""

    runs: list  # StepTimes per traced step
    clusters: list  # ClusterProfile per launched cluster, in launch order
    device: str
    events: list = field(default_factory=list)
    iterations: int = 0  # replayed calls per cluster
    subject: str = "Session step"  # or "call of main", for a compiled module (profile_capture.profile_module)
    compiles: list = field(default_factory=list)  # the session's CompileEvents: how each binary was had

    @property
    def step_ms(self) -> float:
        """The step's time: the median over the traced steps."""
        return _median(r.step_ms for r in self.runs)

    def cluster_ms(self, name: str) -> float:
        """A cluster's launch time: the median over the traced steps."""
        return _median(r.clusters[name] for r in self.runs if name in r.clusters)

    def kernel_times(self) -> dict:
        """node -> (op type, median ms, cluster or None) over the traced steps."""
        names = dict.fromkeys(n for r in self.runs for n in r.kernels)
        return {n: (next(r.kernels[n][0] for r in self.runs if n in r.kernels),
                    _median(r.kernels[n][1] for r in self.runs if n in r.kernels),
                    next(r.kernels[n][2] for r in self.runs if n in r.kernels)) for n in names}

    def replay_scale(self, cluster: ClusterProfile) -> float:
        """1, or less where the replayed call (its command buffers, where the call's own time is
        not known) took longer than the whole launch did in the step (the machine was busier
        during the replay): the factor that fits it in the launch."""
        launch, replayed = self.cluster_ms(cluster.name), cluster.replayed_call_ms
        return min(1.0, launch / replayed) if replayed > 0 else 1.0

    def rows(self) -> list[Row]:
        """Every line of the step, longest first: they add up to `step_ms`."""
        kernels = self.kernel_times()
        rows = [Row("kernel", ms, cluster, op, (name,), (op,),
                    ms / self.cluster_ms(cluster) if cluster and self.cluster_ms(cluster) else None)
                for name, (op, ms, cluster) in kernels.items()]
        accounted = 0.0
        for c in self.clusters:
            launch = self.cluster_ms(c.name)
            accounted += launch
            inside = sum(ms for _, ms, cluster in kernels.values() if cluster == c.name)
            scale = self.replay_scale(c)
            for d in c.dispatches:
                rows.append(Row("dispatch", d.ms * scale, c.name, d.label, d.nodes, d.ops,
                                d.ms * scale / launch if launch else None, d.ms))
            if c.dispatches:  # the replay's command buffers beyond their dispatches, its call beyond
                # those, and the launch beyond the replayed call (the same call, slower in the step);
                # where the call's time is not known, the launch beyond the command buffers
                call = c.replayed_call_ms * scale if c.call_ms else launch
                rows.append(self._other(c.name, (c.replay_ms - c.dispatch_ms) * scale, launch,
                                        "between dispatches (barriers, idle)"))
                rows.append(self._other(c.name, call - c.replay_ms * scale, launch,
                                        "outside command buffers (call, alloc)"))
                if c.call_ms:
                    rows.append(self._other(c.name, launch - call, launch,
                                            "launch beyond its replayed call (a slower step)"))
            else:  # fell back to kernels, or not profiled
                rows.append(self._other(c.name, launch - inside, launch,
                                        "launch beyond its kernels" if inside else "launch (no dispatches timed)"))
        accounted += sum(ms for _, ms, cluster in kernels.values() if cluster is None)
        if self.subject == "Session step":
            rows.append(Row("session", self.step_ms - accounted, None, "Session.run (planning, feeds, fetches)"))
        return sorted(rows, key=lambda r: -r.ms)

    def by_node(self) -> list[tuple]:
        """(node, op type, ms, dispatches) per TF node, longest first: each dispatch counted at
        its root node (the op IREE formed it around), each reference-kernel op at its own."""
        total: dict = {}
        for r in self.rows():
            if r.kind in ("dispatch", "kernel") and r.nodes:
                node, op, ms, count = total.get(r.nodes[0], (r.nodes[0], r.ops[0], 0.0, 0))
                total[r.nodes[0]] = (node, op, ms + r.ms, count + (r.kind == "dispatch"))
        return sorted(total.values(), key=lambda t: -t[2])

    @staticmethod
    def _other(cluster: str, ms: float, launch: float, label: str) -> Row:
        return Row("other", ms, cluster, label, (), (), ms / launch if launch else None)

    def table(self, top: int = 20) -> str:
        """The console report: the step, each cluster, then the `top` longest rows."""
        return format_table(self, top)

    def to_dict(self, top: int | None = None) -> dict:
        """The profile as plain data (hlobridge-profile --json)."""
        return profile_dict(self, top)

    def to_chrome_trace(self) -> dict:
        """The profiled step's timeline with one event per dispatch on its own row: laid end to
        end in command order from the start of its launch (after any compile), with its row's
        time (shrunk further where they would overrun the launch); `args` hold the times."""
        events = list(self.events) or Tracer(f"hlobridge {self.subject}").events  # (a module: no timeline)
        events += thread_metadata(DISPATCH_TID, "dispatches (IREE HAL profile, replayed)")
        step = self.step_ms
        for c in self.clusters:
            launch = next((e for e in self.events if e.get("cat") == "cluster" and e["name"] == c.name),
                          {"ts": 0.0, "dur": float("inf")})  # a compiled module's call: no timeline
            if not c.dispatches:
                continue
            end = launch["ts"] + launch["dur"]
            start = max([launch["ts"]] + [e["ts"] + e["dur"] for e in self.events
                                          if e.get("cat") == "compile" and launch["ts"] <= e["ts"] < end])
            scale = self.replay_scale(c)
            total_us = c.dispatch_ms * scale * 1e3 + len(c.dispatches) * 1e-3
            fit = scale * min(1.0, (end - start) / total_us) if total_us > 0 else scale
            launch_ms = self.cluster_ms(c.name)
            at = round(start * 1e3)  # integer ns, one apart: float rounding cannot make neighbours overlap
            for d in c.dispatches:
                dur = max(round(d.ms * 1e6 * fit) - 1, 0)
                events.append(complete_event(d.label, "dispatch", DISPATCH_TID, at / 1e3, dur / 1e3, {
                    "cluster": c.name, "dispatch": d.key, "nodes": list(d.nodes), "ops": list(d.ops),
                    "ms": round(d.ms * scale, 6), "replayed_ms": round(d.ms, 6),
                    "share_of_cluster": round(d.ms * scale / launch_ms, 6) if launch_ms else None,
                    "share_of_step": round(d.ms * scale / step, 6) if step else None}))
                at += dur + 1
        return {"traceEvents": events, "displayTimeUnit": "ms"}


def step_times(events: list, overhead_s: float = 0.0) -> StepTimes:
    """A traced step's times from its timeline events: compiles are subtracted from the launch
    and the step they happened in, `overhead_s` (the profiler's own work) from the step; a
    kernel event inside a launch (a cluster that fell back) belongs to that cluster."""
    timed = [e for e in events if e.get("ph") == "X"]
    compiles = [e for e in timed if e["cat"] == "compile"]
    launches = [e for e in timed if e["cat"] == "cluster"]

    def within(e, outer):
        return outer["ts"] <= e["ts"] and e["ts"] + e["dur"] <= outer["ts"] + outer["dur"] + 1e-3

    clusters = {e["name"]: (e["dur"] - sum(c["dur"] for c in compiles if within(c, e))) / 1e3 for e in launches}
    kernels = {}
    for e in timed:
        if e["cat"] == "kernel":
            owner = next((c["name"] for c in launches if within(e, c)), None)
            kernels[e["args"]["name"]] = (e["args"]["op"], e["dur"] / 1e3, owner)
    run = next(e for e in timed if e["cat"] == "run")
    step = (run["dur"] - sum(c["dur"] for c in compiles)) / 1e3 - overhead_s * 1e3
    return StepTimes(step, clusters, kernels)


def profile(session, fetches, feed_dict: dict | None = None, *, steps: int = 5, warmup: int = 1,
            iterations: int = 5) -> Profile:
    """Run `warmup` untimed steps (they compile), then `steps` traced steps of `fetches` with
    `feed_dict`, the last one profiled (its clusters replayed `iterations` times): the Profile.
    The steps are real: a training step updates the variables each time."""
    if steps < 1 or warmup < 0 or iterations < 1:
        raise InputError(f"profile needs steps >= 1, warmup >= 0 and iterations >= 1 "
                         f"(got steps={steps}, warmup={warmup}, iterations={iterations})")
    for _ in range(warmup):
        session.run(fetches, feed_dict)
    earlier = []
    for _ in range(steps - 1):
        md = RunMetadata()
        session.run(fetches, feed_dict, options=RunOptions(trace=True), run_metadata=md)
        earlier.append(step_times(md.events))
    md = RunMetadata()
    session.run(fetches, feed_dict, options=RunOptions(trace=True, profile=True, profile_iterations=iterations),
                run_metadata=md)
    md.profile.runs[:0] = earlier
    md.profile.compiles = list(session.compile_events)
    return md.profile


__all__ = ["ClusterProfile", "DispatchProfile", "Profile", "Row", "StepTimes", "profile", "step_times"]
