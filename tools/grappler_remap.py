#!/usr/bin/env python3
"""Run Grappler's remapper (and nothing else) on a GraphDef, as TensorFlow does before it runs
or saves an optimised graph: it writes the fused ops users then find in their graphs
(_FusedMatMul, _FusedConv2D, _FusedBatchNormEx).

Which fusions happen depends on the build: TensorFlow's oneDNN build (TF_ENABLE_ONEDNN_OPTS=1,
the x86 default) also fuses FusedBatchNorm + activation into _FusedBatchNormEx on CPU. The
environment is read when TensorFlow loads, so that variant runs as a separate process:

    TF_ENABLE_ONEDNN_OPTS=1 python tools/grappler_remap.py in.pb out.pb FETCH_NODE...

This module does not set TensorFlow's environment; the caller does.
"""

import sys
from pathlib import Path

import tensorflow as tf


def remap(graph_def, fetch_nodes):
    """The GraphDef after the remapper, every node placed on the CPU while it runs (the
    remapper fuses per device) and unplaced again afterwards."""
    from tensorflow.core.protobuf import config_pb2, meta_graph_pb2, rewriter_config_pb2
    from tensorflow.python.grappler import tf_optimizer

    mg = meta_graph_pb2.MetaGraphDef()
    mg.graph_def.CopyFrom(graph_def)
    for n in mg.graph_def.node:
        n.device = "/device:CPU:0"
    mg.collection_def["train_op"].node_list.value.extend(fetch_nodes)  # what Grappler must keep
    cfg = config_pb2.ConfigProto()
    cfg.graph_options.rewrite_options.CopyFrom(rewriter_config_pb2.RewriterConfig(
        optimizers=["remap"], min_graph_nodes=-1,
        meta_optimizer_iterations=rewriter_config_pb2.RewriterConfig.ONE))
    out = tf_optimizer.OptimizeGraph(cfg, mg)
    for n in out.node:
        n.device = ""
    return out


def main(argv):
    src, dst, *fetches = argv
    gd = tf.compat.v1.GraphDef()
    gd.ParseFromString(Path(src).read_bytes())
    Path(dst).write_bytes(remap(gd, fetches).SerializeToString())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
