"""A cluster in a launch plan: encapsulated as one StableHLO function, compiled per input
signature when it first runs (or, where a plan's first run knows the signatures of several,
all of them side by side before it: `compile_ahead`), launched as one IREE call.

The function's arguments are [tensors][variables read]; its results are [outputs]
[variables written]. Inputs a member reads as a compile-time constant (a shape, an axis)
are part of the signature by value, as TensorFlow's [constants] arguments are
(analysis/const_analysis.py): such a cluster compiles once per distinct value. Everything
else keys by dtype and shape.

A launch is a plan unit (`run(values, env)`, as a node step is): it owns the call, the
variable traffic around it, and the fallback. A signature that fails to lower or compile
falls back to the members' reference kernels with a `JitFallbackWarning` (TensorFlow falls
back silently); under `jit="strict"` it is an error. A cluster that keeps meeting new
signatures is reported with a `RecompilationWarning` naming the shapes that changed.
"""

from __future__ import annotations

import json
import logging
import os
import time
import warnings
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from hlobridge.passes.graph.mark_for_compilation import VARIABLES, Cluster
from hlobridge.passes.ir import pipeline
from hlobridge.passes.ir.ir_helpers import note_in_reflection, signed_functions
from hlobridge.passes.ir.tie_variables import ALIASED_KEY, FRESH_KEY, TIED_KEY
from hlobridge.passes.ir.work_estimate import work_in_text, work_of

from .. import dtypes, flags
from ..analysis.const_analysis import constant_inputs
from ..analysis.shape_inference import infer_specs
from ..compile.backend import backend_of
from ..compile.cache import CompileCache
from ..compile.driver import CompileOptions, format_specs
from ..compile.flight import SingleFlight
from ..debug import progress
from ..debug.dump import Dumper, cluster_dumper
from ..debug.graphviz import dump_stablehlo_dot
from ..errors import HlobridgeError, JitFallbackWarning, RecompilationWarning
from ..frontend.graph import Graph, TensorRef
from ..lowering.driver import lower_to_stablehlo
from ..ops.backend_style import lowering_for
from ..spec import TensorSpec
from .host import PlannedArg, dtype_name, shape_of, to_host
from .caller_affinity import waiting_beside_the_pool
from .module import DRIVERS, invoke_or_raise
from .cluster_key import cluster_key_parts
from .row_parts import RowParts
from .row_split import RowSplit, SplitTrial

log = logging.getLogger(__name__)


@dataclass
class CompileEvent:
    """One signature of one cluster: how it was obtained and how long that took."""

    cluster: str
    shapes: tuple
    source: str  # "compiled" | "disk" | "memory" | "fallback"
    seconds: float
    started: float = 0.0  # time.perf_counter() when it began (for timelines)
    lowering: float = 0.0  # of `seconds`, hlobridge's: the cluster to verified StableHLO text, its passes included
    iree: float = 0.0  # of `seconds`, the backend compiler's (iree-compile's, or the XLA artifact's)
    backend: str = "iree"  # who compiled it (compile/backend.py)

    def input_texts(self) -> list[str]:
        """'float32[32,28,28,1]' per tensor input (timelines, the profiler's compile lines)."""
        return [f"{d}[{','.join('?' if n is None else str(n) for n in s)}]" for d, s in self.shapes]


@dataclass
class Built:
    """A signature's binary as a build found or made it, and what each part took (seconds)."""

    key: str  # the compile cache's
    vmfb: bytes
    source: str  # "compiled" | "disk" | "memory"
    lowering: float = 0.0
    iree: float = 0.0


@dataclass(frozen=True)
class JitConfig:
    """The settings every launch of a session shares."""

    device: str
    options: CompileOptions
    strict: bool = False
    recompile_warning: int = 4  # warn when a cluster compiles more signatures than this
    dynamic_dims: str | None = None  # "batch": one module per cluster for every batch (see batch_key)


