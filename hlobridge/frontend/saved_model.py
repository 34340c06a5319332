"""SavedModels without TensorFlow: the graph of `saved_model.pb`, its signatures, its variables.

A SavedModel directory holds `saved_model.pb` (MetaGraphDefs, each with tags, a GraphDef
with its function library, SignatureDefs naming input and output tensors of that graph, a
SaverDef and, from TensorFlow 2, a SavedObjectGraph) and `variables/variables.*`, a
TensorBundle (tensor_bundle.py). Loading it:

- the MetaGraphDef whose tags equal the asked-for set (default {"serve"}) is chosen, and its
  GraphDef becomes the Session's graph (calls inlined, as for any graph);
- TF2 models: each signature is a StatefulPartitionedCall whose trailing inputs are the
  VarHandleOps its function captured; the object graph's concrete function lists, for
  those, the object node ids (`bound_inputs`), and the checkpoint's TrackableObjectGraph
  gives each object's `.ATTRIBUTES/VARIABLE_VALUE` key. The values go straight into the
  Session's variables under the handles' shared names: no restore function runs;
- TF1 models (no object graph): the Saver's restore op runs, fed the variables' prefix,
  with the checkpoint kernels of ops/checkpoint.py;
- assets are not loaded (a warning names them): no op hlobridge runs reads them.

`load_saved_model` wraps a Session (so clusters compile per shape and cache as usual) with
the signature's keys; `freeze_signature` turns a signature into a constant-variable graph
for `hlobridge-compile`.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import dtypes, tensor_proto
from ..errors import InputError, SavedModelError
from ..graph import Graph, Node, TensorRef
from ..proto import schema
from ..proto.saved_model_schema import SavedModel, TrackableObjectGraph
from ..spec import TensorSpec
from . import tensor_bundle

SAVED_MODEL_PB = "saved_model.pb"
INIT_OP_SIGNATURE = "__saved_model_init_op"
DEFAULT_SIGNATURE = "serving_default"
DEFAULT_TAGS = ("serve",)
OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
CALL_OPS = ("StatefulPartitionedCall", "PartitionedCall")


def is_saved_model(path) -> bool:
    return isinstance(path, (str, os.PathLike)) and (Path(path) / SAVED_MODEL_PB).is_file()


@dataclass(frozen=True)
class SignatureIO:
    """One input or output of a signature: its key, the graph tensor, its dtype and shape."""

    key: str
    tensor: str
    spec: TensorSpec


class SavedModelSource:
    """A SavedModel directory opened for a Session: its graph, signatures and variables."""

    def __init__(self, path, tags=None):
        self.path = Path(path)
        self.pb_path = self.path / SAVED_MODEL_PB
        self.tags = tuple(sorted(DEFAULT_TAGS if tags is None else ([tags] if isinstance(tags, str) else tags)))
        self.meta = self._meta_graph(_read_saved_model(self.pb_path))
        self.graph = Graph.from_graphdef(self.meta.graph_def, str(self.pb_path))
        self.signature_defs = {k: v for k, v in self.meta.signature_def.items() if k != INIT_OP_SIGNATURE}
        self.prefix = str(self.path / "variables" / "variables")

    def _meta_graph(self, saved):
        available = [tuple(sorted(m.meta_info_def.tags)) for m in saved.meta_graphs]
        for meta, tags in zip(saved.meta_graphs, available):
            if tags == self.tags:
                return meta
        raise SavedModelError(f"{self.pb_path}: no MetaGraph with tags {list(self.tags)}; it has "
                              f"{', '.join(str(list(t)) for t in available) or 'none'}")

    @property
    def signatures(self) -> list[str]:
        return sorted(self.signature_defs)

    def signature_name(self, name: str | None) -> str:
        """`name`, or the default: serving_default, else the only signature there is."""
        if name is None:
            if DEFAULT_SIGNATURE in self.signature_defs or len(self.signature_defs) != 1:
                name = DEFAULT_SIGNATURE
            else:
                name = self.signatures[0]
        if name not in self.signature_defs:
            raise SavedModelError(f"{self.path}: no signature '{name}'; it has "
                                  f"{', '.join(self.signatures) or 'none'}")
        return name

    def signature(self, name: str) -> tuple[list[SignatureIO], list[SignatureIO]]:
        sig = self.signature_defs[self.signature_name(name)]
        return [_io(k, v, self.path, name) for k, v in sorted(sig.inputs.items())], \
            [_io(k, v, self.path, name) for k, v in sorted(sig.outputs.items())]

    # -- variables -------------------------------------------------------------------------------
    def restore(self, session) -> None:
        """Put the checkpoint's values into `session`'s variables (see the module docstring)."""
        if self.meta.asset_file_def:
            names = ", ".join(a.filename for a in self.meta.asset_file_def)
            warnings.warn(f"{self.path}: assets ignored ({names}): hlobridge runs no op that reads them",
                          stacklevel=3)
        if not Path(tensor_bundle.index_filename(self.prefix)).exists():
            return  # a model without variables
        reader = tensor_bundle.BundleReader(self.prefix)
        if len(self.meta.object_graph_def.nodes) and OBJECT_GRAPH_KEY in reader:
            self._bind_captures(session.variables, reader)
        elif self.meta.saver_def.restore_op_name:
            saver = self.meta.saver_def
            session.run(saver.restore_op_name, {saver.filename_tensor_name: self.prefix})

    def _bind_captures(self, store, reader) -> None:
        objects = self.meta.object_graph_def
        keys = _variable_keys(objects, reader)
        defs = {nd.name: nd for nd in self.meta.graph_def.node}
        bound: dict[str, str] = {}
        for nd in self.meta.graph_def.node:
            fn = objects.concrete_functions.get(nd.attr["f"].func.name) if nd.op in CALL_OPS else None
            if fn is None or not fn.bound_inputs:
                continue
            data = [i for i in nd.input if not i.startswith("^")]
            for inp, node_id in zip(data[len(data) - len(fn.bound_inputs):], fn.bound_inputs):
                handle = defs.get(TensorRef.parse(inp).node)
                if handle is None or handle.op != "VarHandleOp" or node_id not in keys:
                    continue
                name = handle.attr["shared_name"].s.decode() or handle.name
                key = keys[node_id]
                if bound.setdefault(name, key) != key:
                    raise SavedModelError(f"{self.pb_path}: variable handle '{name}' is bound to both "
                                          f"'{bound[name]}' and '{key}'")
                value = reader.read(key)
                want = dtypes.from_enum(handle.attr["dtype"].type)
                if value.dtype != want:
                    raise SavedModelError(f"{reader.index_path}: tensor '{key}' is {dtypes.name(value.dtype)}, "
                                          f"variable '{name}' is {dtypes.name(want)}")
                store.values[name] = value


def _read_saved_model(pb_path: Path):
    try:
        data = pb_path.read_bytes()
    except OSError as e:
        raise SavedModelError(f"{pb_path}: cannot read: {e.strerror}") from None
    saved = SavedModel()
    try:
        saved.ParseFromString(data)
    except Exception:
        raise SavedModelError(f"{pb_path}: not a SavedModel ({len(data)} bytes; truncated or corrupt?)") from None
    if not saved.meta_graphs:
        raise SavedModelError(f"{pb_path}: the SavedModel holds no MetaGraph")
    return saved


def _io(key: str, info, path, signature: str) -> SignatureIO:
    if info.WhichOneof("encoding") != "name":
        raise SavedModelError(f"{path}: signature '{signature}' {key}: only dense tensors are supported "
                              f"(this one is {info.WhichOneof('encoding')})")
    return SignatureIO(key, info.name, TensorSpec(dtypes.from_enum(info.dtype),
                                                  tensor_proto.shape_from_proto(info.tensor_shape)))


def _paths(nodes) -> dict[int, tuple]:
    """Object node id -> its path of child names from the root (node 0), breadth first."""
    paths, todo = {0: ()}, [0]
    for node_id in todo:
        for child in nodes[node_id].children:
            if child.node_id not in paths and child.node_id < len(nodes):
                paths[child.node_id] = paths[node_id] + (child.local_name,)
                todo.append(child.node_id)
    return paths


def _variable_keys(objects, reader) -> dict[int, str]:
    """SavedObjectGraph node id -> the checkpoint key of its VARIABLE_VALUE, matched through
    the checkpoint's own object graph by path (the two graphs need not number alike)."""
    trackable = TrackableObjectGraph()
    raw = reader.read(OBJECT_GRAPH_KEY).item()  # checksummed: a bad file fails here, naming itself
    try:
        trackable.ParseFromString(raw)
    except Exception:
        raise SavedModelError(f"{reader.index_path}: {OBJECT_GRAPH_KEY} does not parse: corrupt") from None
    by_path = {path: i for i, path in _paths(trackable.nodes).items()}
    keys = {}
    for node_id, path in _paths(objects.nodes).items():
        ckpt_id = by_path.get(path)
        if ckpt_id is None:
            continue
        for attr in trackable.nodes[ckpt_id].attributes:
            if attr.name == "VARIABLE_VALUE":
                keys[node_id] = attr.checkpoint_key
    return keys


