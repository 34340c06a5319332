"""Building a signature's row parts (row_split.py runs them): whether it splits, and the parts'
modules compiled beside the whole module's.

Which signatures split is row_split.py's rule: a cluster on the pool (its estimated work above
--small-cluster-flops) with no variables, a static batch of at least 2 rows, work of at least
--row-split-flops, and no op that lets a row see another. All of that is known once the whole
module is lowered, before IREE compiles it, so `RowParts.start` starts the parts' compiles then
(each part size's module, and an odd row's two halves) and they run beside the whole module's
on the session's compile threads. `finish` checks what only the loaded module says (it runs on
the pool, reads no variables) and assembles the parts. A first run of MobileNetV2 at batch 2
compiles two modules of about the same size: one after the other 19.8-25.4 s, side by side
13.9-19.3 s on the 2-core VM (docs/performance.md, "Tried, kept and dropped").
"""

from __future__ import annotations

import logging
import math
from concurrent.futures import Future
from dataclasses import dataclass, replace

import numpy as np

from .. import flags
from ..analysis.batch_rows import mixing_node
from ..analysis.layer_cut import layer_cut
from ..analysis.shape_inference import infer_specs
from ..compile.backend import backend_of
from ..errors import HlobridgeError
from ..passes.graph.mark_for_compilation import Cluster
from .host import PlannedArg, shape_of
from .module import LoadedModule
from .row_split import MAX_SPLIT_WEIGHT_BYTES, PipedRow, RowSplit, part_sizes, usable_cpus

log = logging.getLogger(__name__)


@dataclass
class _Halves:
    """An odd row's two halves being built: their launches' builds and which inputs each reads."""

    builds: list[Future]
    first_inputs: list[int]
    second_inputs: list[int]


@dataclass
class RowParts:
    """A signature's row parts being built: `builds` by part size, `halves` where the odd row is
    cut in two."""

    launch: object  # the ClusterLaunch (cluster_launch.py)
    args: list
    batch: int
    batched: list[int]  # the arguments with a batch dimension
    sizes: list[int]
    builds: dict[int, Future]
    halves: _Halves | None

    @classmethod
    def start(cls, launch, args: list, work: int | None, driver_of) -> RowParts | None:
        """The row parts of `launch`'s signature of `args` with their builds started, if it
        splits; `work`: the whole module's estimated work (None: unknown, no parts);
        `driver_of(work)`: the IREE driver a module of that work runs on."""
        wanted = flags.from_environment()
        if (len(usable_cpus()) < 2 or not wanted.row_split or work is None or work < wanted.row_split_flops
                or driver_of(work) != "local-task" or launch.resources or launch.dynamic
                or backend_of(launch.compile_options()).name != "iree"):
            return None
        feeds = launch.feed_specs(args, dynamic=True)  # the batch `?`, as Session(dynamic_dims="batch") has it
        batched = [i for i, spec in enumerate(feeds.values()) if spec.shape and spec.shape[0] is None]
        batch = shape_of(args[batched[0]])[0] if batched else 0
        specs = _splittable(launch, feeds) if batch >= 2 else None
        if specs is None:
            return None
        sizes = part_sizes(batch, len(usable_cpus()))
        parts = cls(launch, args, batch, batched, sizes, {}, None)
        if len(sizes) == 2 and sizes[0] > sizes[1] and wanted.row_cut:
            parts.halves = _start_halves(launch, parts.rows_of(1), specs)
            if parts.halves is not None:  # two parts of the smaller size, and the odd row in halves
                parts.sizes = [sizes[1]] * 2
        for n in set(parts.sizes):
            parts.builds[n] = parts.build(n)
        return parts

    def rows_of(self, n: int) -> list:
        """Stand-ins for the arguments of a part of `n` rows."""
        return [PlannedArg(np.dtype(a.dtype), (n, *shape_of(a)[1:])) if i in self.batched else a
                for i, a in enumerate(self.args)]

    def build(self, rows: int) -> Future:
        """A part of `rows` rows, compiling on a compile thread: the cluster's options; for one
        row, data-tiled weights packed at compile time (data_tiling="ahead"), so that the parts
        of one binary share them (part_calls). MobileNetV2 batch 2 as two 1-row
        parts, one process, the parts' split against a module each with its weights packed at
        load, 15 interleaved blocks (2026-11-29): 0.91 and 0.93; its 1-row module alone is as
        fast either way. Its 2-row module packed at compile time is 10-15% slower alone, and
        batch 5's 2-row parts ran 1.09x shared that way: they keep a copy each."""
        options = self.launch.compile_options()
        if options.data_tiling == "on" and rows == 1:
            options = replace(options, data_tiling="ahead")
        return self.launch._build(self.rows_of(rows), background=True, options=options)

    def finish(self, exe) -> RowSplit | None:
        """The parts, once built, for `exe`, the whole module loaded: None where it does not run
        on the pool or reads variables after all, or where a part fails to compile."""
        if not exe.pool or exe.backend != "iree" or exe.resource_args or exe.written:
            return None
        name = self.launch.name
        piped = _finish_halves(name, self.halves) if self.halves is not None else None
        if self.halves is not None and piped is None:  # the odd row whole after all: its own size
            self.sizes = part_sizes(self.batch, len(usable_cpus()))
            self.builds.update((n, self.build(n)) for n in set(self.sizes) - set(self.builds))
        try:
            binaries = {n: self.builds[n].result().vmfb for n in set(self.sizes)}
            calls = part_calls([binaries[n] for n in self.sizes])
        except HlobridgeError as e:
            log.info("cluster %s: batch %d not split into rows (%s)", name, self.batch, e)
            return None
        if any(call is None for call in calls):  # an IREE whose invoker is laid out otherwise
            return None
        log.info("cluster %s: batch %d runs as row parts %s%s, one per CPU", name, self.batch, self.sizes,
                 " and a row cut in two" if piped else "")
        return RowSplit(calls, self.sizes, self.batched, piped)


