"""The time of each dispatch of one compiled call, from IREE's own HAL profiler.

IREE 3.13's runtime tools record what each dispatch of a command buffer cost
(`--device_profiling_mode`, a `.ireeprof` bundle that `iree-profile export` decodes): on the
local devices the worker threads' start and end of every dispatch (`host-execution`), on CUDA
device timestamps (`dispatch-events`). The Python bindings do not expose the profile sink, so
the call is replayed in `iree-benchmark-module`, a subprocess (an IREE abort there is an error
message, not a dead Python): the same vmfb, the arguments the call really had, the same
driver, the runtime flags of `IREE_PY_RUNTIME_FLAGS` (thread topology) and the Session's malloc
settings (runtime/host_memory.py), `iterations` + 1 calls (the first warms caches and thread
pools, and is dropped).

A command buffer may hold dispatches that run concurrently (no barrier between them). Their
wall times overlap, so each elementary interval is shared equally among the dispatches
running in it ("attributed" time): the attributed times of one execution add up to the time
some dispatch was running, never more than the execution's span.
"""

from __future__ import annotations

import json
import os
import shlex
import statistics
import subprocess
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from iree.runtime.benchmark import benchmark_exe

from ..errors import HlobridgeError
from ..runtime.host_memory import child_environment

# What each IREE driver can record per dispatch (the local drivers reject dispatch-events).
# cuda records nothing in IREE 3.13: on an H100, iree-benchmark-module answered
# dispatch-events with "UNIMPLEMENTED; CUDA HAL-native profiling is not implemented".
PROFILING_MODES = {"local-sync": "host-execution", "local-task": "host-execution"}


@dataclass
class CommandBufferTimes:
    """One recorded command buffer of the call: its dispatches in command order and the time
    each took per call of the function (a buffer in a loop runs several times per call)."""

    keys: tuple  # the dispatch functions (IREE export names), in command order (or start order)
    ms: list  # attributed ms per call, per position in `keys`
    span_ms: float  # the buffer's execution span per call (dispatches, barriers, idle workers)
    executions: int  # executions per call


@dataclass
class ReplayTimes:
    """A replayed call's command buffers; `span_ms` adds up their spans. `call_ms` is the time
    from one call's first execution to the next call's (the whole call as its caller sees it:
    allocation, submission, the wait), the mean over the calls after the warm-up (as the
    buffers' times are means); 0 where the profile cannot tell it (fewer than three calls, no
    start times)."""

    buffers: list
    iterations: int
    call_ms: float = 0.0

    @property
    def span_ms(self) -> float:
        """Time per call inside command buffers (what the device was given to do)."""
        return sum(b.span_ms for b in self.buffers)


def tool(name: str) -> str:
    """The path of an IREE runtime tool shipped in the iree-base-runtime wheel."""
    return str(Path(benchmark_exe()).with_name(name))


def replay(vmfb: bytes, args: list, driver: str, *, iterations: int = 5, function: str = "main",
           what: str = "the module") -> ReplayTimes:
    """Call `function` of `vmfb` with `args` (NumPy arrays) `iterations` + 1 times on `driver`
    in iree-benchmark-module, with HAL profiling on; the times of its dispatches."""
    if driver not in PROFILING_MODES:
        raise HlobridgeError(f"profiling {what}: IREE driver '{driver}' has no dispatch profiling "
                             f"(drivers: {', '.join(PROFILING_MODES)})")
    with tempfile.TemporaryDirectory(prefix="hlobridge-profile-") as tmp:
        tmp = Path(tmp)
        (tmp / "module.vmfb").write_bytes(vmfb)
        inputs = []
        for i, a in enumerate(args):
            np.save(tmp / f"arg{i}.npy", np.asarray(a, order="C"))  # (ascontiguousarray makes 0-d 1-d)
            inputs.append(f"--input=@{tmp / f'arg{i}.npy'}")
        _run([benchmark_exe(), f"--module={tmp / 'module.vmfb'}", f"--function={function}", f"--device={driver}",
              *inputs, *shlex.split(os.environ.get("IREE_PY_RUNTIME_FLAGS", "")),  # the session's threads
              f"--benchmark_min_time={iterations + 1}x",
              f"--device_profiling_mode={PROFILING_MODES[driver]}",
              f"--device_profiling_output={tmp / 'run.ireeprof'}"], what,
             env={**os.environ, **child_environment()})  # the Session's malloc settings
        _run([tool("iree-profile"), "export", "--format=ireeperf-jsonl", f"--output={tmp / 'run.jsonl'}",
              str(tmp / "run.ireeprof")], what)
        with open(tmp / "run.jsonl") as f:
            records = [json.loads(line) for line in f if line.strip()]
    return times_from_records(records, iterations + 1)


def _run(cmd: list, what: str, env: dict | None = None) -> None:
    run = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if run.returncode != 0:
        lines = [ln for ln in (run.stderr + run.stdout).splitlines() if ln.strip()]
        raise HlobridgeError(f"profiling {what}: {Path(cmd[0]).name} failed (exit {run.returncode}): "
                             f"{lines[-1] if lines else 'no message'}")


