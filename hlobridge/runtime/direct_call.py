"""The steady state of a plan that is one compiled call: `Session.run` as that call and little else.

Most inference graphs cluster whole: the plan is one `ClusterLaunch` fed by the feeds and by
constants. Its warm step still went through the general machinery: the values dict, the
launch's signature and executable lookup, DeviceArrays for the results, then each fetch
brought to the host and copied (`Plan.execute`). On cnn_infer_bn (a call of 37 us in IREE)
that was 17 us of Python around the call (benchmarks/call_overhead.py measures the path).

A plan's feed signature (names, dtypes, shapes) is fixed, so after its first run the single
launch's arguments always have the same signature, and the executable found then is the one
every later step uses. A `DirectCall` remembers it with where each argument comes from (a feed,
or a constant folded at plan time) and where each fetch comes from (an output of the call, a
feed, a constant), and a step is: arguments in order, the call, the fetched outputs copied out
of their buffers. The Session takes it only for plain steps (no trace or profile options, no
data-parallel step around it) and only where the plan allows: one compiled launch, no
variables, no input read by value that a feed could change.
"""

from __future__ import annotations

import numpy as np

from .cluster_launch import ClusterLaunch


class DirectCall:
    """A plan's one launch as a straight call: see the module docstring."""

    def __init__(self, exe, what: str, template: list, fed: list, fetch_from: list):
        self.exe = exe
        self.what = what
        self.template = template  # the arguments, constants filled in, feeds None
        self.fed = fed  # (argument position, feed TensorRef)
        # per fetch: ("out", output index) | ("feed", TensorRef) | ("constant", its value) | None
        self.fetch_from = fetch_from

    @classmethod
    def of(cls, plan, feeds: dict) -> DirectCall | None:
        """The direct call of `plan` after a run with `feeds`, or None where a step needs the plan."""
        if len(plan.units) != 1 or not isinstance(plan.units[0], ClusterLaunch):
            return None
        launch = plan.units[0]
        if launch.resources:
            return None
        values = {**plan.constants, **feeds}
        if any(r not in values for r in launch.tensor_inputs):
            return None
        if any(launch.tensor_inputs[i] in feeds for i in launch.value_inputs):
            return None  # its value is part of the signature, and the next feed may differ
        args = [values[r] for r in launch.tensor_inputs]
        exe = launch.executables.get(launch.signature(args))
        if exe is None or exe.resource_args or exe.written:
            return None
        outputs = {r: i for i, r in enumerate(launch.outputs)}
        fetch_from = []
        for ref in plan.fetch_refs:
            if ref is None:
                fetch_from.append(None)
            elif ref in outputs:
                fetch_from.append(("out", outputs[ref]))
            elif ref in feeds:
                fetch_from.append(("feed", ref))
            elif ref in plan.constants:  # as `Plan.execute` hands it back
                fetch_from.append(("constant", np.asarray(plan.constants[ref])))
            else:
                return None
        template = [None if r in feeds else plan.constants[r] for r in launch.tensor_inputs]
        fed = [(i, r) for i, r in enumerate(launch.tensor_inputs) if r in feeds]
        return cls(exe, launch._what, template, fed, fetch_from)

    def __call__(self, feeds: dict) -> list:
        """The fetched values, in the plan's fetch order (None for an op fetched for effect);
        a feed or constant fetched is handed back as `Plan.execute` hands it."""
        args = self.template.copy()
        for i, ref in self.fed:
            args[i] = feeds[ref]
        results = self.exe.fetch(args, self.what)
        fetched = []
        for source in self.fetch_from:
            if source is None:
                fetched.append(None)
            elif source[0] == "out":
                fetched.append(results[source[1]])
            elif source[0] == "feed":
                fetched.append(np.asarray(feeds[source[1]]))
            else:
                fetched.append(source[1])
        return fetched
