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
  Session's variables under the handles' shared names: no restore function runs. Mutable
  lookup tables captured the same way get their saved keys and values (ops/text/tables.py);
- TF1 models (no object graph): the Saver's restore op runs, fed the variables' prefix,
  with the checkpoint kernels of ops/control/checkpoint.py;
- then the model's init op runs, as TensorFlow's loader runs it: the `__saved_model_init_op`
  signature (TF2), else the `saved_model_main_op` or `legacy_init_op` collection (TF1),
  and the `table_initializer` collection's ops (as TF2 loads a TF1 model), each asset's
  tensor fed the absolute path of its file under `assets/`. This fills the lookup tables
  (ops/text/tables.py) of Keras StringLookup / TextVectorization and tf.lookup; assets that no
  op of the graph reads get a warning naming them.

This module reads; `runtime/saved_model.py` runs: `load_saved_model` wraps a Session (so
clusters compile per shape and cache as usual) with the signature's keys, and
`freeze_signature` turns a signature into a constant-variable graph for `hlobridge-compile`.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path

from .. import dtypes
from ..errors import SavedModelError
from ..spec import TensorSpec
from ..ops.text import tables
from . import tensor_bundle, tensor_proto
from .functions import CALL_OPS
from .graph import Graph, TensorRef
from .load import graph_from_graphdef
from .proto.saved_model_schema import SavedModel, TrackableObjectGraph

SAVED_MODEL_PB = "saved_model.pb"
INIT_OP_SIGNATURE = "__saved_model_init_op"
DEFAULT_SIGNATURE = "serving_default"
DEFAULT_TAGS = ("serve",)
OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
INIT_OP_COLLECTIONS = ("saved_model_main_op", "legacy_init_op")  # TF1, in the loader's order
TABLE_INITIALIZERS = "table_initializer"