def _splittable(launch, feeds: dict) -> dict | None:
    """The cluster's specs for `feeds` (a `?` batch) where no op of the cluster lets a row of
    the batch see another, every output is laid out one row per example
    (analysis/batch_rows.py), and its constants are at most MAX_SPLIT_WEIGHT_BYTES (every part
    reads them all); else None."""
    try:
        specs = infer_specs(launch.graph, set(launch.nodes), {**feeds, **launch.resource_specs}, launch.functions)
    except HlobridgeError:
        return None
    if any(not specs[r].shape or specs[r].shape[0] is not None for r in launch.outputs):
        return None
    weights = sum(math.prod(s.shape) * np.dtype(s.dtype).itemsize for r, s in specs.items()
                  if launch.graph.nodes[r.node].op == "Const" and s.is_static and not isinstance(s.dtype, str))
    if weights > MAX_SPLIT_WEIGHT_BYTES or mixing_node(launch.graph, launch.nodes, specs, launch.outputs) is not None:
        return None
    return specs


def _start_halves(launch, row: list, specs: dict) -> _Halves | None:
    """An odd batch's last row as two calls (row_split.PipedRow), the cluster cut between its
    layers (analysis/layer_cut.py), both halves compiling; None where no cut is found or a half
    cannot be lowered. `row`: the arguments of one row; `specs`: the cluster's with a `?` batch."""
    cut = layer_cut(launch.graph, launch.nodes, launch.tensor_inputs, launch.outputs, specs)
    if cut is None or None in specs[cut.cut].shape[1:]:  # a row of the cut: a static shape
        return None
    at = {r: i for i, r in enumerate(launch.tensor_inputs)}
    cut_row = PlannedArg(np.dtype(specs[cut.cut].dtype), (1, *specs[cut.cut].shape[1:]))
    builds = []
    try:
        for part, nodes, inputs, outputs, half_args in (
                ("a", cut.first, cut.first_inputs, [cut.cut], [row[at[r]] for r in cut.first_inputs]),
                ("b", cut.second, cut.second_inputs, launch.outputs,
                 [cut_row, *(row[at[r]] for r in cut.second_inputs[1:])])):
            half = type(launch)(launch.graph, Cluster(f"{launch.name}_row_{part}", launch.cluster.device, nodes,
                                                       inputs, outputs), specs, launch.config, launch.state,
                                 functions=launch.functions)
            if part == "b" and 0 in half.value_inputs:
                return None  # the second half would read the cut as a constant: its values, per call
            builds.append(half._build(half_args, background=True))
    except HlobridgeError as e:
        log.info("cluster %s: the odd row not cut at %s (%s)", launch.name, cut.cut, e)
        return None
    except Exception as e:  # noqa: BLE001 (a bug here must not fail the user's run: the row stays whole)
        log.warning("cluster %s: the odd row not cut at %s (%s: %s; please report it)", launch.name, cut.cut,
                    type(e).__name__, e)
        return None
    return _Halves(builds, [at[r] for r in cut.first_inputs], [at[r] for r in cut.second_inputs[1:]])


def _finish_halves(name: str, halves: _Halves) -> PipedRow | None:
    """The odd row's two calls once both halves are built; None where one failed to compile."""
    try:
        calls = [call for build in halves.builds for call in part_calls([build.result().vmfb])]
    except HlobridgeError as e:
        log.info("cluster %s: the odd row not cut in two (%s)", name, e)
        return None
    if None in calls:
        return None
    return PipedRow(*calls, halves.first_inputs, halves.second_inputs)


def part_calls(binaries: list[bytes]) -> list:
    """Each part's call on local-sync, with a VM context of its own (a context is not to be
    called from two threads at once); parts of one binary share its loaded module, and so its
    constants: a part compiled with data_tiling="ahead" holds its packed weights there, where
    packing them at load gives every context a copy of its own (None: a call IREE's invoker
    does not lay out as StraightCall expects)."""
    loaded: dict = {}
    calls = []
    for binary in binaries:
        shared = loaded.get(id(binary))
        module = LoadedModule(binary, "cpu", vm_module=shared.vm_module if shared else None)
        loaded.setdefault(id(binary), module)
        calls.append(module.functions["main"]._straight)
    return calls