@dataclass
class JitState:
    """What a session's launches accumulate: the compile cache, the compile events (in order),
    and the signatures each cluster met, across plans (for RecompilationWarning)."""

    cache: CompileCache
    events: list = field(default_factory=list)
    history: dict = field(default_factory=dict)  # cluster members -> signatures seen
    _compile_threads: ThreadPoolExecutor | None = None

    def in_background(self, job) -> Future:
        """Run `job`, a build, on the session's compile threads. IREE compiles in a subprocess,
        so compiles overlap one another and the lowering of the next cluster on the calling
        thread (MLIR stays on that thread)."""
        if self._compile_threads is None:
            self._compile_threads = ThreadPoolExecutor(COMPILE_THREADS, thread_name_prefix="hlobridge-compile")
        return self._compile_threads.submit(job)


COMPILE_THREADS = min(4, os.cpu_count() or 1)  # each iree-compile runs threads of its own


def _chain(future: Future, convert) -> Future:
    """A future of convert(future's result), failing as `future` does."""
    out: Future = Future()

    def done(f: Future) -> None:
        if f.exception() is not None:
            out.set_exception(f.exception())
        else:
            out.set_result(convert(f.result()))
    future.add_done_callback(done)
    return out


def compile_ahead(launches: list, values: dict) -> None:
    """Before a plan's first run: where planning knows the signatures two or more of its
    launches will meet (their inputs' shapes static, the values of inputs read as constants
    folded or fed), start compiling them all, side by side; each launch waits for its own
    binary when it first runs. Cold starts of two and four clusters around host kernels
    (benchmarks/compile_ahead.py, 2-core VM): 0.55x and 0.61x. A launch fed by a tensor of
    data-dependent shape (BERT-2 training's second cluster reads Unique's output) compiles when
    it first runs, as before. HLOBRIDGE_FLAGS --no-compile-ahead compiles each cluster when it
    first runs."""
    if not flags.from_environment().compile_ahead:
        return
    planned = [(launch, key, args) for launch in launches if (args := launch.planned_args(values)) is not None
               and (key := launch.signature(args)) not in launch.executables]
    if len(planned) > 1:
        for launch, key, args in planned:
            launch.compile_ahead(key, args)


# Which of the launch's variables (by position) a binary reads and writes, in argument and
# result order: a binary shared by clusters that differ only in names (runtime/cluster_key.py)
# serves each launch with its own variables.
VARIABLES_KEY = "hlobridge.variables"


