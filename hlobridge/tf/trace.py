"""TensorFlow's half of hlobridge.tf: a Python function and an input signature -> a frozen
GraphDef, with the feed and fetch names that connect it to the function's arguments and results.

TensorFlow traces the function (`tf.function(fn, input_signature).get_concrete_function()`),
which gives a FuncGraph whose calls into Keras layers, `tf.while_loop` bodies and the like are
in its function library. Its variables are then frozen into constants with TensorFlow's own
`convert_variables_to_constants_v2` (the path `tools/conformance_cases` and the Keras layer
sweep already take, so the graphs are the ones the suite tests). Why freeze rather than hand
hlobridge the variables:
- the function is read-only, as `from_keras`'s inference pass is: constants give the clusters
  fixed weights, which hlobridge folds (a transposed kernel is transposed once, at compile
  time), and the graph has no resource handles left to thread through While bodies;
- its values are those of the variables when the signature is traced; a function that writes a
  variable (a training step, a counter) is refused with the nodes that write, since writes to a
  frozen copy would be lost silently. `CompiledFunction.retrace()` re-freezes after the weights
  change in TensorFlow.
"""

from __future__ import annotations

from dataclasses import dataclass

import tensorflow as tf
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

from ..errors import HlobridgeError
from ..frontend.proto import schema

# Ops that change a variable: a frozen copy cannot take the write (see the module docstring).
_WRITE_PREFIXES = ("Assign", "ResourceApply", "ResourceSparseApply", "ResourceScatter",
                   "ResourceStridedSliceAssign")


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


def trace(fn, signature: list, name: str) -> Traced:
    """Trace `fn` on `signature` (a list of tf.TensorSpec structures, one per positional
    argument) and freeze it."""
    concrete = tf.function(fn, input_signature=signature, autograph=True).get_concrete_function()
    _refuse_writes(concrete, name)
    try:
        frozen = convert_variables_to_constants_v2(concrete, lower_control_flow=False)
    except ValueError as e:  # TensorFlow's own words, on one line
        raise HlobridgeError(f"{name}: TensorFlow cannot freeze the traced function: "
                             f"{str(e).splitlines()[0]}") from None
    specs = [s for s in tf.nest.flatten(concrete.structured_input_signature) if isinstance(s, tf.TensorSpec)]
    if len(frozen.inputs) != len(specs):
        extra = [t.name for t in frozen.inputs[len(specs):]]
        raise HlobridgeError(f"{name}: the frozen graph still takes {', '.join(extra)} beside the "
                             f"function's {len(specs)} argument(s) (a captured resource that is not a variable?)")
    structure = concrete.structured_outputs
    leaves = tf.nest.flatten(structure)
    composite = [type(v).__name__ for v in leaves if isinstance(v, tf.__internal__.CompositeTensor)]
    if composite:
        raise HlobridgeError(f"{name} returns {', '.join(sorted(set(composite)))}: hlobridge.tf returns "
                             f"NumPy arrays, return the dense tensor or the components instead")
    if sum(isinstance(v, tf.Tensor) for v in leaves) != len(frozen.outputs):
        raise HlobridgeError(f"{name}: {len(frozen.outputs)} graph output(s) for "
                             f"{sum(isinstance(v, tf.Tensor) for v in leaves)} tensor(s) in the result")
    graph_def = schema.GraphDef.FromString(frozen.graph.as_graph_def().SerializeToString())
    return Traced(graph_def, [t.name for t in frozen.inputs], [t.name for t in frozen.outputs], structure, specs)


def _refuse_writes(concrete, name: str) -> None:
    """A one-line error naming the nodes (in the graph or its functions) that write variables."""
    writes = [f"{name} ({op})" for name, op in all_nodes(concrete.graph.as_graph_def())
              if op.startswith(_WRITE_PREFIXES)]
    if writes:
        shown = ", ".join(writes[:4]) + (f", ... ({len(writes) - 4} more)" if len(writes) > 4 else "")
        raise HlobridgeError(f"{name} writes variables ({shown}); hlobridge.tf freezes variables "
                             f"into constants, so it compiles functions that only read them")


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
