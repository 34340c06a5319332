"""TensorFlow's GraphDef schema, wire- and text-compatible, built at import time.

Why a table instead of generated `_pb2` files: protoc's generated code is tied to
the protobuf runtime version that made it, and TensorFlow itself is never a
dependency. The messages below carry TensorFlow's package name (`tensorflow`),
message names, field names and field numbers, so `.pb` bytes and `.pbtxt` text
written by TensorFlow parse unchanged, and what we write TensorFlow can read.

Only the messages a GraphDef can contain are described. A field that is not
listed here is an error in text form and kept as an unknown field in binary form.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    "int32": _F.TYPE_INT32, "int64": _F.TYPE_INT64, "uint32": _F.TYPE_UINT32,
    "uint64": _F.TYPE_UINT64, "fixed32": _F.TYPE_FIXED32, "fixed64": _F.TYPE_FIXED64, "float": _F.TYPE_FLOAT,
    "double": _F.TYPE_DOUBLE, "bool": _F.TYPE_BOOL, "string": _F.TYPE_STRING,
    "bytes": _F.TYPE_BYTES,
}

# DataType and FullTypeId values, as tensorflow/core/framework/{types,full_type}.proto number them.
_DTYPES = [
    "INVALID", "FLOAT", "DOUBLE", "INT32", "UINT8", "INT16", "INT8", "STRING", "COMPLEX64",
    "INT64", "BOOL", "QINT8", "QUINT8", "QINT32", "BFLOAT16", "QINT16", "QUINT16", "UINT16",
    "COMPLEX128", "HALF", "RESOURCE", "VARIANT", "UINT32", "UINT64", "FLOAT8_E5M2",
    "FLOAT8_E4M3FN", "FLOAT8_E4M3FNUZ", "FLOAT8_E4M3B11FNUZ", "FLOAT8_E5M2FNUZ", "INT4", "UINT4",
    "INT2", "UINT2",
]
DATA_TYPE_VALUES = {f"DT_{n}": i for i, n in enumerate(_DTYPES)}
DATA_TYPE_VALUES.update({f"DT_{n}_REF": i + 100 for i, n in enumerate(_DTYPES) if i})

FULL_TYPE_VALUES = {
    "TFT_UNSET": 0, "TFT_VAR": 1, "TFT_ANY": 2, "TFT_PRODUCT": 3, "TFT_NAMED": 4,
    "TFT_FOR_EACH": 20, "TFT_CALLABLE": 100, "TFT_TENSOR": 1000, "TFT_ARRAY": 1001,
    "TFT_OPTIONAL": 1002, "TFT_LITERAL": 1003, "TFT_ENCODED": 1004, "TFT_SHAPE_TENSOR": 1005,
    "TFT_BOOL": 200, "TFT_UINT8": 201, "TFT_UINT16": 202, "TFT_UINT32": 203, "TFT_UINT64": 204,
    "TFT_INT8": 205, "TFT_INT16": 206, "TFT_INT32": 207, "TFT_INT64": 208, "TFT_HALF": 209,
    "TFT_FLOAT": 210, "TFT_DOUBLE": 211, "TFT_COMPLEX64": 212, "TFT_COMPLEX128": 213,
    "TFT_STRING": 214, "TFT_BFLOAT16": 215, "TFT_DATASET": 10102, "TFT_RAGGED": 10103,
    "TFT_ITERATOR": 10104, "TFT_MUTEX_LOCK": 10202, "TFT_LEGACY_VARIANT": 10203,
}

# message name -> [(field name, number, type, label)], label: "" optional, "*" repeated,
# "map<K,V>" a map field. Types name a scalar, an enum ("DataType", "FullTypeId") or a message.
# Dotted names are nested messages.
_MESSAGES: dict[str, list[tuple]] = {
    "TensorShapeProto.Dim": [("size", 1, "int64"), ("name", 2, "string")],
    "TensorShapeProto": [("dim", 2, "TensorShapeProto.Dim", "*"), ("unknown_rank", 3, "bool")],
    "ResourceHandleProto.DtypeAndShape": [("dtype", 1, "DataType"), ("shape", 2, "TensorShapeProto")],
    "ResourceHandleProto": [
        ("device", 1, "string"), ("container", 2, "string"), ("name", 3, "string"),
        ("hash_code", 4, "uint64"), ("maybe_type_name", 5, "string"),
        ("dtypes_and_shapes", 6, "ResourceHandleProto.DtypeAndShape", "*"),
    ],
    "VariantTensorDataProto": [
        ("type_name", 1, "string"), ("metadata", 2, "bytes"), ("tensors", 3, "TensorProto", "*"),
    ],
    "TensorProto": [
        ("dtype", 1, "DataType"), ("tensor_shape", 2, "TensorShapeProto"),
        ("version_number", 3, "int32"), ("tensor_content", 4, "bytes"),
        ("half_val", 13, "int32", "*"), ("float_val", 5, "float", "*"),
        ("double_val", 6, "double", "*"), ("int_val", 7, "int32", "*"),
        ("string_val", 8, "bytes", "*"), ("scomplex_val", 9, "float", "*"),
        ("int64_val", 10, "int64", "*"), ("bool_val", 11, "bool", "*"),
        ("dcomplex_val", 12, "double", "*"),
        ("resource_handle_val", 14, "ResourceHandleProto", "*"),
        ("variant_val", 15, "VariantTensorDataProto", "*"),
        ("uint32_val", 16, "uint32", "*"), ("uint64_val", 17, "uint64", "*"),
        ("float8_val", 18, "bytes"),
    ],
    "AttrValue.ListValue": [
        ("s", 2, "bytes", "*"), ("i", 3, "int64", "*"), ("f", 4, "float", "*"),
        ("b", 5, "bool", "*"), ("type", 6, "DataType", "*"), ("shape", 7, "TensorShapeProto", "*"),
        ("tensor", 8, "TensorProto", "*"), ("func", 9, "NameAttrList", "*"),
    ],
    # The fields of AttrValue form the oneof `value` (see _ONEOFS).
    "AttrValue": [
        ("s", 2, "bytes"), ("i", 3, "int64"), ("f", 4, "float"), ("b", 5, "bool"),
        ("type", 6, "DataType"), ("shape", 7, "TensorShapeProto"), ("tensor", 8, "TensorProto"),
        ("list", 1, "AttrValue.ListValue"), ("func", 10, "NameAttrList"),
        ("placeholder", 9, "string"),
    ],
    "NameAttrList": [("name", 1, "string"), ("attr", 2, "AttrValue", "map<string>")],
    "FullTypeDef": [
        ("type_id", 1, "FullTypeId"), ("args", 2, "FullTypeDef", "*"),
        ("s", 3, "string"), ("i", 4, "int64"),
    ],
    "NodeDef.ExperimentalDebugInfo": [
        ("original_node_names", 1, "string", "*"), ("original_func_names", 2, "string", "*"),
    ],
    "NodeDef": [
        ("name", 1, "string"), ("op", 2, "string"), ("input", 3, "string", "*"),
        ("device", 4, "string"), ("attr", 5, "AttrValue", "map<string>"),
        ("experimental_debug_info", 6, "NodeDef.ExperimentalDebugInfo"),
        ("experimental_type", 7, "FullTypeDef"),
    ],
    "VersionDef": [
        ("producer", 1, "int32"), ("min_consumer", 2, "int32"), ("bad_consumers", 3, "int32", "*"),
    ],
    "OpDef.ArgDef": [
        ("name", 1, "string"), ("description", 2, "string"), ("type", 3, "DataType"),
        ("type_attr", 4, "string"), ("number_attr", 5, "string"), ("type_list_attr", 6, "string"),
        ("handle_data", 7, "ResourceHandleProto.DtypeAndShape", "*"), ("is_ref", 16, "bool"),
        ("experimental_full_type", 17, "FullTypeDef"),
    ],
    "OpDef.AttrDef": [
        ("name", 1, "string"), ("type", 2, "string"), ("default_value", 3, "AttrValue"),
        ("description", 4, "string"), ("has_minimum", 5, "bool"), ("minimum", 6, "int64"),
        ("allowed_values", 7, "AttrValue"),
    ],
    "OpDeprecation": [("version", 1, "int32"), ("explanation", 2, "string")],
    "OpDef": [
        ("name", 1, "string"), ("input_arg", 2, "OpDef.ArgDef", "*"),
        ("output_arg", 3, "OpDef.ArgDef", "*"), ("control_output", 20, "string", "*"),
        ("attr", 4, "OpDef.AttrDef", "*"), ("deprecation", 8, "OpDeprecation"),
        ("summary", 5, "string"), ("description", 6, "string"), ("is_commutative", 18, "bool"),
        ("is_aggregate", 16, "bool"), ("is_stateful", 17, "bool"),
        ("allows_uninitialized_input", 19, "bool"), ("is_distributed_communication", 21, "bool"),
    ],
    "FunctionDef.ArgAttrs": [("attr", 1, "AttrValue", "map<string>")],
    "FunctionDef": [
        ("signature", 1, "OpDef"), ("attr", 5, "AttrValue", "map<string>"),
        ("arg_attr", 7, "FunctionDef.ArgAttrs", "map<uint32>"),
        ("resource_arg_unique_id", 8, "uint32", "map<uint32>"),
        ("node_def", 3, "NodeDef", "*"), ("ret", 4, "string", "map<string>"),
        ("control_ret", 6, "string", "map<string>"),
    ],
    "GradientDef": [("function_name", 1, "string"), ("gradient_func", 2, "string")],
    "RegisteredGradient": [("gradient_func", 1, "string"), ("registered_op_type", 2, "string")],
    "FunctionDefLibrary": [
        ("function", 1, "FunctionDef", "*"), ("gradient", 2, "GradientDef", "*"),
        ("registered_gradients", 3, "RegisteredGradient", "*"),
    ],
    "GraphDebugInfo.FileLineCol": [
        ("file_index", 1, "int32"), ("line", 2, "int32"), ("col", 3, "int32"),
        ("func", 4, "string"), ("code", 5, "string"),
    ],
    "GraphDebugInfo.StackTrace": [
        ("file_line_cols", 1, "GraphDebugInfo.FileLineCol", "*"), ("frame_id", 2, "fixed64", "*"),
    ],
    "GraphDebugInfo": [
        ("files", 1, "string", "*"),
        ("frames_by_id", 4, "GraphDebugInfo.FileLineCol", "map<fixed64>"),
        ("traces_by_id", 6, "GraphDebugInfo.StackTrace", "map<fixed64>"),
        ("traces", 2, "GraphDebugInfo.StackTrace", "map<string>"),
        ("name_to_trace_id", 5, "fixed64", "map<string>"),
    ],
    "GraphDef": [
        ("node", 1, "NodeDef", "*"), ("versions", 4, "VersionDef"), ("version", 3, "int32"),
        ("library", 2, "FunctionDefLibrary"), ("debug_info", 5, "GraphDebugInfo"),
    ],
}
# message -> (oneof name, its member fields; None: every field)
_ONEOFS = {"AttrValue": ("value", None), "FullTypeDef": ("attr", ("s", "i"))}
_ENUMS = {"DataType": DATA_TYPE_VALUES, "FullTypeId": FULL_TYPE_VALUES}


def _field(msg: descriptor_pb2.DescriptorProto, name: str, number: int, type_: str,
           label: str = "") -> None:
    """Add one field; `type_` names a scalar, an enum known to _ENUM_NAMES or a message."""
    if label.startswith("map<"):
        key_type = label[4:-1]
        entry = msg.nested_type.add(name="".join(p.title() for p in name.split("_")) + "Entry")
        entry.options.map_entry = True
        _field(entry, "key", 1, key_type)
        _field(entry, "value", 2, type_)
        f = msg.field.add(name=name, number=number, label=_F.LABEL_REPEATED, type=_F.TYPE_MESSAGE,
                          type_name=f".tensorflow.{_full_name(msg)}.{entry.name}")
        return
    f = msg.field.add(name=name, number=number,
                      label=_F.LABEL_REPEATED if label == "*" else _F.LABEL_OPTIONAL)
    if type_ in _SCALARS:
        f.type = _SCALARS[type_]
    elif type_ in _ENUM_NAMES:
        f.type, f.type_name = _F.TYPE_ENUM, f".tensorflow.{type_}"
    else:
        f.type, f.type_name = _F.TYPE_MESSAGE, f".tensorflow.{type_}"


_PARENTS: dict[int, str] = {}


def _full_name(msg: descriptor_pb2.DescriptorProto) -> str:
    return _PARENTS[id(msg)]


def _build_file(file_name: str, messages: dict, oneofs: dict, enums: dict,
                dependencies=()) -> descriptor_pb2.FileDescriptorProto:
    fdp = descriptor_pb2.FileDescriptorProto(
        name=file_name, package="tensorflow", syntax="proto3", dependency=list(dependencies))
    for enum_name, values in enums.items():
        e = fdp.enum_type.add(name=enum_name)
        for n, v in values.items():
            e.value.add(name=n, number=v)
        _ENUM_NAMES.add(enum_name)
    protos: dict[str, descriptor_pb2.DescriptorProto] = {}
    for full in messages:  # parents are listed after their nested types; create all first
        parts = full.split(".")
        for i in range(1, len(parts) + 1):
            key = ".".join(parts[:i])
            if key in protos:
                continue
            parent = protos.get(".".join(parts[:i - 1]))
            m = (parent.nested_type if parent else fdp.message_type).add(name=parts[i - 1])
            protos[key] = m
            _PARENTS[id(m)] = key
    for full, fields in messages.items():
        msg = protos[full]
        oneof, members = oneofs.get(full, (None, None))
        if oneof:
            msg.oneof_decl.add(name=oneof)
        for spec in fields:
            _field(msg, *spec)
            if oneof and (members is None or spec[0] in members):
                msg.field[-1].oneof_index = 0
    return fdp


_ENUM_NAMES: set[str] = set()
GRAPH_FILE = "hlobridge/tensorflow_graph.proto"
_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_build_file(GRAPH_FILE, _MESSAGES, _ONEOFS, _ENUMS))


def add_file(file_name: str, messages: dict, oneofs: dict | None = None, enums: dict | None = None) -> None:
    """Add more of TensorFlow's messages, in the same table form, to the same pool: their fields
    may name the GraphDef schema's messages and enums (DataType, TensorShapeProto, ...). The
    SavedModel and TensorBundle schemas are carried this way (saved_model_schema.py,
    bundle_schema.py)."""
    _POOL.Add(_build_file(file_name, messages, oneofs or {}, enums or {}, [GRAPH_FILE]))


def message_class(name: str):
    """The generated class of message `tensorflow.<name>` (dotted for nested messages)."""
    return message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"tensorflow.{name}"))


_cls = message_class


GraphDef = _cls("GraphDef")
NodeDef = _cls("NodeDef")
AttrValue = _cls("AttrValue")
TensorProto = _cls("TensorProto")
TensorShapeProto = _cls("TensorShapeProto")
FunctionDef = _cls("FunctionDef")
FunctionDefLibrary = _cls("FunctionDefLibrary")
NameAttrList = _cls("NameAttrList")
