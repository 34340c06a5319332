"""TensorFlow's SavedModel schema: SavedModel, MetaGraphDef, SignatureDef, SaverDef,
SavedObjectGraph, and the TrackableObjectGraph a TF2 checkpoint stores about its objects.

From tensorflow/core/protobuf/{saved_model,meta_graph,saver,saved_object_graph,
trackable_object_graph}.proto, carried as tables the way schema.py carries the GraphDef
schema. Only the fields hlobridge reads are listed; the rest (function specs, structured
values, type specs) stay unknown fields of the binary message and are never needed:
signatures name their tensors in the SignatureDef, and variables are bound through node ids.
"""

from __future__ import annotations

from .schema import add_file, message_class

_REF = "TrackableObjectGraph.TrackableObject.ObjectReference"
_SLOT = "TrackableObjectGraph.TrackableObject.SlotVariableReference"

_MESSAGES = {
    # google.protobuf.Any, wire-compatible, kept in our package
    "AnyProto": [("type_url", 1, "string"), ("value", 2, "bytes")],
    "OpList": [("op", 1, "OpDef", "*")],
    "MetaGraphDef.MetaInfoDef": [
        ("meta_graph_version", 1, "string"), ("stripped_op_list", 2, "OpList"), ("any_info", 3, "AnyProto"),
        ("tags", 4, "string", "*"), ("tensorflow_version", 5, "string"),
        ("tensorflow_git_version", 6, "string"), ("stripped_default_attrs", 7, "bool"),
        ("function_aliases", 8, "string", "map<string>"),
    ],
    "CollectionDef.NodeList": [("value", 1, "string", "*")],
    "CollectionDef.BytesList": [("value", 1, "bytes", "*")],
    "CollectionDef.Int64List": [("value", 1, "int64", "*")],
    "CollectionDef.FloatList": [("value", 1, "float", "*")],
    "CollectionDef.AnyList": [("value", 1, "AnyProto", "*")],
    "CollectionDef": [
        ("node_list", 1, "CollectionDef.NodeList"), ("bytes_list", 2, "CollectionDef.BytesList"),
        ("int64_list", 3, "CollectionDef.Int64List"), ("float_list", 4, "CollectionDef.FloatList"),
        ("any_list", 5, "CollectionDef.AnyList"),
    ],
    "TensorInfo.CooSparse": [
        ("values_tensor_name", 1, "string"), ("indices_tensor_name", 2, "string"),
        ("dense_shape_tensor_name", 3, "string"),
    ],
    "TensorInfo": [
        ("name", 1, "string"), ("coo_sparse", 4, "TensorInfo.CooSparse"),
        ("dtype", 2, "DataType"), ("tensor_shape", 3, "TensorShapeProto"),
    ],
    "SignatureDef": [
        ("inputs", 1, "TensorInfo", "map<string>"), ("outputs", 2, "TensorInfo", "map<string>"),
        ("method_name", 3, "string"), ("defaults", 4, "TensorProto", "map<string>"),
    ],
    "AssetFileDef": [("tensor_info", 1, "TensorInfo"), ("filename", 2, "string")],
    "SaverDef": [
        ("filename_tensor_name", 1, "string"), ("save_tensor_name", 2, "string"),
        ("restore_op_name", 3, "string"), ("max_to_keep", 4, "int32"), ("sharded", 5, "bool"),
        ("keep_checkpoint_every_n_hours", 6, "float"), ("version", 7, "int32"),
    ],
    _REF: [("node_id", 1, "int32"), ("local_name", 2, "string")],
    _SLOT: [("original_variable_node_id", 1, "int32"), ("slot_name", 2, "string"),
            ("slot_variable_node_id", 3, "int32")],
    "TrackableObjectGraph.TrackableObject.SerializedTensor": [
        ("name", 1, "string"), ("full_name", 2, "string"), ("checkpoint_key", 3, "string"),
    ],
    "TrackableObjectGraph.TrackableObject": [
        ("children", 1, _REF, "*"),
        ("attributes", 2, "TrackableObjectGraph.TrackableObject.SerializedTensor", "*"),
        ("slot_variables", 3, _SLOT, "*"),
    ],
    "TrackableObjectGraph": [("nodes", 1, "TrackableObjectGraph.TrackableObject", "*")],
    "SavedUserObject": [("identifier", 1, "string"), ("version", 2, "VersionDef"), ("metadata", 3, "string")],
    "SavedAsset": [("asset_file_def_index", 1, "int32")],
    "SavedFunction": [("concrete_functions", 1, "string", "*")],
    "SavedBareConcreteFunction": [("concrete_function_name", 1, "string"),
                                  ("argument_keywords", 2, "string", "*"),
                                  ("allowed_positional_arguments", 3, "int64")],
    "SavedConstant": [("operation", 1, "string")],
    "SavedVariable": [
        ("dtype", 1, "DataType"), ("shape", 2, "TensorShapeProto"), ("trainable", 3, "bool"),
        ("synchronization", 4, "int32"), ("aggregation", 5, "int32"), ("name", 6, "string"),
        ("device", 7, "string"),
    ],
    "SavedResource": [("device", 1, "string")],
    "CapturedTensor": [("name", 1, "string"), ("concrete_function", 2, "string")],
    "SavedObject": [
        ("children", 1, _REF, "*"), ("dependencies", 15, _REF, "*"), ("slot_variables", 3, _SLOT, "*"),
        ("user_object", 4, "SavedUserObject"), ("asset", 5, "SavedAsset"), ("function", 6, "SavedFunction"),
        ("variable", 7, "SavedVariable"), ("bare_concrete_function", 8, "SavedBareConcreteFunction"),
        ("constant", 9, "SavedConstant"), ("resource", 10, "SavedResource"),
        ("captured_tensor", 12, "CapturedTensor"), ("registered_name", 13, "string"),
        ("registered_saver", 16, "string"),
    ],
    "SavedConcreteFunction": [("bound_inputs", 2, "int32", "*")],
    "SavedObjectGraph": [
        ("nodes", 1, "SavedObject", "*"),
        ("concrete_functions", 2, "SavedConcreteFunction", "map<string>"),
    ],
    "MetaGraphDef": [
        ("meta_info_def", 1, "MetaGraphDef.MetaInfoDef"), ("graph_def", 2, "GraphDef"),
        ("saver_def", 3, "SaverDef"), ("collection_def", 4, "CollectionDef", "map<string>"),
        ("signature_def", 5, "SignatureDef", "map<string>"), ("asset_file_def", 6, "AssetFileDef", "*"),
        ("object_graph_def", 7, "SavedObjectGraph"),
    ],
    "SavedModel": [("saved_model_schema_version", 1, "int64"), ("meta_graphs", 2, "MetaGraphDef", "*")],
}
_KINDS = ("user_object", "asset", "function", "variable", "bare_concrete_function", "constant",
          "resource", "captured_tensor")
_ONEOFS = {
    "CollectionDef": ("kind", None),
    "TensorInfo": ("encoding", ("name", "coo_sparse")),
    "SavedObject": ("kind", _KINDS),
}

add_file("hlobridge/tensorflow_saved_model.proto", _MESSAGES, _ONEOFS)

SavedModel = message_class("SavedModel")
MetaGraphDef = message_class("MetaGraphDef")
SignatureDef = message_class("SignatureDef")
TrackableObjectGraph = message_class("TrackableObjectGraph")