class Executable:
    """A compiled signature: the module's fast invoke, which of the launch's `variables` it
    reads and writes, which of those it writes in place and which come back in buffers of their
    own (as its reflection says: a binary from the cache needs no lowering to say), and which
    backend (compile/backend.py) runs it."""

    def __init__(self, vmfb: bytes, device: str, n_outputs: int, variables: list, backend: str = "iree"):
        self.vmfb = vmfb  # the binary (the memory cache's bytes, not a copy): the profiler replays it
        self.backend = backend
        load = backend_of(CompileOptions(backend=backend)).load
        self.module = load(vmfb, device)  # keeps the VM context alive
        main = self.module.functions["main"]
        self.device = executor_device(device, work_of(main.reflection)) if backend == "iree" else device
        if self.device != device:
            self.module = load(vmfb, self.device)
            main = self.module.functions["main"]
        self.call = main.call_unchecked  # args -> results as a tuple (module.py, straight_call.py)
        self.straight = getattr(main, "_straight", None)  # IREE's call without its invoker, if any
        self.pool = self.module.driver == "local-task"  # calls wait beside the pool (caller_affinity.py)
        self.rows: RowSplit | None = None  # the call as row parts, one per CPU (row_split.py)
        self.trial: SplitTrial | None = None  # while set, calls alternate between rows and the pool
        at = json.loads(main.reflection[VARIABLES_KEY])
        self.resource_args = [variables[i] for i in at["read"]]
        self.written = [variables[i] for i in at["written"]]
        self.n_outputs = n_outputs
        first_variable = len(main.signature.inputs) - len(self.resource_args)
        # passes/ir/tie_variables.py: (argument, result) pairs; results in buffers of their own
        self.overwritten = {i - first_variable for i, _ in json.loads(main.reflection.get(TIED_KEY, "[]"))}
        self.fresh = {k - n_outputs for k in json.loads(main.reflection.get(FRESH_KEY, "[]"))}
        # the variables a result may be a view of (all of them if the compiler did not say)
        aliased = main.reflection.get(ALIASED_KEY)
        self.aliased = set(range(len(self.resource_args))) if aliased is None \
            else {i - first_variable for i in json.loads(aliased)}

    def launch(self, args: list, what: str) -> tuple:
        """The call's results: device arrays (beside the pool, or on this thread), or arrays of
        their own where it ran as row parts."""
        return self._launch(args, what)[0]

    def fetch(self, args: list, what: str) -> list:
        """The call's outputs as NumPy arrays of their own, as a fetch hands them to the user: on
        the calling thread straight from the buffers (straight_call.py), as row parts joined
        into new arrays, else copied from the device arrays."""
        if self.rows is None and not self.pool and self.straight is not None:
            return invoke_or_raise(self.straight.host_copies, (args,), what)[:self.n_outputs]
        results, as_parts = self._launch(args, what)
        results = results[:self.n_outputs]
        return list(results) if as_parts else [np.array(to_host(r)) for r in results]

    def _launch(self, args: list, what: str) -> tuple[tuple, bool]:
        """The call's results, and whether it ran as row parts."""
        if self.trial is not None:
            return self._on_trial(args, what)
        as_parts = self.rows is not None
        return self._call(args, what, as_parts), as_parts

    def _call(self, args: list, what: str, as_parts: bool) -> tuple:
        if as_parts:
            return invoke_or_raise(self.rows.call, (args,), what)
        if self.pool:
            with waiting_beside_the_pool(self.module.driver):
                return invoke_or_raise(self.call, (args,), what)
        return invoke_or_raise(self.call, (args,), what)

    def _on_trial(self, args: list, what: str) -> tuple[tuple, bool]:
        """A call of the trial between the row parts and the pool (row_split.SplitTrial); the
        last one keeps the faster and ends the trial."""
        trial = self.trial
        with trial.lock:
            if self.trial is None:  # ended while this thread waited for the lock
                return self._launch(args, what)
            as_parts = trial.pick()
            start = time.perf_counter()
            results = self._call(args, what, as_parts)
            kept = trial.record(as_parts, time.perf_counter() - start)
            if kept is not None:
                log.info("%s: row parts %s %s (%.3g ms a call against %.3g on the pool)", what,
                         self.rows.sizes, "kept" if kept else "dropped", trial.median_ms(True), trial.median_ms(False))
                if not kept:
                    self.rows = None
                self.trial = None
        return results, as_parts

    def variable_args(self, values: dict, variables, reader: str) -> list:
        """The values of the variables the call reads, in argument order: those it overwrites
        as buffers nobody else holds (VariableStore.read_to_overwrite), after every plain read
        (lent where a result may be a view of it); a variable also read under another handle
        (one shared_name) is overwritten in a copy."""
        args = [None if i in self.overwritten else variables.read(values[r], reader, lend=i in self.aliased)
                for i, r in enumerate(self.resource_args)]
        if not self.overwritten:
            return args
        repeated = {name for name, n in Counter(values[r].name for r in self.resource_args).items() if n > 1}
        for i in self.overwritten:
            handle = values[self.resource_args[i]]
            if handle.name in repeated:  # also an argument of its own: a copy to overwrite
                args[i] = to_host(variables.read(handle, reader))
            else:
                args[i] = variables.read_to_overwrite(handle, reader)
        return args

    def write_variables(self, results, values: dict, variables) -> None:
        """Store the variables the call wrote; one whose buffer another result shares is lent."""
        for j, (r, v) in enumerate(zip(self.written, results)):
            variables.write(values[r], v, shared=j not in self.fresh)


