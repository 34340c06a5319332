"""hlobridge-explain: which ops of a graph compile, in which clusters, and why not the rest.

    hlobridge-explain graph.pbtxt                      # clusters, then every left-out node's reason
    hlobridge-explain saved_model_dir/ --signature serving_default   # the plan of that signature's run
    hlobridge-explain graph.pbtxt --json               # the same as JSON
    hlobridge-explain graph.pbtxt --jit manual         # as jit_scope() marks them
    hlobridge-explain graph.pbtxt --fetch train --fetch loss:0 --feed x:0   # one Session.run's plan
    hlobridge-explain graph.pbtxt --dot clusters.dot   # Graphviz: clusters as boxes, reasons on the rest
    hlobridge-explain graph.pbtxt --dump-to DIR        # before/after .pbtxt (as --tf_xla_clustering_debug) and .dot
    hlobridge-explain graph.pbtxt --dispatches --input-shape x:0=32,784   # IREE dispatches per cluster
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hlobridge.passes.ir.fusion import MODES as FUSION_MODES
from hlobridge.passes.graph.mark_for_compilation import JIT_MODES

from ..compile.options import BACKENDS
from ..debug.clustering_dump import dump_clustering
from ..errors import HlobridgeError
from ..debug.explain import explain
from ..debug.graphviz import clustered_graph_dot
from . import saved_model
from .common import add_output_arguments, configure_output, input_shapes, run_main

PROG = "hlobridge-explain"


def parse_arguments(argv=None) -> argparse.Namespace:
    """hlobridge-explain's command line -> its options (argv=None reads sys.argv)."""
    p = argparse.ArgumentParser(prog=PROG, description="Explain how hlobridge clusters a GraphDef.")
    p.add_argument("graph", help="GraphDef file (.pbtxt text or .pb binary) or a SavedModel directory")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--jit", default="auto", choices=JIT_MODES)
    p.add_argument("--fetch", action="append", default=None, metavar="NAME",
                   help="explain the plan of a run of these fetches (repeatable; default: the whole graph)")
    p.add_argument("--feed", action="append", default=[], metavar="TENSOR",
                   help="a tensor that is fed in that run (repeatable)")
    p.add_argument("--min-cluster-size", type=int, default=4)
    p.add_argument("--backend", default="iree", choices=BACKENDS,
                   help="the Session's backend: each cluster says which one would compile it")
    p.add_argument("--max-cluster-size", type=int, default=None)
    p.add_argument("--dot", default=None, metavar="FILE",
                   help="write the clustered graph as Graphviz DOT (render: dot -Tpng FILE -o graph.png)")
    p.add_argument("--dump-to", default=None, metavar="DIR",
                   help="write the graph before and after clustering as .pbtxt (clustered nodes carry "
                        "_XlaCluster, left-out ones _hlobridge_reason) and as .dot")
    p.add_argument("--dispatches", nargs="?", const=",".join(FUSION_MODES), default=None, metavar="MODES",
                   help="compile every cluster and show IREE's dispatch counts under these fusion "
                        f"modes (comma-separated; default: {','.join(FUSION_MODES)})")
    p.add_argument("--dynamic", action="store_true",
                   help="say whether each cluster lowers with its unknown dims left ? (one module for every "
                        "batch), else the node and reason code (docs/dynamic_shapes.md)")
    p.add_argument("--input-shape", action="append", default=[], metavar="NAME=DIMS",
                   help="shape of a placeholder or fed tensor for --dispatches, e.g. x:0=32,784 (repeatable)")
    saved_model.add_cli_arguments(p)
    add_output_arguments(p)
    return p.parse_args(argv)


def main(argv=None) -> int:
    """Print the clustering explanation (text or --json), then write the --dot and --dump-to files;
    returns the exit status."""
    args = parse_arguments(argv)
    configure_output(args)
    modes = [m.strip() for m in args.dispatches.split(",") if m.strip()] if args.dispatches else None
    unknown = [m for m in modes or () if m not in FUSION_MODES]
    if unknown:
        raise HlobridgeError(f"--dispatches: unknown fusion mode(s) {', '.join(unknown)}; "
                             f"choose from {', '.join(FUSION_MODES)}")
    graph, fetches, feeds = args.graph, args.fetch, args.feed
    if saved_model.is_saved_model(graph):  # the plan of the signature's run
        graph, fetches, feeds = saved_model.explain_target(args)
        fetches, feeds = args.fetch or fetches, args.feed or feeds
    result = explain(graph, jit=args.jit, fetches=fetches, feeds=feeds,
                     min_cluster_size=args.min_cluster_size, max_cluster_size=args.max_cluster_size,
                     dispatches=modes, input_shapes=input_shapes(args.input_shape), backend=args.backend,
                     dynamic=args.dynamic)
    print(result.to_json() if args.json else result)
    nodes = None if fetches is None else result.nodes
    try:
        if args.dot:
            Path(args.dot).write_text(clustered_graph_dot(result.graph, result.clustering, nodes))
        if args.dump_to:
            dump_clustering(args.dump_to, result.graph, result.clustering, nodes)
    except OSError as e:
        raise HlobridgeError(f"cannot write {e.filename}: {e.strerror}") from None
    return 0


def _cli_main() -> None:
    sys.exit(run_main(PROG, main))


if __name__ == "__main__":
    _cli_main()