def times_from_records(records: list, calls: int) -> ReplayTimes:
    """Decoded profile records (ireeperf-jsonl) of `calls` calls -> the time of each dispatch per
    call. A command buffer executed k times per call (k > 1 in a loop) drops its first k
    executions (the warm-up call) and averages the rest, times k: means, so that a buffer's
    dispatches never add up to more than its span. One executed less than once per call (the
    module's initializer) is not part of a call and is left out."""
    keys = defaultdict(dict)  # command buffer id -> command index -> dispatch key
    spans = {}  # submission id -> ns the execution took (host-execution "execute" events)
    starts = defaultdict(list)  # command buffer id -> when each of its executions began
    runs = defaultdict(list)  # submission id -> its dispatch events
    for r in records:
        kind = r.get("record_type")
        if kind == "command_operation" and r["op"] == "dispatch":
            keys[r["command_buffer_id"]][r["command_index"]] = r["key"]
        elif kind == "host_execution_event" and r["op"] == "execute":
            spans[r["submission_id"]] = r["duration_ns"]
            if r.get("start_host_time_ns") is not None:
                starts[r.get("command_buffer_id")].append(r["start_host_time_ns"])
        elif (kind == "host_execution_event" and r["op"] == "dispatch") or kind == "dispatch_event":
            runs[r["submission_id"]].append(r)
    by_buffer = defaultdict(list)  # the buffer's keys (sorted) -> [(ordered keys, ns per position, span)]
    for submission in sorted(runs):
        ordered, names = _in_command_order(runs[submission], keys)
        attributed = _attribute(ordered)
        span = spans.get(submission, _span(ordered))
        by_buffer[tuple(sorted(names))].append((names, [attributed[i] for i in range(len(ordered))], span))
    buffers = []
    for executions in by_buffer.values():
        per_call = len(executions) // calls
        kept = executions[per_call:]
        if per_call < 1 or not kept:
            continue
        names = kept[0][0]
        total = defaultdict(float)  # (key, occurrence) -> ns over the kept executions
        for order, ns, _ in kept:
            for slot, t in zip(slots(order), ns):
                total[slot] += t
        ms = [total[slot] / len(kept) * per_call / 1e6 for slot in slots(names)]
        span_ms = sum(e[2] for e in kept) / len(kept) * per_call / 1e6
        buffers.append(CommandBufferTimes(tuple(names), ms, span_ms, per_call))
    return ReplayTimes(buffers, calls - 1, _call_ms(starts, calls))


def _call_ms(starts: dict, calls: int) -> float:
    """The mean time between the starts of consecutive calls after the warm-up, each call's
    start being the first execution in it of the buffer executed most (at least once a call:
    not the initializer's); 0.0 with fewer than three calls or executions not once per call."""
    first = sorted(max(starts.values(), key=len, default=[]))
    per_call = len(first) // calls if calls else 0
    if calls < 3 or per_call < 1 or len(first) != per_call * calls:
        return 0.0
    first = first[per_call::per_call]  # calls 1, 2, ...: the warm-up call is dropped
    return statistics.fmean(b - a for a, b in zip(first, first[1:])) / 1e6


def _in_command_order(events: list, keys: dict) -> tuple[list, list]:
    """(events, their dispatch keys) in the order the command buffer recorded them: by command
    index where the profile has the buffer's operations (reusable buffers), else (one-shot
    buffers, whose events have no index) by start time, each event naming its own function."""
    recorded = keys.get(events[0].get("command_buffer_id"), {})
    if recorded and all(e.get("command_index") in recorded for e in events):
        ordered = sorted(events, key=lambda e: e["command_index"])
        return ordered, [recorded[e["command_index"]] for e in ordered]
    ordered = sorted(events, key=lambda e: (e.get("start_host_time_ns") or 0, e.get("event_id") or 0))
    return ordered, [e.get("key") or "?" for e in ordered]


def slots(names: list) -> list[tuple]:
    """Each position as (key, how many times the key came before): the same dispatch in every
    execution of a buffer, even where concurrent dispatches started in another order."""
    seen: dict = defaultdict(int)
    result = []
    for name in names:
        result.append((name, seen[name]))
        seen[name] += 1
    return result


def _interval(event: dict) -> tuple | None:
    start, end = event.get("start_host_time_ns"), event.get("end_host_time_ns")
    return (start, end) if start is not None and end is not None else None


def _span(events: list) -> float:
    intervals = [_interval(e) for e in events]
    if any(i is None for i in intervals):
        return float(sum(e["duration_ns"] for e in events))
    return float(max(i[1] for i in intervals) - min(i[0] for i in intervals))


def _attribute(events: list) -> dict:
    """Position in `events` -> ns attributed to that dispatch: overlapping time is split equally
    among the dispatches running together (events without start and end keep their duration)."""
    attributed = defaultdict(float)
    points = []
    for i, e in enumerate(events):
        interval = _interval(e)
        if interval is None:
            attributed[i] += e["duration_ns"]
            continue
        points += [(interval[0], 1, i), (interval[1], -1, i)]
    points.sort(key=lambda p: (p[0], p[1]))  # at one instant, ends before starts
    active: set = set()
    last = None
    for t, change, index in points:
        if active and last is not None and t > last:
            share = (t - last) / len(active)
            for i in active:
                attributed[i] += share
        last = t
        if change > 0:
            active.add(index)
        else:
            active.discard(index)
    return attributed


__all__ = ["PROFILING_MODES", "CommandBufferTimes", "ReplayTimes", "replay", "slots", "times_from_records", "tool"]