def executor_device(device: str, work: int | None) -> str:
    """Where a cluster runs: on "cpu-task", one whose estimated work (passes/ir/work_estimate.py;
    None: not estimated, a dynamic shape) is at most HLOBRIDGE_FLAGS --small-cluster-flops runs on the calling thread ("cpu", IREE's
    local-sync): handing a call to the thread pool and waiting for it costs more than such a
    cluster computes (2-core VM, each step's median, local-sync / local-task: seed_linreg 0.43,
    seed_mnist_softmax 0.54, cnn_infer_bn 0.45; mlp_adam 1.08 and BERT-2 1.04, so they stay on
    the pool). Buffers are host memory on both, so a variable moves between them as it is."""
    small = work is not None and work <= flags.from_environment().small_cluster_flops
    return "cpu" if small and DRIVERS.get(device) == "local-task" else device


def _shape_key(value) -> tuple:
    return (dtype_name(value.dtype), shape_of(value))


DYNAMIC_DIMS = (None, "batch")


def batch_key(keys: list, skip=()) -> list:
    """The (dtype, shape) keys with the batch left dynamic (Session(dynamic_dims="batch")):
    dimension 0 becomes None in every input whose dimension 0 equals the first such input's
    (`skip`: inputs read as constants keep their shapes). So every `?` of one signature is the
    same size when it runs, the symbol rule the dynamic module is built on
    (analysis/symbolic_dims.py), and inputs whose dimension 0 differs stay static."""
    batch = next((shape[0] for i, (_, shape) in enumerate(keys) if i not in skip and shape), None)
    if batch is None:
        return keys
    return [(d, (None, *shape[1:])) if i not in skip and shape and shape[0] == batch else (d, shape)
            for i, (d, shape) in enumerate(keys)]