def saved_model_source(source, tags=None):
    """(what load_graph should read, a callback restoring variables into a Session or None)."""
    if isinstance(source, SavedModelSource):
        return source.graph, source.restore
    if is_saved_model(source):
        opened = SavedModelSource(source, tags)
        return opened.graph, opened.restore
    if tags is not None:
        raise SavedModelError(f"tags= applies to a SavedModel directory; {source} is not one "
                              f"(no {SAVED_MODEL_PB} there)")
    return source, None


# -- the user's view: load_saved_model ------------------------------------------------------------


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
        return {io.key: io.spec for io in self._inputs}

    @property
    def outputs(self) -> dict[str, TensorSpec]:
        return {io.key: io.spec for io in self._outputs}

    def run(self, feeds: dict) -> dict[str, np.ndarray]:
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
    from ..session import Session
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
    frozen = Graph(nodes, graph.library, f"{model.source.path} signature '{model.signature}'")
    frozen._function_library = graph.function_library
    return frozen, [renamed.get(r.node, str(r)) for r in in_refs], outputs


def _variable_name(graph: Graph, read: Node) -> str:
    """The shared name of the VarHandleOp a ReadVariableOp reads, through Identity(N)s."""
    r = read.inputs[0]
    while graph.nodes[r.node].op in ("Identity", "IdentityN"):
        n = graph.nodes[r.node]
        r = n.inputs[r.index if n.op == "IdentityN" else 0]
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


