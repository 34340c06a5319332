"""Where a data-parallel Session's gradient all-reduce runs, and the plan unit that runs it
on the device (docs/distributed.md, "GPUs").

A `_HlobridgeAllReduce` node is a unit of the plan between the backward and the optimizer's
clusters. `placement` decides, once per plan, where it runs:

- "device" on a `cuda` Session with IREE as the backend, compiled clusters and a world started
  with `init(iree_channels=True)` (IREE's cuda device then has its MPI channel provider, which
  bootstraps NCCL): `DeviceAllReduce` calls `@bucket_mean` (device_allreduce.py), one
  `stablehlo.all_reduce` on IREE's NCCL channel, on the backward cluster's device arrays and
  hands device arrays to the optimizer's cluster. No host round trip.
- "host" everywhere else, with the reason: IREE's CPU drivers (local-sync, local-task) answer
  "collectives not implemented" (measured, IREE 3.13), XLA/PJRT's arrays have no channel here,
  jit="off" holds host arrays already, a launch without IREE's channel provider has none.
  The node's own kernel then reduces through MPI (ops/collective/allreduce.py).

Fallback: a bucket module that does not compile runs on the host with a JitFallbackWarning.
That is safe because a compile fails alike on every rank (the same text, the same compiler), so
no rank waits in NCCL for one that went to MPI; and the plan's collective fingerprint
(data_parallel.py) names the placement, so ranks that chose differently are refused before
they run. A failure *while* it runs (NCCL, a lost rank) is a CollectiveError naming the node:
falling back then could leave the other ranks inside NCCL. NCCL has no deadline of its own;
the per-run fingerprint all-reduce (MPI, with HLOBRIDGE_COLLECTIVE_TIMEOUT) finds a rank that
is gone before a step, and the launcher ends the job when one dies during it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..errors import HlobridgeError, JitFallbackWarning
from ..frontend.graph import TensorRef
from ..runtime.module import DRIVERS, load
from .device_allreduce import FUNCTION, all_reduce_module
from .world import CollectiveError

# What NCCL reduces and `@bucket_mean` divides: gradients are floating point.
DEVICE_DTYPES = frozenset(np.dtype(d) for d in ("float16", "float32", "float64"))


@dataclass(frozen=True)
class Placement:
    """Where one all-reduce runs ("device" or "host") and why."""

    where: str
    why: str

    def __str__(self) -> str:
        return f"on the {self.where}: {self.why}"


def placement(device: str, backend: str, jit: str, world, in_specs) -> Placement:
    """Where a bucket's all-reduce of `in_specs` runs on this Session (module docstring)."""
    if DRIVERS.get(device) != "cuda":
        return Placement("host", f"device '{device}': IREE's CPU drivers implement no collectives; MPI reduces "
                                 f"the bucket between the clusters")
    if backend != "iree":
        return Placement("host", f"the {backend} backend's arrays are copied to the host and reduced with MPI "
                                 f"(jax's multi-process runtime is not wired)")
    if jit == "off":
        return Placement("host", "jit=off: the gradients are host arrays already")
    if not getattr(world, "iree_channels", False):
        return Placement("host", "launched without init(iree_channels=True), so IREE's cuda device has no MPI "
                                 "channel provider to bootstrap NCCL")
    kinds = {np.dtype(s.dtype) for s in in_specs}
    if len(kinds) != 1 or not kinds <= DEVICE_DTYPES:
        return Placement("host", f"gradient dtype(s) {', '.join(sorted(map(str, kinds)))}: the device path "
                                 f"averages one floating dtype per bucket")
    if any(s.shape is None or any(d is None or d < 0 for d in s.shape) for s in in_specs):
        return Placement("host", "a gradient's shape is not known when the plan is made")
    return Placement("device", "one stablehlo.all_reduce on IREE's NCCL channel, on the device buffers")


class DeviceAllReduce:
    """A plan unit (`run(values, env)`): one bucket averaged over the ranks by a compiled
    `@bucket_mean` on the Session's device. Built by the plan when `placement` says "device";
    compiled (through the Session's compile cache) and loaded at its first run."""

    def __init__(self, step, world_size: int, options, device: str, cache):
        self.step = step  # the node's NodeStep: its host kernel, for the compile fallback
        self.name, self.node, self.in_specs, self.out_specs = step.name, step.node, step.in_specs, step.out_specs
        self.where = "device"  # in the plan's collective fingerprint (data_parallel.collectives_of)
        self.options, self.device, self.cache = options, device, cache
        shapes = [tuple(s.shape) for s in self.in_specs]
        self.text = all_reduce_module(shapes, self.in_specs[0].dtype, world_size)
        self._call = None
        self.fallback: str | None = None  # why it runs on the host after all

    def build(self) -> bytes:
        """The compiled bucket module for the Session's target (no device needed)."""
        return self.cache.get_or_compile(self.text, self.options)[0]

    def _prepare(self) -> None:
        try:
            vmfb = self.build()
        except HlobridgeError as e:
            self.fallback = (str(e).splitlines() or ["compile failed"])[0]
            warnings.warn(f"node '{self.name}': the device all-reduce did not compile ({self.fallback}); "
                          f"it reduces on the host", JitFallbackWarning, stacklevel=3)
            return
        self._call = load(vmfb, self.device).functions[FUNCTION].call_unchecked

    def run(self, values: dict, env) -> None:
        if self._call is None and self.fallback is None:
            self._prepare()
        if self.fallback is not None:
            self.step.run(values, env)
            return
        args = [values[r] for r in self.node.inputs]
        try:
            results = self._call(args)
        except RuntimeError as e:  # IREE's errors (NotImplementedError is one)
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise CollectiveError(f"node '{self.name}' (gradient bucket {self.node.attrs.get('bucket')}): the "
                                  f"all-reduce on device '{self.device}' failed: {first}") from None
        for i, value in enumerate(results):
            values[TensorRef(self.name, i)] = value