class ClusterLaunch:
    """A plan unit: one cluster, compiled per signature and launched as one call.

    `members` are the members' node steps, in order: the fallback runs them. `functions`
    (ops.calls.Functions) serves shape inference and lowering of If/While/Case members.
    """

    host_kernels = False  # Plan.execute: a launch sets its own errstate where it falls back

    def __init__(self, graph: Graph, cluster: Cluster, specs: dict, config: JitConfig, state: JitState,
                 members: list | None = None, functions=None):
        self.graph = graph
        self.cluster = cluster
        self.name = cluster.name
        self.nodes = cluster.nodes
        self.config = config
        self.state = state
        self.members = members or []
        self.functions = functions
        self.resources = [r for r in cluster.inputs if self._is_variable(r, specs)]
        self.tensor_inputs = [r for r in cluster.inputs if r not in self.resources]
        self.resource_specs = {r: specs[r] for r in self.resources}
        by_value = constant_inputs(graph, cluster.nodes)
        self.value_inputs = [i for i, r in enumerate(self.tensor_inputs) if r in by_value]
        self.input_specs = [specs[r] for r in self.tensor_inputs]
        self.outputs = cluster.outputs
        self.executables: dict[tuple, Executable | None] = {}
        self.ahead: dict[tuple, tuple[Future, float]] = {}  # signature -> (its build, when it began)
        self._first_runs = SingleFlight()  # signatures being made, by the first thread that met them
        # Session(dynamic_dims="batch"): signatures with a `?` batch, until one fails to compile
        self.dynamic = config.dynamic_dims == "batch" and config.options.backend == "iree"

    @cached_property
    def op_histogram(self) -> dict[str, int]:
        """{op type: count} of the cluster's nodes (timelines record it with every launch: on a
        frozen ResNet-50, counting 1,830 nodes again took 1.5 ms a traced step)."""
        return self.cluster.op_histogram(self.graph)

    def run(self, values: dict, env, members: Iterable | None = None) -> None:
        """Launch on `values` (TensorRef -> value), reading and writing `env.variables`; or run
        `members` (default: this launch's steps) on their kernels if this signature fell back."""
        args = [values[r] for r in self.tensor_inputs]
        exe = self.executable(self.signature(args), args)
        if exe is None:
            with np.errstate(all="ignore"):  # a kernel's inf or nan is the answer, as in TF
                for step in self.members if members is None else members:
                    step.run(values, env)
            return
        if exe.resource_args:
            args += exe.variable_args(values, env.variables, self.name)
        results = exe.launch(args, self._what)
        n = exe.n_outputs
        values.update(zip(self.outputs, results[:n]))
        if exe.written:
            exe.write_variables(results[n:], values, env.variables)

    @cached_property
    def _what(self) -> str:
        return f"cluster '{self.name}' ({len(self.nodes)} nodes)"

    def _is_variable(self, ref: TensorRef, specs: dict) -> bool:
        return specs[ref].dtype == dtypes.RESOURCE or self.graph.nodes[ref.node].op in VARIABLES

    def signature(self, args: list) -> tuple:
        """The compile key of these arguments: dtypes and shapes, plus values of constant inputs."""
        key = tuple(map(_shape_key, args))
        if self.dynamic:
            key = tuple(batch_key(list(key), self.value_inputs))
        if self.value_inputs:
            key += tuple(np.asarray(to_host(args[i])).tobytes() for i in self.value_inputs)
        return key

    def executable(self, key: tuple, args: list) -> Executable | None:
        """The compiled function for these arguments (None: run the members on their kernels).
        Threads making the first run of a signature at once wait for one build (single flight)."""
        if key in self.executables:
            return self.executables[key]
        return self._first_runs.do(key, lambda: self._make_executable(key, args))

    def _make_executable(self, key: tuple, args: list) -> Executable | None:
        if key in self.executables:  # made while this thread was claiming it
            return self.executables[key]
        build, start = self.ahead.pop(key, (None, time.perf_counter()))
        if build is None and not flags.from_environment().dump_to:  # (dumps: _compile lowers stage by stage)
            build = self._build(args, background=True)
        # a lowering that says how much work the module is: its row parts compile beside it
        work = getattr(build, "work", None)
        parts = RowParts.start(self, args, work, self._driver_of) if work is not None else None
        built = None
        try:
            exe, built = self._compile(args) if build is None else self._finish(build)
            source = built.source
        except HlobridgeError as e:
            if self._is_dynamic(key):  # an op without a `?` rule: this cluster compiles per shape
                log.info("cluster %s: no module with a dynamic batch (%s); compiling per shape", self.name, e)
                self.dynamic = False
                return self.executable(self.signature(args), args)
            if self.config.strict:
                raise HlobridgeError(f"jit=strict: cluster {self.name} failed to compile: {e}") from None
            warnings.warn(JitFallbackWarning(
                f"cluster {self.name} ({len(self.nodes)} ops) did not compile for inputs "
                f"{self._describe(key)}; running its ops on reference kernels. Cause: {e}"), stacklevel=5)
            exe, source = None, "fallback"
        if exe is not None:
            if work is None:  # (found in a cache, or dumped): the loaded module says
                parts = RowParts.start(self, args, work_of(exe.module.functions["main"].reflection), self._driver_of)
            exe.rows = parts.finish(exe) if parts is not None else None
            if exe.rows is not None and flags.from_environment().row_split_trial:
                exe.trial = SplitTrial()
        self._record(key, source, start, time.perf_counter() - start, built)
        self.executables[key] = exe
        progress.advance()
        return exe

    def _driver_of(self, work: int) -> str | None:
        """The IREE driver a module of this estimated work runs on (executor_device)."""
        return DRIVERS.get(executor_device(self.config.device, work))

    def _is_dynamic(self, key: tuple) -> bool:
        return any(None in shape for _, shape in key[:len(self.tensor_inputs)])

    def feed_specs(self, args: list, dynamic: bool | None = None) -> dict:
        """The specs `lower` takes for these arguments: dtypes and shapes (a `?` batch where
        `dynamic`, by default `self.dynamic`), and the values of the inputs read as constants."""
        shapes = [tuple(arg.shape) for arg in args]
        if self.dynamic if dynamic is None else dynamic:
            shapes = [s for _, s in batch_key([(None, s) for s in shapes], self.value_inputs)]
        feeds = {}
        for i, (ref, arg, shape) in enumerate(zip(self.tensor_inputs, args, shapes)):
            value = np.asarray(to_host(arg)) if i in self.value_inputs else None
            feeds[ref] = TensorSpec(np.dtype(arg.dtype), shape, value)
        return feeds

    def planned_args(self, values: dict) -> list | None:
        """Stand-ins for the arguments of this launch's first run, as planning knows them
        (`values`: tensors folded at plan time and feeds; else each input's static spec, with
        the value of one read as a constant), or None where planning does not know them."""
        args = []
        for i, (ref, spec) in enumerate(zip(self.tensor_inputs, self.input_specs)):
            if ref in values:
                args.append(values[ref])
            elif not spec.is_static or (i in self.value_inputs and spec.value is None):
                return None
            else:
                args.append(np.asarray(spec.value, spec.dtype) if i in self.value_inputs
                            else PlannedArg(np.dtype(spec.dtype), tuple(spec.shape)))
        return args

    def compile_ahead(self, key: tuple, args: list) -> None:
        """Start building signature `key`, of `args`, not compiled yet (lowered here, compiled on
        a compile thread); `executable` waits for it. Not when HLOBRIDGE_FLAGS asks for dumps
        (they are written as the cluster first runs)."""
        if key in self.ahead or flags.from_environment().dump_to:
            return
        start = time.perf_counter()
        self.ahead[key] = (self._build(args, background=True), start)

    def _compile(self, args: list) -> tuple[Executable, Built]:
        dump = cluster_dumper(self.name)  # HLOBRIDGE_FLAGS --dump-to: DIR/NNN-<cluster>/
        if dump.enabled:  # the stages are wanted: lower, then look the text up
            options = self.compile_options()
            start = time.perf_counter()
            text = self.lower(self.feed_specs(args), options.stages(), dump).text()
            lowered = time.perf_counter()
            vmfb, source = self.state.cache.get_or_compile(text, options, dump)
            built = Built("", vmfb, source, lowered - start, time.perf_counter() - lowered)
            return Executable(vmfb, self.config.device, len(self.outputs), self.resources,
                              backend_of(options).name), built
        return self._finish(self._build(args, background=False))

    def _build(self, args: list, background: bool, options: CompileOptions | None = None) -> Future:
        """The binary of this signature, as a future Built: found in the cache by what the
        cluster is lowered from (a hit lowers nothing), else lowered here and compiled, on a
        compile thread when `background`; with `options` in place of the cluster's own. A
        HlobridgeError is its result. Where this build lowered the cluster, the future's `work`
        is the module's estimated work (passes/ir/work_estimate.py), known before it compiles."""
        build: Future = Future()
        try:
            feeds = self.feed_specs(args)
            options, cache = options or self.compile_options(), self.state.cache
            key = cache.key_of(cluster_key_parts(self.graph, self.nodes, self.tensor_inputs, self.outputs,
                                                 feeds, self.resource_specs, options), options)
            claim = cache.claim(key)  # one build per key, across threads and processes
        except HlobridgeError as e:
            build.set_exception(e)
            return build
        if isinstance(claim, tuple):
            build.set_result(Built(key, *claim))
            return build
        if isinstance(claim, Future):  # a thread of this process is building it: wait for that
            return _chain(claim, lambda found: Built(key, *found))
        try:
            start = time.perf_counter()
            progress.report("lowering", self._progress_name())
            text = self.lower(feeds, options.stages()).text()
            lowering = time.perf_counter() - start
        except BaseException as e:
            claim.fail(e)
            if not isinstance(e, HlobridgeError):
                raise
            build.set_exception(e)
            return build

        def compile_text() -> Built:
            start = time.perf_counter()
            progress.report(f"{options.backend}-compile", self._progress_name())
            try:
                vmfb = backend_of(options).compile(text, options)
            except BaseException as e:
                claim.fail(e)
                raise
            claim.finish(vmfb)
            return Built(key, vmfb, "compiled", lowering, time.perf_counter() - start)
        if background:
            build = self.state.in_background(compile_text)
        else:
            try:
                build.set_result(compile_text())
            except HlobridgeError as e:
                build.set_exception(e)
        build.work = work_in_text(text)
        return build

    def _finish(self, build: Future) -> tuple[Executable, Built]:
        """The Executable of a build (waiting for it)."""
        built = build.result()  # (a binary it compiled is in the cache already: Build.finish)
        return Executable(built.vmfb, self.config.device, len(self.outputs), self.resources,
                          backend_of(self.compile_options()).name), built

    def compile_options(self) -> CompileOptions:
        """The Session's compile options decided for this cluster: data tiling where its weights
        are constants (compile/options.py), variables written in place where that is safe (the
        launch hands over their buffers, passes/ir/tie_variables.py; HLOBRIDGE_FLAGS
        --no-in-place-variables turns that off)."""
        return replace(self.config.options.for_module(reads_variables=bool(self.resources)),
                       tie_variables=flags.from_environment().in_place_variables, estimate_work=True)

    def lower(self, feeds: dict, stages, dump=None):
        """The cluster as one verified StableHLO module, through `stages`, for these specs of
        its tensor inputs (with values for the ones it reads as constants)."""
        specs = infer_specs(self.graph, set(self.nodes), {**feeds, **self.resource_specs}, self.functions)
        dump = dump if dump is not None else Dumper()
        if dump.wants("shapes"):
            dump("shapes", format_specs(self.graph, specs), ".txt")
        with lowering_for(self.config.options.backend):
            lowered = lower_to_stablehlo(self.graph, specs, self.tensor_inputs, self.outputs,
                                         nodes=self.nodes, resources=self.resources, module_name=self.name,
                                         functions=self.functions, target=self.config.options.lowers_for(),
                                         keep_f32=pipeline.reduces_precision(stages),
                                         dynamic=any(not s.is_static for s in feeds.values()))
        with lowered.context:
            for fn, _ in signed_functions(lowered.module):
                note_in_reflection(fn, {VARIABLES_KEY: json.dumps({
                    "read": [self.resources.index(r) for r in lowered.resource_args],
                    "written": [self.resources.index(r) for r in lowered.written]})})
            if dump.wants("stablehlo"):
                dump("stablehlo", lowered.module.operation.get_asm())
            pipeline.run(lowered.module, stages, dump=dump)
            dump_stablehlo_dot(dump, lowered.module, self.name)  # NN-graphviz.dot
        lowered.verify()
        return lowered

    def _progress_name(self) -> str:
        return f"{self.name} ({len(self.nodes)} ops)"

    def _describe(self, key: tuple) -> str:
        return ", ".join(f"{r}: {dtype}{list(shape)}" for r, (dtype, shape) in zip(self.tensor_inputs, key)) \
            or "(none)"

    def _record(self, key: tuple, source: str, start: float, seconds: float, built: Built | None) -> None:
        log.info("cluster %s (%d ops), inputs %s: %s in %.2f s", self.name, len(self.nodes), self._describe(key),
                 source, seconds)
        self.state.events.append(CompileEvent(self.name, key[:len(self.tensor_inputs)], source, seconds, start,
                                              *((built.lowering, built.iree) if built else (0.0, 0.0)),
                                              backend=self.config.options.backend))
        seen = self.state.history.setdefault(tuple(self.nodes), [])
        if key in seen:  # the report counts signatures, not compiles (another plan's launch)
            return
        seen.append(key)
        n = len(seen)
        if n > self.config.recompile_warning:
            previous = seen[-2]
            changed = [f"{r}: {list(a[1])} -> {list(b[1])}" for r, a, b in
                       zip(self.tensor_inputs, previous, key) if a != b]
            warnings.warn(RecompilationWarning(
                f"cluster {self.name} compiled {n} signatures; shapes changed: "
                f"{'; '.join(changed) or 'constant inputs changed value'}"), stacklevel=6)

