"""Dispatches per cluster: each cluster of a clustering lowered as the Session would lower it,
compiled under one or more fusion modes, and IREE's statistics kept (iree_stats.py).

This is what `explain(..., dispatches=...)` and `hlobridge-explain --dispatches` show. The
shapes come from shape inference over the considered nodes, with placeholders (and fed
tensors) taking their declared shapes or the ones given in `input_shapes`; a cluster whose
input shapes stay unknown, or that reads a constant input inference could not compute, is
reported with an error instead of numbers.
"""

from __future__ import annotations

from dataclasses import replace

from ..analysis.shape_inference import infer_specs
from ..compile.cache import CompileCache
from ..compile.driver import CompileOptions, compile_mlir
from ..errors import HlobridgeError
from ..frontend.functions import library_of
from ..frontend.graph import Graph, TensorRef
from ..ops.kinds import GRAPH_INPUTS
from ..runtime.cluster_launch import ClusterLaunch, JitConfig, JitState
from ..runtime.interpreter import FunctionRunner
from ..spec import TensorSpec


def feed_specs(graph: Graph, nodes, cut, input_shapes: dict | None) -> dict:
    """Specs of the placeholders among `nodes` and the fed tensors `cut`: the shapes given in
    `input_shapes`, else the declared ones (unknown dims stay None)."""
    shapes = {graph.tensor(k): tuple(v) for k, v in (input_shapes or {}).items()}
    feeds = {}
    for name in nodes:
        node = graph.nodes[name]
        if node.op in GRAPH_INPUTS:
            ref = TensorRef(name)
            feeds[ref] = TensorSpec(node.attr("dtype"), shapes.get(ref, node.attr("shape", None)))
    for ref in cut:  # fed tensors: the given shape, else a placeholder's declared one
        node = graph.nodes[ref.node]
        dtype = node.attr("dtype", None)
        dtype = dtype if dtype is not None else node.attr("T")
        declared = node.attr("shape", None) if node.op in GRAPH_INPUTS else None
        feeds[ref] = TensorSpec(dtype, shapes.get(ref, declared))
    return feeds


def _cluster_feeds(launch: ClusterLaunch, specs: dict) -> dict:
    feeds = {}
    for i, ref in enumerate(launch.tensor_inputs):
        spec = specs.get(ref)
        if spec is None or spec.shape is None or any(d is None for d in spec.shape):
            raise HlobridgeError(f"the shape of input {ref} is unknown: give it with input_shapes "
                                 f"(--input-shape {ref}=DIMS)")
        value = spec.value if i in launch.value_inputs else None
        if i in launch.value_inputs and value is None:
            raise HlobridgeError(f"input {ref} is read as a constant and its value is only known "
                                 "at run time")
        feeds[ref] = TensorSpec(spec.dtype, tuple(spec.shape), value)
    return feeds


def cluster_launches(graph: Graph, clustering, nodes, *, cut=(), input_shapes=None,
                     options: CompileOptions | None = None):
    """Per cluster, (name, its ClusterLaunch lowering for `options`' target, its input specs), or
    (name, None, why not) where its shapes or constant inputs are not known."""
    options = options or CompileOptions()
    nodes = list(graph.order) if nodes is None else list(nodes)
    functions = FunctionRunner(library_of(graph), None)
    try:
        specs = infer_specs(graph, set(nodes), feed_specs(graph, nodes, cut, input_shapes), functions)
    except HlobridgeError as e:
        for c in clustering.clusters:
            yield c.name, None, str(e)
        return
    config, state = JitConfig("cpu", options), JitState(CompileCache(False))
    for cluster in clustering.clusters:
        launch = ClusterLaunch(graph, cluster, specs, config, state, functions=functions)
        try:
            yield cluster.name, launch, _cluster_feeds(launch, specs)
        except HlobridgeError as e:
            yield cluster.name, None, str(e)


def cluster_dispatches(graph: Graph, clustering, nodes, *, cut=(), input_shapes=None,
                       modes=("hlobridge", "iree", "none"),
                       options: CompileOptions | None = None) -> dict[str, dict]:
    """{cluster name: {mode: {"dispatches", "executables", ...} or {"error": message}}}."""
    options = options or CompileOptions()
    result = {}
    for name, launch, feeds in cluster_launches(graph, clustering, nodes, cut=cut, input_shapes=input_shapes,
                                                options=options):
        if launch is None:
            result[name] = {"error": feeds}
            continue
        per_mode = result[name] = {}
        for mode in modes:
            # counted untiled: data tiling packs constant weights in the module's initializer,
            # which IREE's statistics would add to the dispatches of a call
            mode_options = replace(options, fusion=mode, data_tiling="off" if options.data_tiling == "auto"
                                   else options.data_tiling)
            stats: dict = {}
            try:
                compile_mlir(launch.lower(feeds, mode_options.stages()).text(), mode_options, stats=stats)
            except HlobridgeError as e:
                stats = {"error": str(e)}
            per_mode[mode] = stats
    return result
