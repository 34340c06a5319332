"""A frozen GraphDef's large weights turned back into variables that an init op fills at random.

A frozen Keras ResNet50 at 224x224 is 100 MB of Const weights: too big to carry to a GPU machine
(benchmarks/gpu_check.py), where throughput does not depend on the weights' values anyway. Here
each float Const of at least `min_elements` elements (the kernels; BatchNorm's vectors stay, so
variances stay positive) becomes a resource variable, read where the Const was, and one init op
assigns each a seeded `RandomStandardNormal` scaled to the original tensor's standard deviation
(so activations keep the scale the calibrated model had). The graph shrinks to a few hundred KB.

Run under TensorFlow's venv (tools/make_bench_models.py uses it); hlobridge never imports this.
On its own it writes the test data of tests/benchmarks/test_train_throughput.py:

    .tfvenv/bin/python tools/weights_as_variables.py ../shared/graphs/cnn_infer_bn \
        tests/data/weights_as_variables/cnn_infer_bn --min-elements 64
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import attr_value_pb2, graph_pb2, tensor_shape_pb2

INIT_OP = "init_weights"


def _attr(**kw) -> dict:
    out = {}
    for key, value in kw.items():
        if isinstance(value, tf.dtypes.DType):
            out[key] = attr_value_pb2.AttrValue(type=value.as_datatype_enum)
        elif isinstance(value, tensor_shape_pb2.TensorShapeProto):
            out[key] = attr_value_pb2.AttrValue(shape=value)
        elif isinstance(value, (bytes, str)):
            out[key] = attr_value_pb2.AttrValue(s=value.encode() if isinstance(value, str) else value)
        elif isinstance(value, int):
            out[key] = attr_value_pb2.AttrValue(i=value)
        else:
            out[key] = attr_value_pb2.AttrValue(tensor=value)
    return out


def _node(graph: graph_pb2.GraphDef, name: str, op: str, inputs=(), **attrs):
    node = graph.node.add(name=name, op=op, input=list(inputs))
    for key, value in _attr(**attrs).items():
        node.attr[key].CopyFrom(value)
    return node


def weights_as_variables(graph_def: graph_pb2.GraphDef, min_elements: int = 4096,
                         seed: int = 1) -> tuple[graph_pb2.GraphDef, int]:
    """(the graph with its large float Consts as variables and an `init_weights` op, how many)."""
    out = graph_pb2.GraphDef()
    out.versions.CopyFrom(graph_def.versions)
    out.library.CopyFrom(graph_def.library)
    assigns = []
    for node in graph_def.node:
        value = tf.make_ndarray(node.attr["value"].tensor) if node.op == "Const" else None
        if value is None or value.dtype != np.float32 or value.size < min_elements:
            out.node.add().CopyFrom(node)
            continue
        dtype, name = tf.float32, node.name
        shape = tensor_shape_pb2.TensorShapeProto(dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=d)
                                                       for d in value.shape])
        _node(out, f"{name}/var", "VarHandleOp", dtype=dtype, shape=shape, shared_name=f"{name}/var", container="")
        _node(out, name, "ReadVariableOp", [f"{name}/var"], dtype=dtype)
        dims = tf.make_tensor_proto(np.array(value.shape, np.int32))
        _node(out, f"{name}/init/shape", "Const", dtype=tf.int32, value=dims)
        _node(out, f"{name}/init/normal", "RandomStandardNormal", [f"{name}/init/shape"],
              dtype=dtype, T=tf.int32, seed=seed, seed2=len(assigns) + 1)
        std = tf.make_tensor_proto(np.float32(value.std() or 1.0))
        _node(out, f"{name}/init/std", "Const", dtype=dtype, value=std)
        _node(out, f"{name}/init/value", "Mul", [f"{name}/init/normal", f"{name}/init/std"], T=dtype)
        _node(out, f"{name}/init/assign", "AssignVariableOp", [f"{name}/var", f"{name}/init/value"], dtype=dtype)
        assigns.append(f"^{name}/init/assign")
    _node(out, INIT_OP, "NoOp", assigns)
    return out, len(assigns)


def convert_case(case: Path, out: Path, min_elements: int) -> Path:
    """A corpus inference case (../shared/graphs/README.md) as a graph.json folder
    (benchmarks/train_throughput.py's load_workload) with TensorFlow's outputs on the case's
    first run, its weights drawn by `init_weights`: test data for that path."""
    meta = json.loads((case / "case.json").read_text())
    graph_def = graph_pb2.GraphDef.FromString((case / meta["graph_pb"]).read_bytes())
    graph, count = weights_as_variables(graph_def, min_elements)
    run = meta["runs"][0]
    data = np.load(case / "data.npz")
    feeds = {name: data[key] for name, key in run["feeds"].items()}
    outputs = [f["name"] for f in meta["fetches"]]
    g = tf.Graph()
    with g.as_default():
        tf.graph_util.import_graph_def(graph, name="")
    with tf.compat.v1.Session(graph=g) as sess:
        sess.run(INIT_OP)
        got = sess.run(outputs, feeds)
    out.mkdir(parents=True, exist_ok=True)
    (out / "graph.pb").write_bytes(graph.SerializeToString())
    graph_json = {"name": meta["name"], "feeds": meta["feeds"], "init_op": INIT_OP, "outputs": outputs, "variables": count}
    (out / "graph.json").write_text(json.dumps(graph_json, indent=2) + "\n")
    np.savez(out / "tensorflow.npz", **{f"feed{i}": v for i, v in enumerate(feeds.values())},
             **{f"output{i}": v for i, v in enumerate(got)})
    return out


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("case", type=Path, help="a corpus inference case folder (frozen graph)")
    p.add_argument("out", type=Path)
    p.add_argument("--min-elements", type=int, default=4096)
    args = p.parse_args()
    print(convert_case(args.case, args.out, args.min_elements))
