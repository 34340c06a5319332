"""Timelines of `Session.run`, as TensorFlow's `RunOptions(trace_level=FULL_TRACE)` + timeline:

    sess.run(fetches, feed, options=hlobridge.RunOptions(trace=True, trace_path="timeline.ctf.json"))

writes a Chrome trace-event file (open it in chrome://tracing or https://ui.perfetto.dev): one
complete event ("ph": "X") per cluster launch, per op run on its reference kernel and per
cluster compile, with cluster names, op types and shapes in `args`, on one row each
(threads named by metadata events). Pass `run_metadata=hlobridge.RunMetadata()` to get the
same events in Python (`md.events`, `md.chrome_trace()`).

A traced run executes the plan's units wrapped by `RunTrace.wrap`: each wrapper times its unit
(a launch's fallen-back members are wrapped too, so they show inside it). An untraced run
executes the plain units, exactly the code it did before tracing existed: there is no "is
tracing on?" check per op.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..frontend.graph import TensorRef
from ..runtime.cluster_launch import ClusterLaunch

# Timestamps are microseconds since this module was imported, so that the events of
# several runs of one process line up.
_ORIGIN = time.perf_counter()
PID = 1
RUN_TID, CLUSTER_TID, KERNEL_TID, COMPILE_TID = 1, 2, 3, 4
THREAD_NAMES = {RUN_TID: "Session.run", CLUSTER_TID: "cluster launches (IREE)",
                KERNEL_TID: "reference kernels (NumPy)", COMPILE_TID: "cluster compiles"}


@dataclass(frozen=True)
class RunOptions:
    """`trace=True` records a timeline of the run; `trace_path` writes it as Chrome trace JSON.
    `profile=True` also times every IREE dispatch of the run's clusters, replaying each launch
    `profile_iterations` times (debug/profile.py), into `RunMetadata.profile` and the timeline."""

    trace: bool = False
    trace_path: str | os.PathLike | None = None
    profile: bool = False
    profile_iterations: int = 5


class RunMetadata:
    """Receives a traced run's events, and a profiled run's `profile` (each run replaces the
    previous one's)."""

    def __init__(self):
        self.events: list[dict] = []
        self.profile = None  # debug.profile.Profile, after a run with RunOptions(profile=True)

    def chrome_trace(self) -> dict:
        """The events as a Chrome trace-event document (for chrome://tracing or Perfetto)."""
        return {"traceEvents": self.events, "displayTimeUnit": "ms"}

    def write(self, path: str | os.PathLike) -> None:
        """Write `chrome_trace()` as JSON to `path`."""
        Path(path).write_text(json.dumps(self.chrome_trace()))


def _us(t: float) -> float:
    return round((t - _ORIGIN) * 1e6, 3)


def describe(value) -> str:
    """'float32[32,1]' for an array (host or device), 'resource' for a variable handle."""
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is None or dtype is None:
        return "resource" if type(value).__name__ == "VariableHandle" else type(value).__name__
    return f"{dtype}[{','.join(str(d) for d in shape)}]"


def thread_metadata(tid: int, name: str) -> list[dict]:
    """The metadata events that name row `tid` and sort it by its number."""
    return [{"name": "thread_name", "ph": "M", "pid": PID, "tid": tid, "args": {"name": name}},
            {"name": "thread_sort_index", "ph": "M", "pid": PID, "tid": tid, "args": {"sort_index": tid}}]


def complete_event(name: str, cat: str, tid: int, ts_us: float, dur_us: float, args: dict) -> dict:
    """A complete ("X") event at `ts_us` (microseconds on this module's clock) lasting `dur_us`."""
    return {"name": name, "cat": cat, "ph": "X", "pid": PID, "tid": tid,
            "ts": round(ts_us, 3), "dur": round(dur_us, 3), "args": args}


class Tracer:
    """Collects trace events of one run."""

    def __init__(self, process_name: str):
        self.events: list[dict] = [
            {"name": "process_name", "ph": "M", "pid": PID, "tid": 0, "args": {"name": process_name}}]
        for tid, name in THREAD_NAMES.items():
            self.events += thread_metadata(tid, name)

    def complete(self, name: str, cat: str, tid: int, start: float, end: float, args: dict) -> None:
        """A complete event from perf_counter() `start` to `end`."""
        self.events.append(complete_event(name, cat, tid, _us(start), (end - start) * 1e6, args))


class TracedStep:
    """A node step that records one kernel event per run."""

    def __init__(self, step, tracer: Tracer):
        self.step = step
        self.tracer = tracer

    def run(self, values: dict, env) -> None:
        """Run the step and record it, with its inputs' and outputs' dtypes and shapes."""
        step = self.step
        inputs = [describe(values[r]) for r in step.node.inputs]
        start = time.perf_counter()
        step.run(values, env)
        end = time.perf_counter()
        outputs = [describe(values[TensorRef(step.name, i)]) for i in range(len(step.out_specs))
                   if TensorRef(step.name, i) in values]
        self.tracer.complete(step.node.op, "kernel", KERNEL_TID, start, end,
                             {"name": step.name, "op": step.node.op, "inputs": inputs, "outputs": outputs})


class TracedLaunch:
    """A cluster launch that records its call, the compiles it caused, and (when it fell back)
    its members' kernels."""

    def __init__(self, launch, tracer: Tracer, compile_events: list):
        self.launch = launch
        self.tracer = tracer
        self.compile_events = compile_events

    def run(self, values: dict, env) -> None:
        """Launch (or fall back) and record it."""
        launch = self.launch
        compiles = len(self.compile_events)
        inputs = [describe(values[r]) for r in launch.tensor_inputs]
        events = len(self.tracer.events)
        start = time.perf_counter()
        # the members' traced steps are made only if the launch falls back and runs them: a
        # frozen ResNet-50 has 1,830, and wrapping them every step was 0.7 ms of the traced step
        launch.run(values, env, (TracedStep(s, self.tracer) for s in launch.members))
        end = time.perf_counter()
        fell_back = len(self.tracer.events) > events  # only kernel events come in during a launch
        new = self.compile_events[compiles:]
        for e in new:
            self.tracer.complete(f"compile {e.cluster}", "compile", COMPILE_TID, e.started, e.started + e.seconds,
                                 {"cluster": e.cluster, "source": e.source, "backend": e.backend,
                                  "shapes": e.input_texts(),
                                  "hlobridge_s": e.lowering, "iree_s": e.iree})
        self.tracer.complete(launch.name, "cluster", CLUSTER_TID, start, end, {
            "cluster": launch.name, "ops": len(launch.nodes), "op_types": launch.op_histogram,
            "inputs": dict(zip(map(str, launch.tensor_inputs), inputs)),
            "variables": [str(r) for r in launch.resources],
            "outputs": {str(r): describe(values[r]) for r in launch.outputs if r in values},
            "compiled_now": [e.source for e in new],
            "ran_on": "reference kernels (fallback)" if fell_back else _BACKEND_NAMES.get(
                launch.config.options.backend, launch.config.options.backend)})


_BACKEND_NAMES = {"iree": "IREE", "xla": "XLA (PJRT)"}


class RunTrace:
    """One traced run: wraps the plan's units, then records the run and hands the events over
    (to `run_metadata`, and as JSON to `options.trace_path`)."""

    def __init__(self, options: RunOptions, run_metadata: RunMetadata | None, process_name: str,
                 compile_events: list):
        if options.trace_path is None and run_metadata is None:
            raise InputError("RunOptions(trace=True) needs trace_path=... or a run_metadata to put the timeline in")
        self.options = options
        self.metadata = run_metadata if run_metadata is not None else RunMetadata()
        self.tracer = Tracer(process_name)
        self.compile_events = compile_events

    def wrap(self, units: list) -> list:
        """Timed stand-ins for `units`: launches (they have members) and node steps."""
        return [TracedLaunch(u, self.tracer, self.compile_events) if isinstance(u, ClusterLaunch)
                else TracedStep(u, self.tracer) for u in units]

    def finish(self, start: float, end: float, plan) -> None:
        """Record the whole run and deliver the events."""
        self.tracer.complete("Session.run", "run", RUN_TID, start, end,
                             {"units": len(plan.units), "fetches": [str(r) for r in plan.fetch_refs if r is not None]})
        self.metadata.events = self.tracer.events
        if self.options.trace_path is not None:
            self.metadata.write(self.options.trace_path)
