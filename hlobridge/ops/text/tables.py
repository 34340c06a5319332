"""Lookup tables: the hash tables of tf.lookup and of Keras' StringLookup, IntegerLookup and
TextVectorization, as session resources.

A table-creating op (HashTableV2, MutableHashTableV2, ...) evaluates to a `TableHandle`, the
name of a table in the session's store (as a VarHandleOp evaluates to a VariableHandle); the
table itself is created on the op's first run and lives as long as the session, so the
initializer (`init_all_tables`, a SavedModel's `__saved_model_init_op`) runs once and every
later step looks keys up in it. Tables sit in the VariableStore's `values` under
`TABLE_PREFIX + name`, apart from any variable of the same name.

Every op here is stateful and runs on its reference kernel: a table is session state that no
compiled cluster can hold, and keys are mostly strings. Clustering gives them the reason
"lookup_table" (passes/graph/mark_for_compilation.py); the numeric ops around them cluster.

Semantics follow TensorFlow 2.21's kernels (lookup_table_op.cc, lookup_table_init_op.cc):

- the TF1 ops (HashTable, LookupTableFind, InitializeTable, ...: ref-typed string handles)
  share the V2 ops' rules;
- a table is named by `shared_name`, else by its node's name (TF shares by node name, or
  keeps one table per kernel instance: within one session both are "per node");
  Anonymous* ops create a new table on every run;
- HashTableV2 (an "initializable" table) must be initialized before Find (FailedPrecondition
  "Table not initialized."); its size is 0 until then; initializing it again is a no-op
  (TF keeps the first contents, whatever the new data); a key given twice with different
  values fails, with the same value is fine; Insert and Remove are Unimplemented;
- LookupTableImportV2 initializes a HashTableV2 (TF's KeyValueTensorInitializer writes it)
  and replaces the whole contents of a mutable table;
- Find's default value is either the value shape (one default for all keys) or the full
  output shape keys.shape + value_shape (a default per key);
- MutableDenseHashTableV2 refuses its empty_key and deleted_key as keys; its Export is the
  bucket array in TF (empty slots included, in hash order): here Export gives the live
  entries only, in insertion order, as for the other tables (TF's order is unspecified
  for them too);
- InitializeTableFromTextFileV2 reads a text file line by line (a trailing "\\r" dropped):
  key_index/value_index -2 is the whole line, -1 the line number (+ offset), else a field
  split by `delimiter`; an empty line, a missing field, a field that does not parse and a
  vocab_size larger than the file are errors, as TF's messages say. A relative filename is
  read relative to the working directory; SavedModels feed their assets' absolute paths
  (frontend/saved_model.py).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from ... import dtypes
from ...errors import InputError
from ...spec import TensorSpec
from ..registry import register
from .strings import STRING, _to_bytes

TABLE_PREFIX = "lookup_table:"
_ANONYMOUS = itertools.count()


@dataclass(frozen=True)
class TableHandle:
    """What a table-creating op evaluates to: the name of a table in the session's store."""

    name: str


@dataclass
class Table:
    """One lookup table: its kind (the op that made it), types, value shape and entries."""

    kind: str
    key_dtype: object
    value_dtype: object
    value_shape: tuple = ()
    entries: dict = field(default_factory=dict)  # key (bytes, int or float) -> value array
    initialized: bool = False  # HashTableV2 only: mutable tables are always usable
    empty_key: object = None  # MutableDenseHashTableV2's reserved keys
    deleted_key: object = None

    @property
    def initializable(self) -> bool:
        return self.kind in ("HashTableV2", "AnonymousHashTable")  # (a v1 HashTable's kind is V2)


# -- keys and values ---------------------------------------------------------------------------------


def _keys(ctx, keys, dtype) -> list:
    """A key tensor's elements as hashable Python values (bytes for strings)."""
    keys = np.asarray(keys, dtype=dtype)
    if np.dtype(dtype) == STRING:
        return [_to_bytes(ctx, k) for k in keys.ravel()]
    return keys.ravel().tolist()


def _check_dtype(ctx, what: str, got, want) -> None:
    if got is not None and np.dtype(got) != np.dtype(want):
        raise ctx.error(f"{what} must be type {dtypes.name(want)} but got {dtypes.name(got)}", cls=InputError)


