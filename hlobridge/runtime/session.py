"""A TF-like Session: `Session(graph).run(fetches, feed_dict)` with tf.compat.v1 semantics.

Fetches are tensor names ("x:0"), op names ("train", run for effect, returning None) or
nested lists/tuples/dicts of them. A feed may name any tensor: it cuts the graph, so its
producer does not run unless something else needs it. Only what the fetches need runs,
and each stateful op runs once per step. Variables live in the session between runs.

Execution, as TensorFlow's XLA JIT does it: each (fetches, feed signature) gets a plan.
The graph is pruned to what the fetches need, shapes are inferred for the fed shapes,
`mark_for_compilation` clusters the compilable ops, and the plan lists units in
dependency order: a cluster (one IREE call, compiled on first use per input signature)
or a single node on its NumPy reference kernel. Cluster outputs stay device arrays
between clusters, and variables a cluster writes stay on the device between steps; values
come to the host only when a reference kernel or a fetch needs them.

`jit`: "auto" compiles every compilable op; "manual" only `_XlaCompile` nodes (jit_scope);
"strict" is auto but refuses to run any op it cannot compile; "off" runs every op on its
reference kernel.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from hlobridge.passes.graph.mark_for_compilation import (JIT_MODES, ClusterOptions, Clustering,
                                                          mark_for_compilation)

from ..analysis.graph_algorithms import ranked_topological_order
from ..analysis.shape_inference import infer_specs, outputs_by_node
from ..compile.backend import resolve
from ..compile.cache import CompileCache
from ..compile.driver import CompileOptions
from ..debug import profile_capture, progress, timeline
from ..debug.clustering_dump import dump_if_flags_ask
from ..errors import HlobridgeError, InputError
from ..frontend.functions import library_of
from ..frontend.graph import Graph, TensorRef
from ..frontend.load import load_graph
from ..frontend.saved_model import saved_model_source
from ..ops import registry
from ..ops.kinds import PLACEHOLDERS
from ..ops.control.state import VariableStore
from ..spec import TensorSpec
from .cluster_launch import DYNAMIC_DIMS, ClusterLaunch, JitConfig, JitState, compile_ahead
from .direct_call import DirectCall
from .feeds import feed_array
from .interpreter import FunctionRunner, NodeStep, has_switches, run_step
from .plan import Plan, RunEnv
from .steady_call import SteadyCall, steady_key

# Ops whose kernel makes a handle from its attrs alone (a variable's name, dtype and shape):
# run once, when the plan is made, not on every step (mlp_adam: 20 of them, 0.05 ms a step).
HANDLE_OPS = frozenset({"VarHandleOp"})
# Reasons that jit="strict" refuses: the op itself cannot compile. (Graph inputs,
# variables and trivial leftovers such as a lone Const are not computation.)
STRICT_REFUSES = {"unknown_op", "no_lowering", "stateful_random", "uncompilable_dtype", "resource_output",
                  "string_tensor", "lookup_table", "tensor_array"}


def _target_options(device: str) -> CompileOptions:
    return CompileOptions(target="cuda") if device == "cuda" else CompileOptions(target="llvm-cpu")


def _flatten(fetches, out: list) -> object:
    """Flatten nested fetches into `out`; return a structure of indices to rebuild them."""
    if isinstance(fetches, (list, tuple)):
        return type(fetches)(_flatten(f, out) for f in fetches)
    if isinstance(fetches, dict):
        return {k: _flatten(v, out) for k, v in fetches.items()}
    if not isinstance(fetches, str):
        raise InputError(f"fetch must be a tensor or op name, got {type(fetches).__name__} {fetches!r:.40}")
    out.append(fetches)
    return len(out) - 1


def _rebuild(structure, values: list):
    """The fetches' structure with each index replaced by its value."""
    if type(structure) is list:  # the usual fetches: a flat list of names
        return [values[s] if type(s) is int else _rebuild(s, values) for s in structure]
    if isinstance(structure, (list, tuple)):
        return type(structure)(_rebuild(s, values) for s in structure)
    if isinstance(structure, dict):
        return {k: _rebuild(v, values) for k, v in structure.items()}
    return values[structure]


