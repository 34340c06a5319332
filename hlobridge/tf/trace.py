"""TensorFlow's half of hlobridge.tf: a Python function and an input signature -> a GraphDef,
with the feed and fetch names that connect it to the function's arguments and results.

TensorFlow traces the function (`tf.function(fn, input_signature).get_concrete_function()`),
which gives a FuncGraph whose calls into Keras layers, `tf.while_loop` bodies and the like are
in its function library. A function that only reads its variables (inference, `from_keras`)
has them frozen into constants by TensorFlow's own `convert_variables_to_constants_v2` (the
path `tools/conformance_cases` and the Keras layer sweep take, so the graphs are the ones the
suite tests), keeping functional While/If (`lower_control_flow=False`), which hlobridge compiles
as they are. Why freeze a read-only function rather than hand hlobridge its variables: the
clusters get fixed weights, which hlobridge folds (a transposed kernel is transposed once, at
compile time), and no resource handle is threaded into loop bodies (a Keras LSTM passes its
kernels into its While). The values are those when the signature is traced;
`CompiledFunction.retrace()` re-freezes after the weights change in TensorFlow.

A function that writes a variable (a training step) cannot be frozen: its variables stay
variables, held by the Session and written back to TensorFlow after each call (variables.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import tensorflow as tf
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

from ..errors import HlobridgeError
from ..frontend.proto import schema
from .variables import WRITE_PREFIXES, live_graph



@dataclass
class Traced:
    """One input signature's frozen graph: `inputs[i]` is fed the i-th flat argument,
    `outputs[j]` is the j-th tensor among the flat results; `structure` is the function's
    result with its tensors in place (tf.nest rebuilds it with arrays)."""

    graph_def: object  # hlobridge's GraphDef message (frontend/proto), not TensorFlow's
    inputs: list[str]
    outputs: list[str]
    structure: object
    specs: list  # the flat input signature, tf.TensorSpec each
    variables: dict  # shared name -> tf.Variable, for a function that writes variables (else empty)
    targets: list  # ops run for their effect (the function's variable writes), fetched beside `outputs`


def trace(fn, signature: list, name: str) -> Traced:
    """Trace `fn` on `signature` (a list of tf.TensorSpec structures, one per positional
    argument); freeze it, or keep its variables when it writes some (variables.py)."""
    concrete = tf.function(fn, input_signature=signature, autograph=True).get_concrete_function()
    specs = [s for s in tf.nest.flatten(concrete.structured_input_signature) if isinstance(s, tf.TensorSpec)]
    structure = concrete.structured_outputs
    leaves = tf.nest.flatten(structure)
    composite = [type(v).__name__ for v in leaves if isinstance(v, tf.__internal__.CompositeTensor)]
    if composite:
        raise HlobridgeError(f"{name} returns {', '.join(sorted(set(composite)))}: hlobridge.tf returns "
                             f"NumPy arrays, return the dense tensor or the components instead")
    if any(op.startswith(WRITE_PREFIXES) for _, op in all_nodes(concrete.graph.as_graph_def())):
        graph_def, variables = live_graph(concrete, name)
        inputs, outputs = [t.name for t in concrete.inputs[:len(specs)]], [t.name for t in concrete.outputs]
        targets = [op.name for op in concrete.graph.control_outputs]
    else:
        graph_def, inputs, outputs = _frozen(concrete, len(specs), name)
        variables, targets = {}, []
    if sum(isinstance(v, tf.Tensor) for v in leaves) != len(outputs):
        raise HlobridgeError(f"{name}: {len(outputs)} graph output(s) for "
                             f"{sum(isinstance(v, tf.Tensor) for v in leaves)} tensor(s) in the result")
    return Traced(schema.GraphDef.FromString(graph_def.SerializeToString()), inputs, outputs, structure, specs,
                  variables, targets)


def _frozen(concrete, n_args: int, name: str):
    """(TensorFlow GraphDef, input names, output names) with every variable a constant."""
    try:
        frozen = convert_variables_to_constants_v2(concrete, lower_control_flow=False)
    except ValueError as e:  # TensorFlow's own words, on one line
        raise HlobridgeError(f"{name}: TensorFlow cannot freeze the traced function: "
                             f"{str(e).splitlines()[0]}") from None
    if len(frozen.inputs) != n_args:
        extra = [t.name for t in frozen.inputs[n_args:]]
        raise HlobridgeError(f"{name}: the frozen graph still takes {', '.join(extra)} beside the "
                             f"function's {n_args} argument(s) (a captured resource that is not a variable?)")
    return frozen.graph.as_graph_def(), [t.name for t in frozen.inputs], [t.name for t in frozen.outputs]


def all_nodes(graph_def) -> list[tuple[str, str]]:
    """(name, op) of every node in the graph and in its library's functions ("fn/node")."""
    bodies = [("", graph_def.node), *((f"{f.signature.name}/", f.node_def) for f in graph_def.library.function)]
    return [(prefix + n.name, n.op) for prefix, nodes in bodies for n in nodes]


def flat_spec(value) -> tf.TensorSpec:
    """The exact TensorSpec of a call's argument (a signature made from the call)."""
    t = tf.convert_to_tensor(value)
    return tf.TensorSpec(t.shape, t.dtype)


def leaves_of(args, signature: list, name: str) -> list:
    """The call's arguments flattened as the signature is; a one-line error when their
    structure differs."""
    try:
        tf.nest.assert_same_structure(list(signature), list(args), check_types=False)
    except (ValueError, TypeError):
        raise HlobridgeError(f"{name} takes {_describe(signature)}, got {_describe(list(args))}") from None
    return tf.nest.flatten(list(args))


def pack(structure, values: list):
    """The function's result structure with its tensors replaced by `values` (in order)."""
    it = iter(values)
    leaves = [next(it) if isinstance(v, tf.Tensor) else v for v in tf.nest.flatten(structure)]
    return tf.nest.pack_sequence_as(structure, leaves)


def _describe(structure) -> str:
    n = len(tf.nest.flatten(structure))
    return f"{len(structure)} argument(s) ({n} tensor(s) in all)"