# -- the command-line tools --------------------------------------------------------------------


def add_cli_arguments(parser) -> None:
    """--signature and --tags, for hlobridge-compile and hlobridge-explain."""
    parser.add_argument("--signature", default=None,
                        help=f"for a SavedModel directory: the signature (default {DEFAULT_SIGNATURE})")
    parser.add_argument("--tags", default=None,
                        help=f"for a SavedModel directory: its MetaGraph's tags, comma-separated "
                             f"(default {','.join(DEFAULT_TAGS)})")


def _cli_model(args) -> LoadedSavedModel:
    tags = None if args.tags is None else [t.strip() for t in args.tags.split(",") if t.strip()]
    return load_saved_model(args.graph, args.signature, tags, jit="off", cache_dir=False)


def compile_target(args, io: dict) -> tuple[Graph, dict]:
    """hlobridge-compile of a SavedModel: the frozen signature, inputs and outputs named by
    its keys; --input-shape takes a key or the tensor name."""
    model = _cli_model(args)
    graph, inputs, outputs = freeze_signature(model)
    alias = {}
    for io_, name in zip(model._inputs, inputs):
        alias.update({io_.key: name, io_.tensor: name, io_.tensor.split(":")[0]: name})
    shapes = {alias.get(k, k): v for k, v in (io.get("input_shapes") or {}).items()}
    return graph, {"inputs": io.get("inputs") or inputs, "outputs": io.get("outputs") or outputs,
                   "input_shapes": shapes}


def explain_target(args) -> tuple[Graph, list[str], list[str]]:
    """hlobridge-explain of a SavedModel: the Session's graph, fetching the signature's outputs
    and feeding its inputs (the plan `load_saved_model(...).run` uses)."""
    model = _cli_model(args)
    return model.session.graph, [io.tensor for io in model._outputs], [io.tensor for io in model._inputs]
