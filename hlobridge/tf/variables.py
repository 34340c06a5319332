"""Functions that write variables (a training step, a counter): the variables stay variables.

A read-only function is frozen (trace.py). One that assigns a variable cannot be: its writes
must outlive the call. Its traced graph reads each variable through a captured resource
Placeholder; here each becomes a `VarHandleOp` whose shared name is a key of the Session's
VariableStore, filled with the variable's value when the signature is traced. hlobridge then
holds the variables as it holds a TF1 graph's (on the device between calls, written in place),
and after each call the variables the call wrote are assigned back to TensorFlow's, so the
Keras model or tf.Module sees its training. Values assigned in TensorFlow between calls are not
seen until `CompiledFunction.retrace()`.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from ..errors import HlobridgeError
from ..runtime.host import to_host

# Ops that change a variable: they make a function "live" rather than frozen.
WRITE_PREFIXES = ("Assign", "ResourceApply", "ResourceSparseApply", "ResourceScatter",
                  "ResourceStridedSliceAssign")


def live_graph(concrete, name: str):
    """(TensorFlow GraphDef, {shared name: tf.Variable}): the traced graph with every captured
    variable a VarHandleOp and every other captured tensor a Const."""
    graph_def = concrete.graph.as_graph_def()
    nodes = {n.name: n for n in graph_def.node}
    by_handle = {id(v.handle): v for v in concrete.graph.variables}
    variables: dict[str, tf.Variable] = {}
    for external, internal in concrete.graph.captures:
        node = nodes[internal.op.name]
        if external.dtype != tf.resource:
            _make_const(node, external.numpy())
            continue
        variable = by_handle.get(id(external))
        if variable is None:
            raise HlobridgeError(f"{name} captures the resource '{internal.op.name}', which is not a tf.Variable "
                                 f"(a lookup table, a dataset iterator?); hlobridge.tf captures variables only")
        key = _unique(variable.name.split(":")[0], variables)
        variables[key] = variable
        _make_var_handle(node, key, variable)
    return graph_def, variables


def load(store, variables: dict) -> None:
    """The variables' current TensorFlow values into a Session's VariableStore."""
    for key, variable in variables.items():
        store.values[key] = variable.numpy()
        store.lent.discard(key)


def written_since(store, before: dict) -> list[str]:
    """The keys whose value object the Session replaced since `before` (dict(store.values))."""
    return [k for k, v in before.items() if store.values.get(k) is not v]


def write_back(store, variables: dict, keys: list[str]) -> None:
    """Assign the Session's values of `keys` to their TensorFlow variables."""
    for key in keys:
        variables[key].assign(np.asarray(to_host(store.values[key])))


def _make_var_handle(node, key: str, variable) -> None:
    node.op = "VarHandleOp"
    for attr in list(node.attr):
        del node.attr[attr]
    node.attr["dtype"].type = variable.dtype.as_datatype_enum
    node.attr["shape"].shape.CopyFrom(variable.shape.as_proto())
    node.attr["shared_name"].s = key.encode()
    node.attr["container"].s = b""


def _make_const(node, value: np.ndarray) -> None:
    node.op = "Const"
    for attr in list(node.attr):
        del node.attr[attr]
    node.attr["dtype"].type = tf.as_dtype(value.dtype).as_datatype_enum
    node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value))


def _unique(base: str, taken: dict) -> str:
    key, i = base, 1
    while key in taken:
        key, i = f"{base}_{i}", i + 1
    return key