def _table(ctx, i: int = 0) -> Table:
    """The table whose handle is input i; an error naming the node if there is none."""
    handle = ctx.state.args[i]
    if not isinstance(handle, TableHandle):
        raise ctx.error(f"input {i} is not a lookup table handle ({type(handle).__name__})", cls=InputError)
    table = ctx.state.store.values.get(TABLE_PREFIX + handle.name)
    if table is None:
        raise ctx.error(f"table '{handle.name}' does not exist (its creating op never ran)", cls=InputError)
    return table


def _rows(ctx, table: Table, keys: np.ndarray, values):
    """(key list, value rows) for Insert/Import/Initialize: values must be keys.shape + value_shape."""
    _check_dtype(ctx, "Key", keys.dtype, table.key_dtype)
    values = np.asarray(values, dtype=table.value_dtype)
    want = tuple(keys.shape) + tuple(table.value_shape)
    if tuple(values.shape) != want:
        raise ctx.error(f"Expected shape {_dims(want)} for value, got {_dims(values.shape)}", cls=InputError)
    rows = values.reshape((-1,) + tuple(table.value_shape))
    return _keys(ctx, keys, table.key_dtype), list(rows)


def _check_not_reserved(ctx, table: Table, keys: list) -> None:
    if table.empty_key is None:
        return
    for k in keys:
        if k == table.empty_key:
            raise ctx.error("Using the empty_key as a table key is not allowed", cls=InputError)
        if k == table.deleted_key:
            raise ctx.error("Using the deleted_key as a table key is not allowed", cls=InputError)


def _fill(ctx, table: Table, keys: list, rows: list) -> None:
    """Initialize an initializable table (TF: a second initialization is a no-op)."""
    if table.initialized:
        return
    entries = {}
    for k, v in zip(keys, rows):
        if k in entries and not np.array_equal(entries[k], v):
            raise ctx.error(f"HashTable has different value for same key. Key {_show(k)} has "
                            f"{_show(entries[k])} and trying to add value {_show(v)}", cls=InputError)
        entries[k] = v
    table.entries = entries
    table.initialized = True


def _dims(shape) -> str:
    """A shape as TF's messages print it: [2,3]."""
    return "[" + ",".join(str(d) for d in shape) + "]"


def _show(v) -> str:
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    v = np.asarray(v)
    return str(v.item()) if v.ndim == 0 and v.dtype != object else str(v)


# -- creating tables ---------------------------------------------------------------------------------


def _create_infer(ctx):
    """A resource whose `handle` is what it holds, (value dtype, value shape), as for variables."""
    value_shape = tuple(ctx.attr("value_shape", ()) or ())
    return [TensorSpec(dtypes.RESOURCE, (), handle=(ctx.attr("value_dtype"), value_shape))]


def table_name(node: str, container: str = "", shared_name: str = "") -> str:
    """The name of a (non-anonymous) table in the store: its shared_name, else its node's name."""
    return f"{container}/{shared_name or node}"


def _table_name(ctx) -> str:
    if ctx.op.startswith("Anonymous"):
        return f"{ctx.name}#{next(_ANONYMOUS)}"
    text = lambda v: v.decode() if isinstance(v, bytes) else v or ""  # noqa: E731
    return table_name(ctx.name, text(ctx.attr("container", "")), text(ctx.attr("shared_name", "")))


def restore_table(store, name: str, kind: str, key_dtype, value_dtype, value_shape, keys, values,
                  reserved=()) -> None:
    """Fill table `name` with a checkpoint's contents (what LookupTableExportV2 gave when it was
    saved), as the SavedModel's restore function would with LookupTableImportV2. A dense table
    saves its bucket array: `reserved` holds its (empty_key, deleted_key), and their buckets
    are dropped."""
    keys, values = np.asarray(keys), np.asarray(values)
    flat = keys.reshape(len(keys), -1)[:, 0] if keys.ndim > 1 else keys
    rows = values.reshape((len(flat),) + tuple(value_shape))
    table = Table(kind, key_dtype, value_dtype, tuple(value_shape))
    if reserved:
        table.empty_key, table.deleted_key = (np.asarray(r).item() for r in reserved)
    as_key = (lambda k: bytes(k)) if np.dtype(key_dtype) == STRING else (lambda k: k)
    table.entries = {as_key(k): v for k, v in zip(flat.tolist(), rows)
                     if not reserved or k not in (table.empty_key, table.deleted_key)}
    store.values[TABLE_PREFIX + name] = table