def is_saved_model(path) -> bool:
    """Whether `path` is a directory holding a saved_model.pb."""
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
        self.graph = graph_from_graphdef(self.meta.graph_def, str(self.pb_path))
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
        """The signature names, TF's internal __saved_model_init_op left out."""
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
        """The signature's inputs and outputs, each sorted by key."""
        sig = self.signature_defs[self.signature_name(name)]
        return [_io(k, v, self.path, name) for k, v in sorted(sig.inputs.items())], \
            [_io(k, v, self.path, name) for k, v in sorted(sig.outputs.items())]

    # -- variables -------------------------------------------------------------------------------
    def restore(self, session) -> None:
        """Put the checkpoint's values into `session`'s variables (see the module docstring)."""
        if self.meta.asset_file_def and not _reads_files(self.graph):
            names = ", ".join(a.filename for a in self.meta.asset_file_def)
            warnings.warn(f"{self.path}: assets ignored ({names}): hlobridge runs no op that reads them",
                          stacklevel=3)
        if not Path(tensor_bundle.index_filename(self.prefix)).exists():
            self._check_needs_no_checkpoint()
        else:
            reader = tensor_bundle.BundleReader(self.prefix)
            if len(self.meta.object_graph_def.nodes) and OBJECT_GRAPH_KEY in reader:
                self._bind_captures(session.variables, reader)
            elif self.meta.saver_def.restore_op_name:
                saver = self.meta.saver_def
                session.run(saver.restore_op_name, {saver.filename_tensor_name: self.prefix})
        init_ops = self.init_ops()
        if init_ops:
            assets = {a.tensor_info.name: self._asset_path(a.filename)
                      for a in self.meta.asset_file_def if a.tensor_info.name}
            session.run(init_ops, assets)

    def _asset_path(self, filename: str) -> str:
        """assets/<filename>, resolved (the init op reads it: a vocabulary file)."""
        try:
            return str((self.path / "assets" / filename).resolve())
        except (ValueError, OSError) as e:  # a NUL in the name, a symlink loop
            raise SavedModelError(f"{self.pb_path}: asset file name {filename!r} is not a path: {e}") from None

    def _check_needs_no_checkpoint(self) -> None:
        """A model without variables/ is fine if it has no variables to restore; one that has them
        (a folder copied without variables/) is an error naming them here, not at the first run
        as a variable 'not initialized' inside some cluster."""
        saved = self.meta.saver_def.restore_op_name or any(
            o.WhichOneof("kind") == "variable" for o in self.meta.object_graph_def.nodes)
        names = [n.attr("shared_name") or n.name for n in self.graph.nodes.values()
                 if n.op in ("VarHandleOp", "VariableV2", "Variable")]
        if saved and names:
            shown = ", ".join(f"'{n}'" for n in names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            raise SavedModelError(f"{self.path}: {tensor_bundle.index_filename(self.prefix)} is missing, but the "
                                  f"SavedModel has variables to restore ({shown}): copy its variables/ folder too")

    def init_ops(self) -> list[str]:
        """The ops TensorFlow's loader runs after restoring the variables (module docstring)."""
        init = self.meta.signature_def.get(INIT_OP_SIGNATURE)
        if init is not None and INIT_OP_SIGNATURE in init.outputs:
            names = [init.outputs[INIT_OP_SIGNATURE].name]
        else:
            names = next((list(self.meta.collection_def[key].node_list.value) for key in INIT_OP_COLLECTIONS
                          if key in self.meta.collection_def), [])
        if TABLE_INITIALIZERS in self.meta.collection_def:
            names += self.meta.collection_def[TABLE_INITIALIZERS].node_list.value
        nodes = list(dict.fromkeys(TensorRef.parse(n).node for n in names))
        missing = [n for n in nodes if n not in self.graph.nodes]
        if missing:
            raise SavedModelError(f"{self.pb_path}: init op(s) {', '.join(missing)} are not in the graph")
        return nodes

    def _bind_captures(self, store, reader) -> None:
        objects = self.meta.object_graph_def
        keys = _checkpoint_keys(objects, reader)
        defs = {nd.name: nd for nd in self.meta.graph_def.node}
        bound: dict[str, str] = {}
        for nd in self.meta.graph_def.node:
            fn = objects.concrete_functions.get(nd.attr["f"].func.name) if nd.op in CALL_OPS else None
            if fn is None or not fn.bound_inputs:
                continue
            data = [i for i in nd.input if not i.startswith("^")]
            for inp, node_id in zip(data[len(data) - len(fn.bound_inputs):], fn.bound_inputs):
                handle = defs.get(TensorRef.parse(inp).node)
                if handle is not None and handle.op in tables.CREATORS and node_id in keys:
                    self._restore_table(store, reader, handle, keys[node_id])
                if handle is None or handle.op != "VarHandleOp" or "VARIABLE_VALUE" not in keys.get(node_id, {}):
                    continue
                name = handle.attr["shared_name"].s.decode("utf-8", "replace") or handle.name
                key = keys[node_id]["VARIABLE_VALUE"]
                if bound.setdefault(name, key) != key:
                    raise SavedModelError(f"{self.pb_path}: variable handle '{name}' is bound to both "
                                          f"'{bound[name]}' and '{key}'")
                value = reader.read(key)
                want = dtypes.from_enum(handle.attr["dtype"].type)
                if value.dtype != want:
                    raise SavedModelError(f"{reader.index_path}: tensor '{key}' is {dtypes.name(value.dtype)}, "
                                          f"variable '{name}' is {dtypes.name(want)}")
                store.values[name] = value


    def _restore_table(self, store, reader, handle, keys: dict) -> None:
        """A mutable table's saved contents (what its restore function's LookupTableImportV2
        would load): the checkpoint holds `<attribute key>-keys` and `-values`."""
        saved = [k for k in keys.values() if k + "-keys" in reader and k + "-values" in reader]
        if len(saved) != 1:
            return  # a table the checkpoint does not hold (a static one: its init op fills it)
        attr = handle.attr
        reserved = [self._const(handle, i) for i in range(len(handle.input))]  # a dense table's
        tables.restore_table(store, tables.table_name(handle.name, attr["container"].s.decode("utf-8", "replace"),
                                                      attr["shared_name"].s.decode("utf-8", "replace")),
                             handle.op, dtypes.from_enum(attr["key_dtype"].type),
                             dtypes.from_enum(attr["value_dtype"].type),
                             tensor_proto.shape_from_proto(attr["value_shape"].shape) or (),
                             reader.read(saved[0] + "-keys"), reader.read(saved[0] + "-values"), reserved)

    def _const(self, node_def, i: int):
        """The value of a Const that input i of `node_def` reads (a dense table's empty_key)."""
        source = self.graph.nodes.get(TensorRef.parse(node_def.input[i]).node)
        if source is None or source.op != "Const":
            raise SavedModelError(f"{self.pb_path}: table '{node_def.name}' takes input {i} from "
                                  f"{node_def.input[i]}, not from a Const")
        return source.attr("value")


FILE_READERS = ("InitializeTableFromTextFileV2",)


def _reads_files(graph: Graph) -> bool:
    """Whether the graph (functions inlined) has an op that reads a file by name (an asset)."""
    return any(n.op in FILE_READERS for n in graph.nodes.values())


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
            if child.node_id not in paths and 0 <= child.node_id < len(nodes):
                paths[child.node_id] = paths[node_id] + (child.local_name,)
                todo.append(child.node_id)
    return paths


def _checkpoint_keys(objects, reader) -> dict[int, dict[str, str]]:
    """SavedObjectGraph node id -> {attribute: checkpoint key} (a variable's VARIABLE_VALUE, a
    table's table-keys and table-values), matched through the checkpoint's own object graph by
    path (the two graphs need not number alike)."""
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
        attributes = {attr.name: attr.checkpoint_key for attr in trackable.nodes[ckpt_id].attributes}
        if attributes:
            keys[node_id] = attributes
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
