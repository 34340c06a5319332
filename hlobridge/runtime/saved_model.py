"""Running a SavedModel's signature: `load_saved_model` (the user's API) and `freeze_signature`
(what `hlobridge-compile` compiles). Reading the SavedModel is frontend/saved_model.py's job;
this module adds the Session that runs it.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..errors import InputError, SavedModelError
from ..frontend import tensor_proto
from ..frontend.graph import Graph, Node, TensorRef
from ..frontend.proto import schema
from ..frontend.saved_model import SavedModelSource
from ..spec import TensorSpec
from .session import Session


class LoadedSavedModel:
    """One signature of a SavedModel, run by a Session: `run({key: array}) -> {key: array}`."""

    def __init__(self, source: SavedModelSource, session, signature: str):
        self.source = source
        self.session = session
        self.signature = signature
        self.signatures = source.signatures
        self._inputs, self._outputs = source.signature(signature)

    @property
    def inputs(self) -> dict[str, TensorSpec]:
        """The signature's inputs by key, unknown dims as None."""
        return {io.key: io.spec for io in self._inputs}

    @property
    def outputs(self) -> dict[str, TensorSpec]:
        """The signature's outputs by key."""
        return {io.key: io.spec for io in self._outputs}

    def run(self, feeds: dict) -> dict[str, np.ndarray]:
        """Run the signature on `feeds` (by key); its outputs by key. Unknown or missing keys are an InputError."""
        want = {io.key for io in self._inputs}
        missing, unknown = sorted(want - set(feeds)), sorted(set(feeds) - want)
        if missing or unknown:
            raise InputError(f"signature '{self.signature}' of {self.source.path} takes "
                             f"{', '.join(sorted(want)) or 'no inputs'}" +
                             (f"; missing {', '.join(missing)}" if missing else "") +
                             (f"; unknown {', '.join(map(str, unknown))}" if unknown else ""))
        feed_dict = {io.tensor: feeds[io.key] for io in self._inputs}
        return self.session.run({io.key: io.tensor for io in self._outputs}, feed_dict)

    def __repr__(self) -> str:
        return (f"<SavedModel {self.source.path} signature '{self.signature}': "
                f"{', '.join(self.inputs)} -> {', '.join(self.outputs)}>")


def load_saved_model(path, signature: str | None = None, tags=None, **session_options) -> LoadedSavedModel:
    """A SavedModel's signature (default serving_default) with tags (default {"serve"}),
    its variables restored, ready to `run`. `session_options` go to the Session (jit, device, ...)."""
    source = SavedModelSource(path, tags)
    name = source.signature_name(signature)
    return LoadedSavedModel(source, Session(source, **session_options), name)


# -- freezing a signature for hlobridge-compile ---------------------------------------------------


def freeze_signature(model: LoadedSavedModel) -> tuple[Graph, list[str], list[str]]:
    """(graph, input names, output names) computing the signature with every variable it reads
    replaced by a constant of its value. Inputs and outputs are named by the signature's keys
    where no node has that name yet (the compiled module's names), else by their tensors."""
    graph, store = model.session.graph, model.session.variables
    in_refs = [graph.tensor(io.tensor) for io in model._inputs]
    needed = graph.prune([graph.tensor(io.tensor).node for io in model._outputs], in_refs) | {r.node for r in in_refs}
    renamed = {r.node: io.key for r, io in zip(in_refs, model._inputs)
               if r.index == 0 and io.key not in graph.nodes}

    def ref(r: TensorRef) -> TensorRef:
        return TensorRef(renamed.get(r.node, r.node), r.index)

    nodes = []
    for name in graph.order:
        if name not in needed:
            continue
        n = graph.nodes[name]
        if n.op == "ReadVariableOp" or n.op == "VariableV2":
            variable = _variable_name(graph, n) if n.op == "ReadVariableOp" else (n.attr("shared_name") or n.name)
            if variable not in store.values:
                raise SavedModelError(f"{model.source.path}: node '{name}' reads variable '{variable}', "
                                      f"which the checkpoint did not restore")
            n = _const_node(name, np.asarray(store.values[variable]), n.control_inputs)
        nodes.append(Node(renamed.get(n.name, n.name), n.op, [ref(r) for r in n.inputs],
                          [renamed.get(c, c) for c in n.control_inputs], n.device, n.attrs, n.node_def))
    outputs = []
    for io in model._outputs:
        r = ref(graph.tensor(io.tensor))
        if io.key in graph.nodes or io.key in renamed.values():
            outputs.append(str(r))
        else:
            nodes.append(Node(io.key, "Identity", [r], [], "", {"T": io.spec.dtype}))
            outputs.append(io.key)
    frozen = Graph(nodes, graph.library, f"{model.source.path} signature '{model.signature}'",
                   graph.function_library)
    return frozen, [renamed.get(r.node, str(r)) for r in in_refs], outputs


def _variable_name(graph: Graph, read: Node) -> str:
    """The shared name of the VarHandleOp a ReadVariableOp reads, through Identity(N)s."""
    node, index = read, 0
    while node is read or node.op in ("Identity", "IdentityN"):
        i = index if node.op == "IdentityN" else 0
        if i >= len(node.inputs):  # (a damaged graph: the node lacks the input)
            raise SavedModelError(f"{graph.source}: node '{node.name}' ({node.op}) has no input {i}; "
                                  f"cannot follow it to the variable '{read.name}' reads")
        r = node.inputs[i]
        node, index = graph.nodes[r.node], r.index
    handle = graph.nodes[r.node]
    if handle.op != "VarHandleOp":
        raise SavedModelError(f"{graph.source}: node '{read.name}' reads a variable handle from "
                              f"'{handle.name}' ({handle.op}), not from a VarHandleOp; cannot freeze it")
    return handle.attr("shared_name") or handle.name


def _const_node(name: str, value: np.ndarray, controls: list[str]) -> Node:
    nd = schema.NodeDef(name=name, op="Const")
    nd.attr["dtype"].type = dtypes.to_enum(value.dtype)
    nd.attr["value"].tensor.CopyFrom(tensor_proto.from_numpy(value))
    return Node(name, "Const", [], list(controls), "", {"dtype": value.dtype, "value": value}, nd)