def _create_kernel(ctx, *reserved):
    name = _table_name(ctx)
    store = ctx.state.store.values
    key_dtype, value_dtype = ctx.attr("key_dtype"), ctx.attr("value_dtype")
    value_shape = ctx.out().handle[1]
    if TABLE_PREFIX + name not in store:
        table = Table(V1_FORMS.get(ctx.op, ctx.op), key_dtype, value_dtype, value_shape)
        if reserved:  # a dense table: empty_key, deleted_key (the v1 op has no deleted_key)
            keys = [_keys(ctx, np.asarray(r), key_dtype)[0] for r in reserved]
            if len(keys) == 2 and keys[0] == keys[1]:
                raise ctx.error("Empty and deleted keys must have different values", cls=InputError)
            table.empty_key, table.deleted_key = (keys + [None])[:2]
        store[TABLE_PREFIX + name] = table
    else:
        table = store[TABLE_PREFIX + name]
        if (np.dtype(table.key_dtype), np.dtype(table.value_dtype)) != (np.dtype(key_dtype), np.dtype(value_dtype)):
            raise ctx.error(f"table '{name}' exists with key/value types {dtypes.name(table.key_dtype)}/"
                            f"{dtypes.name(table.value_dtype)}, this op wants {dtypes.name(key_dtype)}/"
                            f"{dtypes.name(value_dtype)}", cls=InputError)
    return TableHandle(name)


SHARED = ("container", "shared_name", "use_node_name_sharing")
DENSE = ("value_shape", "initial_num_buckets", "max_load_factor")
# op -> its attributes besides key_dtype and value_dtype
CREATORS = {
    "HashTableV2": SHARED,
    "MutableHashTableV2": SHARED,
    "MutableHashTableOfTensorsV2": SHARED + ("value_shape",),
    "MutableDenseHashTableV2": SHARED + DENSE,
    "AnonymousHashTable": (),
    "AnonymousMutableHashTable": (),
    "AnonymousMutableHashTableOfTensors": ("value_shape",),
    "AnonymousMutableDenseHashTable": DENSE,
}


# -- using tables -------------------------------------------------------------------------------------


def _find_infer(ctx):
    """keys.shape + the table's value shape (from the handle; a scalar default means scalar values)."""
    table, keys, default = ctx.inputs
    out_dtype = ctx.attr("Tout", default.dtype)
    if table.handle is not None:
        value_shape = table.handle[1]
    elif default.shape == ():
        value_shape = ()
    else:  # inside a function body run on kernels: the handle is an argument
        return [TensorSpec(out_dtype, None)]
    return [TensorSpec(out_dtype, None if keys.shape is None else tuple(keys.shape) + tuple(value_shape))]


def _find_kernel(ctx, handle, keys, default):
    table = _table(ctx)
    if table.initializable and not table.initialized:
        raise ctx.error("Table not initialized.", cls=InputError)
    keys = np.asarray(keys)
    _check_dtype(ctx, "Key", keys.dtype, table.key_dtype)
    value_dtype = np.dtype(table.value_dtype)
    default = np.asarray(default, dtype=value_dtype)
    vshape, full = tuple(table.value_shape), tuple(keys.shape) + tuple(table.value_shape)
    if default.shape not in (vshape, full):
        allowed = _dims(vshape) + ("" if vshape == full else f" or {_dims(full)}")
        raise ctx.error(f"Expected shape {allowed} for default value, got {_dims(default.shape)}", cls=InputError)
    flat = _keys(ctx, keys, table.key_dtype)
    _check_not_reserved(ctx, table, flat)
    defaults = default.reshape((-1,) + vshape) if default.shape == full and full != vshape else None
    out = np.empty((len(flat),) + vshape, dtype=value_dtype)
    for i, k in enumerate(flat):
        v = table.entries.get(k)
        out[i] = v if v is not None else (defaults[i] if defaults is not None else default)
    return out.reshape(full)


