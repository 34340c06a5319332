"""A profiled `Session.run`: a traced run (timeline.py) whose cluster launches keep their
arguments, then each launched cluster replayed with them and its dispatches named.

    sess.run(fetches, feeds, options=RunOptions(profile=True), run_metadata=md)   # md.profile

A launch keeps references to its arguments and its variables' values from before the call
(the call writes new values; the old buffers stay as they were) and copies them to the host
after it, outside the launch's timed event; the copies' time is taken off the step. Once the
step is over, each cluster is lowered again for its signature (the same StableHLO, so the
compile cache hands back the very binary the step ran), replayed in iree-benchmark-module
(dispatch_replay.py), and its command buffers are matched with the dispatch sites of a
`--compile-to=stream` compile with locations (dispatch_sources.py): a buffer and a region
with the same dispatch functions match, the n-th call of a function in one being its n-th
site in the other, and each dispatch gets its site's TF nodes. A command buffer that matches
no region (the binary and the stream IR disagree) is named per dispatch function from its
executable; a cluster whose replay fails keeps the step's results and its profile says why.
`profile_module` profiles one call of a compiled module (compile_graph's) the same way.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from ..errors import HlobridgeError, InputError
from ..runtime.host import to_host
from ..runtime.module import DRIVERS
from .dispatch_replay import replay, slots
from .dispatch_sources import DispatchSite, body_labels, dispatch_sites
from .profile import ClusterProfile, DispatchProfile, Profile, StepTimes, step_times
from .timeline import RunMetadata, RunOptions, RunTrace, TracedLaunch


@dataclass
class CapturedCall:
    """One launch of the profiled step: the launch, its input specs, and its arguments on the
    host (None when the cluster fell back to reference kernels)."""

    launch: object  # runtime.cluster_launch.ClusterLaunch
    feeds: dict
    args: list | None


class LaunchCapture:
    """A traced launch that keeps the arguments it was called with."""

    def __init__(self, traced: TracedLaunch, run: "ProfiledRun"):
        self.traced = traced
        self.run_ = run

    def run(self, values: dict, env) -> None:
        """Launch (timed by the traced launch), then copy its arguments to the host."""
        launch = self.traced.launch
        args = [values[r] for r in launch.tensor_inputs]
        variables = {r: env.variables.read(values[r], launch.name) for r in launch.resources
                     if values[r] in env.variables}
        if launch.config.options.backend != "iree":  # no dispatches to replay; its buffers may be donated
            self.traced.run(values, env)
            self.run_.captured.append(CapturedCall(launch, launch.feed_specs(args), None))
            return
        self.traced.run(values, env)
        start = time.perf_counter()
        exe = launch.executables.get(launch.signature(args))
        host = None
        if exe is not None:
            host = [np.array(to_host(a)) for a in [*args, *(variables[r] for r in exe.resource_args)]]
        self.run_.captured.append(CapturedCall(launch, launch.feed_specs(args), host))
        self.run_.overhead_s += time.perf_counter() - start


class ProfiledRun:
    """One profiled run: wraps the plan's units (traced, launches captured); `finish` records
    the run, replays its clusters and hands over the Profile and the timeline with dispatches."""

    def __init__(self, options: RunOptions, run_metadata: RunMetadata | None, process_name: str,
                 compile_events: list):
        if options.trace_path is None and run_metadata is None:
            raise InputError("RunOptions(profile=True) needs a run_metadata (or trace_path=...) to put "
                             "the profile in")
        if options.profile_iterations < 1:
            raise InputError(f"RunOptions(profile_iterations=...) must be >= 1, got {options.profile_iterations}")
        self.options = options
        self.metadata = run_metadata if run_metadata is not None else RunMetadata()
        self.trace = RunTrace(replace(options, trace_path=None), self.metadata, process_name, compile_events)
        self.captured: list[CapturedCall] = []
        self.overhead_s = 0.0

    def wrap(self, units: list) -> list:
        """The traced units, with each launch capturing its arguments."""
        return [LaunchCapture(u, self) if isinstance(u, TracedLaunch) else u for u in self.trace.wrap(units)]

    def finish(self, start: float, end: float, plan) -> None:
        """Record the run, replay its clusters, deliver the Profile and the events."""
        self.trace.finish(start, end, plan)
        iterations = self.options.profile_iterations
        clusters = [profile_cluster(c, iterations) for c in self.captured]
        device = self.captured[0].launch.config.device if self.captured else ""
        prof = Profile([step_times(self.metadata.events, self.overhead_s)], clusters, device,
                       self.metadata.events, iterations)
        self.metadata.profile = prof
        self.metadata.events = prof.to_chrome_trace()["traceEvents"]
        if self.options.trace_path is not None:
            self.metadata.write(self.options.trace_path)


def profile_cluster(call: CapturedCall, iterations: int) -> ClusterProfile:
    """Replay one launch's binary with its arguments and name its dispatches."""
    launch = call.launch
    backend = launch.config.options.backend
    if backend != "iree":
        return ClusterProfile(launch.name, len(launch.nodes), backend=backend,
                              note=f"ran on {backend}: its launch time is measured, dispatches are IREE's to replay")
    if call.args is None:
        return ClusterProfile(launch.name, len(launch.nodes),
                              note="ran on reference kernels (the cluster fell back): no dispatches")
    options = launch.compile_options()
    try:
        lowered = launch.lower(call.feeds, options.stages())  # for its locations: the step's binary is replayed
        exe = launch.executables[launch.signature(call.args[:len(launch.tensor_inputs)])]
        result = ClusterProfile(launch.name, len(launch.nodes),
                                executor=exe.device if exe.device != launch.config.device else "")
        return replayed(result, exe.vmfb, call.args, exe.device, options, lowered.text(debug_info=True),
                        launch.graph, iterations)
    except HlobridgeError as e:  # the step ran: its results and timeline stand, this cluster has no dispatches
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        return ClusterProfile(launch.name, len(launch.nodes), note=f"not profiled: {first}")


