"""A launch plan: what one `Session.run` signature executes, as a list of units.

A unit is anything with `run(values, env)`: a `NodeStep` (one node on its reference kernel,
interpreter.py) or a `ClusterLaunch` (one compiled call, cluster_launch.py). `values` maps
TensorRefs to what is known so far (constants folded at plan time, feeds, results); `env` is
the run's `RunEnv`. The Session runs the units in order and knows nothing of their kinds;
tracing (debug/timeline.py) wraps them. A unit whose class says `host_kernels = False` (a
cluster launch) runs no NumPy kernel that could warn, so a plan of such units alone skips
NumPy's errstate: its steady state is the calls and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import dtypes
from ..frontend.graph import TensorRef
from ..ops.control.state import VariableHandle
from .host import is_device_array, to_host


@dataclass
class RunEnv:
    """What units share during a run: the Session's variables and the function runner that
    kernels of If/While/Case call their bodies through."""

    variables: object  # ops.control.state.VariableStore
    functions: object  # interpreter.FunctionRunner


@dataclass
class Plan:
    """The units of one (fetches, feed signature), in dependency order, with what planning found."""

    units: list  # NodeStep | ClusterLaunch
    constants: dict  # TensorRef -> value: tensors whose value shape inference folded
    specs: dict  # TensorRef -> TensorSpec
    fetch_refs: list  # TensorRef per fetch (None for an op fetched for effect)
    clustering: object  # passes.graph.mark_for_compilation.Clustering
    ran: bool = False  # whether it has run (its first run starts its clusters' compiles)
    direct: object = None  # its steady step as one call (direct_call.py); False: none; None: not asked yet

    def __post_init__(self):
        self.host_kernels = any(getattr(u, "host_kernels", True) for u in self.units)

    def execute(self, feeds: dict, env: RunEnv, units: list | None = None) -> dict:
        """Run `units` (default: the plan's own; a traced run passes wrapped ones) and return
        the fetched tensors as NumPy arrays, by TensorRef."""
        values: dict[TensorRef, object] = {**self.constants, **feeds} if self.constants else dict(feeds)
        if self.host_kernels:
            with np.errstate(all="ignore"):  # a kernel's inf or nan is the answer, as in TF: no warning
                for unit in self.units if units is None else units:
                    unit.run(values, env)
        else:
            for unit in self.units if units is None else units:
                unit.run(values, env)
        fetched = {}
        for r in self.fetch_refs:
            if r is None:
                continue
            v = values[r]
            if isinstance(v, VariableHandle) and self.specs[r].dtype != dtypes.RESOURCE:
                v = env.variables.read_host(v, "fetch")
            # a copy of device data: the user may write to it, the buffer may back a variable
            fetched[r] = np.array(to_host(v)) if is_device_array(v) else np.asarray(v)
        return fetched