def _import_kernel(ctx, handle, keys, values):
    table = _table(ctx)
    flat, rows = _rows(ctx, table, np.asarray(keys), values)
    if table.initializable:
        _fill(ctx, table, flat, rows)
        return []
    _check_not_reserved(ctx, table, flat)
    table.entries = dict(zip(flat, rows))
    return []


def _initialize_kernel(ctx, handle, keys, values):
    table = _table(ctx)
    if not table.initializable:
        raise ctx.error(f"{table.kind} is not an initializable table", cls=InputError)
    keys = np.asarray(keys)
    if np.shape(values)[:1] != keys.shape[:1] or keys.ndim != 1:
        raise ctx.error(f"keys and values must be vectors of one length, got shapes {list(keys.shape)} "
                        f"and {list(np.shape(values))}", cls=InputError)
    flat, rows = _rows(ctx, table, keys, values)
    _fill(ctx, table, flat, rows)
    return []


def _mutable(ctx, table: Table, what: str) -> None:
    if table.initializable:
        raise ctx.error(f"{what} not supported by InitializableLookupTable implementations", cls=InputError)


def _insert_kernel(ctx, handle, keys, values):
    table = _table(ctx)
    _mutable(ctx, table, "Insert")
    flat, rows = _rows(ctx, table, np.asarray(keys), values)
    _check_not_reserved(ctx, table, flat)
    table.entries.update(zip(flat, rows))
    return []


def _remove_kernel(ctx, handle, keys):
    table = _table(ctx)
    _mutable(ctx, table, "Remove")
    keys = np.asarray(keys)
    _check_dtype(ctx, "Key", keys.dtype, table.key_dtype)
    flat = _keys(ctx, keys, table.key_dtype)
    _check_not_reserved(ctx, table, flat)
    for k in flat:
        table.entries.pop(k, None)
    return []


def _size_kernel(ctx, handle):
    table = _table(ctx)
    return np.asarray(len(table.entries) if table.initialized or not table.initializable else 0, np.int64)


def _export_infer(ctx):
    return [TensorSpec(ctx.attr("Tkeys"), (None,)), TensorSpec(ctx.attr("Tvalues"), None)]


def _export_kernel(ctx, handle):
    table = _table(ctx)
    entries = table.entries if table.initialized or not table.initializable else {}
    keys = np.empty(len(entries), dtype=table.key_dtype)
    keys[:] = list(entries)
    values = np.empty((len(entries),) + tuple(table.value_shape), dtype=table.value_dtype)
    for i, v in enumerate(entries.values()):
        values[i] = v
    return [keys, values]


# -- initializing from a text file -----------------------------------------------------------------------

WHOLE_LINE, LINE_NUMBER = -2, -1


def _text_file_kernel(ctx, handle, filename):
    table = _table(ctx)
    if not table.initializable:
        raise ctx.error(f"{table.kind} is not an initializable table", cls=InputError)
    if np.ndim(filename) != 0:
        raise ctx.error(f"filename must be a scalar, got shape {list(np.shape(filename))}", cls=InputError)
    path = _to_bytes(ctx, np.asarray(filename, dtype=object).item()).decode("utf-8", "surrogateescape")
    key_index, value_index = int(ctx.attr("key_index")), int(ctx.attr("value_index"))
    vocab_size, offset = int(ctx.attr("vocab_size", -1)), int(ctx.attr("offset", 0))
    delimiter = ctx.attr("delimiter", "\t")
    delimiter = delimiter.encode() if isinstance(delimiter, str) else bytes(delimiter)
    if table.initialized:
        return []
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ctx.error(f"{path}; {e.strerror}", cls=InputError) from None
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the newline ending the last line
    keys, values, position = [], [], 0
    for number, line in enumerate(lines):
        if 0 <= vocab_size <= number:
            break
        position += len(line) + 1
        line = line[:-1] if line.endswith(b"\r") else line
        if not line:
            raise ctx.error(f"Invalid content in {path}: empty line found at position {position}.",
                            cls=InputError)
        fields = line.split(delimiter)
        keys.append(_field(ctx, path, line, fields, number, key_index, offset, table.key_dtype))
        values.append(_field(ctx, path, line, fields, number, value_index, offset, table.value_dtype))
    if vocab_size > len(keys):
        raise ctx.error(f"Invalid vocab_size in {path}: expected {vocab_size} but got {len(keys)}", cls=InputError)
    rows = [np.asarray(v, dtype=table.value_dtype) for v in values]
    _fill(ctx, table, keys, rows)
    return []