class Session:
    """Runs a graph; see the module docstring. Options:

    jit                "auto" | "manual" | "strict" | "off"
    device             "cpu-task" (the default: IREE local-task, a thread pool, 1.5-3x faster
                       on steps with real work; a cluster estimated at most 3e7 flops runs on
                       the calling thread instead, 2-3x faster there: HLOBRIDGE_FLAGS
                       --small-cluster-flops), "cpu" (local-sync: every cluster on the
                       calling thread) or "cuda"
    cache_dir          where compiled clusters persist, and the parsed form of a large
                       .pbtxt (None: the default, see compile_cache; False: memory only)
    min_cluster_size, max_cluster_size   clustering limits (auto mode)
    recompile_warning  warn when a cluster compiles more input signatures than this
    dynamic_dims       None (the default: each cluster compiled per input shape, as TF's XLA JIT
                       does; static modules are the fastest) or "batch": each cluster compiled
                       once with a `?` batch and run at every batch size (docs/dynamic_shapes.md;
                       a cluster with an op that takes no `?` goes back to per shape)
    tags               for a SavedModel directory: the MetaGraph's tags (default ["serve"]);
                       its variables are restored (frontend/saved_model.py)
    data_parallel      True (or the gradient tensors' names): this rank of an MPI job trains on its
                       shard, gradients averaged over the ranks (hlobridge/distributed/data_parallel.py;
                       call hlobridge.distributed.init() first)
    backend            who compiles and runs the clusters: "iree" (the default), "xla" (XLA
                       through PJRT, the `xla` extra) or "auto" (compile/backend.py); overrides
                       compile_options.backend
    """

    def __init__(self, graph, jit: str = "auto", device: str = "cpu-task", *, cache_dir=None,
                 min_cluster_size: int = 4, max_cluster_size: int | None = None,
                 recompile_warning: int = 4, compile_options: CompileOptions | None = None, tags=None,
                 backend: str | None = None, data_parallel=False, dynamic_dims: str | None = None):
        if jit not in JIT_MODES:
            raise HlobridgeError(f"jit must be one of {', '.join(JIT_MODES)}, got '{jit}'")
        if dynamic_dims not in DYNAMIC_DIMS:
            raise HlobridgeError(f"dynamic_dims must be None or 'batch', got {dynamic_dims!r}")
        graph, restore = saved_model_source(graph, tags)  # a SavedModel directory: its graph
        self.graph: Graph = load_graph(graph, cache_dir)  # (a large .pbtxt: its parse cached there too)
        # -- data parallelism (hlobridge.distributed): the graph with its gradient all-reduces
        self._parallel = None
        if data_parallel:
            from ..distributed.data_parallel import DataParallel
            self._parallel = DataParallel.for_session(data_parallel)
            self.graph = self._parallel.rewrite(self.graph)
        self.jit = jit
        self.device = device
        self.cluster_options = ClusterOptions(jit, min_cluster_size, max_cluster_size)
        options = compile_options or _target_options(device)
        if backend is not None:
            options = replace(options, backend=backend)
        options = replace(options, backend=resolve(options.backend, options.target))
        self._jit = JitConfig(device, options, strict=jit == "strict", recompile_warning=recompile_warning,
                              dynamic_dims=dynamic_dims)
        self._jit_state = JitState(CompileCache(cache_dir))
        self.compile_events: list = self._jit_state.events  # cluster_launch.CompileEvent, in order
        self.variables = VariableStore()
        library = library_of(self.graph)
        # Planning folds through function bodies without touching variables; running them may.
        self._folding = FunctionRunner(library, None)
        self._env = RunEnv(self.variables, FunctionRunner(library, self.variables, self._folding.shapes))
        self._plans: dict = {}
        self._steady: dict = {}  # steady_key -> SteadyCall: the last signature of those fetches and feeds
        if restore is not None:
            restore(self)  # the SavedModel's variables

    # -- public API -------------------------------------------------------------------------
    def run(self, fetches, feed_dict: dict | None = None, options: timeline.RunOptions | None = None,
            run_metadata: timeline.RunMetadata | None = None):
        """Run what `fetches` need with `feed_dict`; the fetched values in the fetches' structure.
        `options=RunOptions(trace=True, trace_path=...)` records a timeline (debug/timeline.py);
        `RunOptions(profile=True)` also times each IREE dispatch (debug/profile.py)."""
        structure, feeds, plan = self._plan_for(fetches, feed_dict)
        if plan.direct and options is None and self._parallel is None:  # one call (direct_call.py)
            return _rebuild(structure, plan.direct(feeds))
        if plan.ran:  # the warm path: no context managers around the step
            values = self._step(plan, feeds, options, run_metadata)
            if plan.direct is None:
                plan.direct = DirectCall.of(plan, feeds) or False
        else:
            plan.ran = True
            with progress.activity("Session.run, first run"):  # where its clusters compile
                launches = [u for u in plan.units if isinstance(u, ClusterLaunch)]
                progress.expect(len(launches))
                compile_ahead(launches, {**plan.constants, **feeds})
                values = self._step(plan, feeds, options, run_metadata)
        return _rebuild(structure, [None if ref is None else values[ref] for ref in plan.fetch_refs])

    def _step(self, plan: Plan, feeds: dict, options, run_metadata) -> dict:
        """One execution of the plan; under data parallelism, inside this rank's collective step."""
        if self._parallel is None:
            return self._execute(plan, feeds, options, run_metadata)
        with self._parallel.step(plan, self.variables):
            return self._execute(plan, feeds, options, run_metadata)

    def _execute(self, plan: Plan, feeds: dict, options, run_metadata) -> dict:
        if options is not None and (options.trace or options.profile):
            observer = profile_capture.ProfiledRun if options.profile else timeline.RunTrace
            trace = observer(options, run_metadata, f"hlobridge Session (jit={self.jit}, {self.device})",
                             self.compile_events)
            start = time.perf_counter()
            values = plan.execute(feeds, self._env, trace.wrap(plan.units))
            trace.finish(start, time.perf_counter(), plan)
        else:
            values = plan.execute(feeds, self._env)
        return values

    def clustering(self, fetches, feed_dict: dict | None = None) -> Clustering:
        """How the plan for these fetches and feeds is clustered (runs nothing)."""
        return self._plan_for(fetches, feed_dict)[2].clustering

    def _plan_for(self, fetches, feed_dict):
        """(fetch structure, resolved feeds, plan); plans are cached per fetches and feed signature,
        and a call like the one before it takes its feeds as they are (steady_call.py)."""
        call = steady_key(fetches, feed_dict)
        steady = self._steady.get(call) if call is not None else None
        if steady is not None and (feeds := steady.feeds(feed_dict)) is not None:
            return steady.structure, feeds, steady.plan
        names: list[str] = []
        structure = _flatten(fetches, names)
        feeds = self._resolve_feeds(feed_dict or {})
        key = (tuple(names), tuple((r, v.dtype, v.shape) for r, v in feeds.items()))
        plan = self._plans.get(key)
        if plan is None:
            targets, fetch_refs = self._resolve_fetches(names)
            plan = self._plans[key] = self._make_plan(targets, fetch_refs, feeds)
        if call is not None and (steady := SteadyCall.of(structure, feed_dict, feeds, plan)) is not None:
            self._steady[call] = steady
        return structure, feeds, plan

    # -- resolution ---------------------------------------------------------------------------
    def _resolve_feeds(self, feed_dict: dict) -> dict[TensorRef, np.ndarray]:
        """Each feed as an array of its placeholder's dtype and shape (runtime/feeds.py)."""
        if not isinstance(feed_dict, dict):
            raise InputError(f"feed_dict must be a dict of tensor names to values, got {type(feed_dict).__name__}")
        feeds = {}
        for name, value in feed_dict.items():
            ref = self._tensor(name, "feed")
            feeds[ref] = feed_array(str(ref), value, self._declared_spec(ref), self.graph.nodes[ref.node].op)
        return feeds

    def _declared_spec(self, ref: TensorRef) -> TensorSpec | None:
        node = self.graph.nodes[ref.node]
        if node.op in PLACEHOLDERS:
            return TensorSpec(node.attr("dtype"), node.attr("shape", None))
        return None

    def _tensor(self, name: str, what: str) -> TensorRef:
        if not isinstance(name, str):
            raise InputError(f"{what} names must be strings, got {type(name).__name__} {name!r:.40}")
        ref = TensorRef.parse(name)
        if ref.node not in self.graph.nodes:
            raise InputError(f"{what} '{name}': no node '{ref.node}' in the graph")
        return ref

    def _resolve_fetches(self, names: list[str]):
        targets, refs = [], []
        for name in names:
            if ":" in name:
                refs.append(self._tensor(name, "fetch"))
            else:
                if name.lstrip("^") not in self.graph.nodes:
                    raise InputError(f"fetch '{name}': no op named '{name}' in the graph")
                targets.append(name.lstrip("^"))
                refs.append(None)
        return targets, refs

    # -- planning ---------------------------------------------------------------------------------
    def _make_plan(self, targets, fetch_refs, feeds) -> Plan:
        graph = self.graph
        needed = graph.prune(list(targets) + [r.node for r in fetch_refs if r is not None and r not in feeds],
                             feeds)
        unfed = [n for n in needed if graph.nodes[n].op in PLACEHOLDERS]
        if unfed:
            raise InputError(f"placeholder(s) {', '.join(sorted(unfed))} must be fed "
                             f"(feed_dict has {', '.join(map(str, feeds)) or 'nothing'})")
        feed_specs = {r: TensorSpec(v.dtype, tuple(v.shape)) for r, v in feeds.items()}
        specs = infer_specs(graph, needed, feed_specs, self._folding)
        outputs = outputs_by_node(specs)
        fetched = [r for r in fetch_refs if r is not None and r not in feeds]
        clustering = mark_for_compilation(graph, needed, cut=feeds, fetched=fetched,
                                          options=self.cluster_options, specs=specs)
        dump_if_flags_ask(graph, clustering, needed)  # HLOBRIDGE_FLAGS="--dump-to=DIR"
        if self.jit == "strict":
            self._refuse_uncompiled(clustering)
        steps, constants, folded = {}, {}, set()
        deadness = has_switches(graph, needed)
        for name in needed:
            node = graph.nodes[name]
            entry = registry.lookup(node.op)
            out_specs = outputs.get(name, [])
            if not entry.stateful and out_specs and all(s.value is not None for s in out_specs):
                constants.update({TensorRef(name, i): s.value for i, s in enumerate(out_specs)})
                folded.add(name)  # computed once, at plan time
            steps[name] = NodeStep(name, node, entry, out_specs, [specs[r] for r in node.inputs], deadness)
            if node.op in HANDLE_OPS and not node.inputs and not node.control_inputs:
                handle: dict = {}
                run_step(steps[name], handle, self.variables)
                constants.update(handle)
                folded.add(name)  # a handle: the same object every run
        if self._parallel is not None:  # the gradient all-reduces: on the device or the host
            self._parallel.place(steps, self.jit, self._jit, self._jit_state.cache)
        launches = {c.name: ClusterLaunch(graph, c, specs, self._jit, self._jit_state,
                                          [steps[n] for n in c.nodes], self._folding)
                    for c in clustering.clusters}
        units = [launches.get(u) or steps[u] for u in self._unit_order(needed, feeds, clustering)
                 if u not in folded]
        return Plan(units, constants, specs, list(fetch_refs), clustering)

    def _unit_order(self, needed: set, feeds: dict, clustering: Clustering) -> list[str]:
        """Clusters and lone nodes in dependency order (Kahn; ties by graph order)."""
        unit_of = {n: clustering.cluster_of.get(n, n) for n in needed}
        rank: dict[str, int] = {}
        deps: dict[str, set] = {}
        for i, name in enumerate(n for n in self.graph.order if n in needed):
            u = unit_of[name]
            rank.setdefault(u, i)
            node = self.graph.nodes[name]
            preds = {r.node for r in node.inputs if r not in feeds} | set(node.control_inputs)
            deps.setdefault(u, set()).update(unit_of[p] for p in preds if p in needed and unit_of[p] != u)
        return ranked_topological_order(deps, rank)

    def _refuse_uncompiled(self, clustering: Clustering) -> None:
        refused = [(n, clustering.reasons[n]) for n in self.graph.order
                   if clustering.reasons.get(n) in STRICT_REFUSES]
        if refused:
            lines = [f"  {n} ({self.graph.nodes[n].op}): {clustering.reason(n)}" for n, _ in refused]
            raise HlobridgeError(f"jit=strict: {len(refused)} op(s) cannot be compiled:\n" + "\n".join(lines))