def replayed(result: ClusterProfile, vmfb: bytes, args: list, device: str, options, located_mlir: str,
             graph, iterations: int) -> ClusterProfile:
    """`result` with the dispatches of `vmfb` called with `args` on `device`, replayed, each named
    from `located_mlir` (the module's StableHLO with locations, compiled with `options`) and
    `graph` (for op types; None: unknown)."""
    times = replay(vmfb, args, DRIVERS[device], iterations=iterations, what=result.name)
    regions = dispatch_sites(located_mlir, options)
    by_keys = {tuple(sorted(s.key for s in region)): region for region in regions}
    fallback = body_labels(regions)
    for buffer in times.buffers:
        ms_of = dict(zip(slots(buffer.keys), buffer.ms))
        sites = by_keys.get(tuple(sorted(buffer.keys)))
        if sites is None:
            result.note = "a command buffer matched no dispatch region: named per dispatch function"
            sites = [fallback.get(k, DispatchSite(k, ())) for k in buffer.keys]
        for site, slot in zip(sites, slots([s.key for s in sites])):
            ms = ms_of[slot]
            ops = tuple(graph.nodes[n].op if graph is not None and n in graph.nodes else "?" for n in site.nodes)
            result.dispatches.append(DispatchProfile(result.name, len(result.dispatches), site.key, ms,
                                                     site.nodes, ops, site.shared))
    result.replay_ms, result.call_ms = times.span_ms, times.call_ms
    return result


def profile_module(model, feeds: dict, *, device: str = "cpu", steps: int = 5, iterations: int = 5,
                   graph=None) -> Profile:
    """The profile of one call of a compiled module's `main` (compile.driver.CompiledModel) with
    `feeds` (inputs by name): the call timed in this process (median of `steps` after one
    warm-up), its dispatches replayed; `graph` (what it was compiled from) names op types."""
    if steps < 1 or iterations < 1:
        raise InputError(f"profile_module needs steps >= 1 and iterations >= 1 (got {steps}, {iterations})")
    module = model.load(device)
    args = module.arguments(feeds)
    main = module.main
    main.call_device(*args)  # warm-up: first-call allocations
    runs = []
    for _ in range(steps):
        start = time.perf_counter()
        main.call_device(*args)
        ms = (time.perf_counter() - start) * 1e3
        runs.append(StepTimes(ms, {"main": ms}, {}))
    host = [np.array(to_host(a)) for a in args]
    cluster = replayed(ClusterProfile("main", 0), model.vmfb, host, device, model.options,
                       model.lowered.text(debug_info=True), graph, iterations)
    return Profile(runs, [cluster], device, [], iterations, subject="call of main")


__all__ = ["CapturedCall", "LaunchCapture", "ProfiledRun", "profile_cluster", "profile_module", "replayed"]