def _field(ctx, path, line: bytes, fields: list, number: int, index: int, offset: int, dtype):
    if index == WHOLE_LINE:
        text = line
    elif index == LINE_NUMBER:
        return number + offset
    else:
        if index >= len(fields):
            raise ctx.error(f"Invalid number of columns in {path} line {number} "
                            f"({line.decode('utf-8', 'replace')}) : expected at least {index + 1} got "
                            f"{len(fields)}", cls=InputError)
        text = fields[index]
    dtype = np.dtype(dtype)
    if dtype == STRING:
        return text
    try:
        return int(text) if dtype.kind in "iu" else float(text)
    except ValueError:
        kind = dtypes.name(dtype) if dtype.kind in "iu" else "float" if dtype == np.float32 else "double"
        raise ctx.error(f"Field {text.decode('utf-8', 'replace')} in line {number} is not a valid {kind}.",
                        cls=InputError) from None


# -- registration ------------------------------------------------------------------------------------

# The TF1 forms (ref-typed string handles, graphs from before TF 1.4): the same rules; a table
# they make has its V2 kind.
V1_FORMS = {"HashTable": "HashTableV2", "MutableHashTable": "MutableHashTableV2",
            "MutableHashTableOfTensors": "MutableHashTableOfTensorsV2",
            "MutableDenseHashTable": "MutableDenseHashTableV2"}
V1_USES = {"LookupTableFind": "LookupTableFindV2", "LookupTableInsert": "LookupTableInsertV2",
           "LookupTableSize": "LookupTableSizeV2", "LookupTableExport": "LookupTableExportV2",
           "LookupTableImport": "LookupTableImportV2", "InitializeTable": "InitializeTableV2",
           "InitializeTableFromTextFile": "InitializeTableFromTextFileV2"}
CREATORS.update({v1: CREATORS[v2] for v1, v2 in V1_FORMS.items()})

for _op, _extra in CREATORS.items():
    register(_op, infer=_create_infer, kernel=_create_kernel, stateful=True,
             attrs=("key_dtype", "value_dtype") + _extra, dtype_attrs=("key_dtype", "value_dtype"))

# op -> (infer, kernel, attrs, output_args)
TABLE_USES = {
    "LookupTableFindV2": (_find_infer, _find_kernel, ("Tin", "Tout"), ()),
    "LookupTableImportV2": (lambda ctx: [], _import_kernel, ("Tin", "Tout"), ()),
    "LookupTableInsertV2": (lambda ctx: [], _insert_kernel, ("Tin", "Tout"), ()),
    "LookupTableRemoveV2": (lambda ctx: [], _remove_kernel, ("Tin",), ()),
    "LookupTableSizeV2": (lambda ctx: [TensorSpec(np.dtype(np.int64), ())], _size_kernel, (), ()),
    "LookupTableExportV2": (_export_infer, _export_kernel, ("Tkeys", "Tvalues"), ("keys", "values")),
    "InitializeTableV2": (lambda ctx: [], _initialize_kernel, ("Tkey", "Tval"), ()),
    "InitializeTableFromTextFileV2": (lambda ctx: [], _text_file_kernel,
                                      ("key_index", "value_index", "vocab_size", "delimiter", "offset"), ()),
}

TABLE_USES.update({v1: TABLE_USES[v2] for v1, v2 in V1_USES.items()})

for _op, (_infer, _kernel, _attrs, _outputs) in TABLE_USES.items():
    register(_op, infer=_infer, kernel=_kernel, attrs=_attrs, stateful=True, output_args=_outputs)

# Every op that creates or touches a table: never a clustering candidate ("lookup_table").
TABLE_OPS = frozenset(CREATORS) | frozenset(TABLE_USES)
