"""Whether each cluster lowers with its unknown dimensions left `?` (docs/dynamic_shapes.md):
what `explain(..., dynamic=True)` and `hlobridge-explain --dynamic` show.

Shapes come from shape inference with the placeholders' declared shapes (a `None` batch stays
unknown); each cluster is lowered as `Session(dynamic_dims=...)` would lower it, with every
unknown dimension of its inputs `?`. A cluster whose op takes no `?` gets the reason code
`dynamic_dim_unsupported` and the lowering's one-line message naming the node; a cluster with
only static inputs is "static". A dynamic one also says whether a batch may be padded up to a
static bucket ("pads", or "cannot pad: node X (Sum over axis 0) mixes rows"). Nothing is compiled.
"""

from __future__ import annotations

from ..analysis.batch_rows import padding_note
from ..analysis.shape_inference import infer_specs
from ..compile.cache import CompileCache
from ..compile.driver import CompileOptions
from ..errors import HlobridgeError
from ..frontend.functions import library_of
from ..frontend.graph import Graph
from ..runtime.cluster_launch import ClusterLaunch, JitConfig, JitState
from ..runtime.interpreter import FunctionRunner
from ..spec import TensorSpec
from .cluster_dispatches import feed_specs

DYNAMIC_REASON = "dynamic_dim_unsupported"


def cluster_dynamic(graph: Graph, clustering, nodes, *, cut=()) -> dict[str, dict]:
    """{cluster: {"status": "dynamic" | "static" | DYNAMIC_REASON | "unknown", "inputs": [...],
    "message": why, where not "dynamic"/"static"}}."""
    config = JitConfig("cpu", CompileOptions(), dynamic_dims="batch")
    state = JitState(CompileCache(False))
    nodes = list(graph.order) if nodes is None else list(nodes)
    functions = FunctionRunner(library_of(graph), None)
    try:
        specs = infer_specs(graph, set(nodes), feed_specs(graph, nodes, cut, None), functions)
    except HlobridgeError as e:
        return {c.name: {"status": "unknown", "message": str(e)} for c in clustering.clusters}
    result = {}
    for cluster in clustering.clusters:
        launch = ClusterLaunch(graph, cluster, specs, config, state, functions=functions)
        feeds = {}
        for i, ref in enumerate(launch.tensor_inputs):
            spec = specs[ref]
            feeds[ref] = TensorSpec(spec.dtype, spec.shape, spec.value if i in launch.value_inputs else None)
        dynamic = [f"{r} {s}" for r, s in feeds.items() if s.shape is not None and not s.is_static]
        if any(s.shape is None for s in feeds.values()):
            result[cluster.name] = {"status": "unknown", "message": "an input's rank is unknown"}
            continue
        try:
            launch.lower(feeds, ())
        except HlobridgeError as e:
            code = DYNAMIC_REASON if DYNAMIC_REASON in str(e) else "unknown"
            result[cluster.name] = {"status": code, "inputs": dynamic, "message": str(e)}
            continue
        result[cluster.name] = {"status": "dynamic" if dynamic else "static", "inputs": dynamic}
        if dynamic:  # whether --pad-to-batch-sizes may pad it (analysis/batch_rows.py)
            result[cluster.name]["batch_padding"] = padding_note(graph, cluster.nodes, specs)
    return result

