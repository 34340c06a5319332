"""Build GraphDefs from Python: for tests, examples, and graphs made without TensorFlow.

    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (None, 3))
    w = b.const("w", np.ones((3, 2), np.float32))
    y = b.op("MatMul", [x, w], name="y", T=np.float32)
    graph = b.graph()

Attribute values are encoded by Python type: bool, int, float, str/bytes, a numpy
dtype or scalar type, an ndarray (a tensor), `Shape(dims)`, or a list of those.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import dtypes
from . import tensor_proto
from .graph import FuncAttr, Graph
from .load import graph_from_graphdef
from .proto import schema


@dataclass(frozen=True)
class Shape:
    """A shape attribute value; None dims are unknown, dims=None is unknown rank."""

    dims: tuple | None


def _is_dtype(value) -> bool:
    if isinstance(value, np.dtype):
        return True
    return isinstance(value, type) and issubclass(value, np.generic)


def encode_attr(value) -> object:
    """A Python value -> AttrValue proto, chosen by its type (see the module docstring);
    lists and tuples encode element by element."""
    attr = schema.AttrValue()
    if isinstance(value, bool):
        attr.b = value
    elif isinstance(value, (int, np.integer)):
        attr.i = int(value)
    elif isinstance(value, (float, np.floating)):
        attr.f = float(value)
    elif isinstance(value, str) and value not in (dtypes.RESOURCE, dtypes.VARIANT):
        attr.s = value.encode()
    elif isinstance(value, bytes):
        attr.s = value
    elif _is_dtype(value) or (isinstance(value, str) and value in (dtypes.RESOURCE, dtypes.VARIANT)):
        attr.type = dtypes.to_enum(value)
    elif isinstance(value, Shape):
        attr.shape.CopyFrom(shape_proto(value.dims))
    elif isinstance(value, np.ndarray):
        attr.tensor.CopyFrom(tensor_proto.from_numpy(value))
    elif isinstance(value, FuncAttr):
        attr.func.name = value.name
    elif isinstance(value, (list, tuple)):
        attr.list.SetInParent()
        for item in value:
            enc = encode_attr(item)
            kind = enc.WhichOneof("value")
            field = getattr(attr.list, kind)
            if kind in ("shape", "tensor", "func"):
                field.add().CopyFrom(getattr(enc, kind))
            else:
                field.append(getattr(enc, kind))
    else:
        raise TypeError(f"cannot encode attribute value {value!r}")
    return attr


def shape_proto(dims):
    """dims -> TensorShapeProto: None dims are -1 (unknown), dims=None is an unknown rank."""
    proto = schema.TensorShapeProto()
    if dims is None:
        proto.unknown_rank = True
    else:
        for d in dims:
            proto.dim.add(size=-1 if d is None else int(d))
    return proto


class GraphBuilder:
    """Builds a GraphDef node by node, making names unique; `graph()` loads it as a Graph."""

    def __init__(self):
        self.graph_def = schema.GraphDef()
        self.graph_def.versions.producer = 1994  # what TF 2.21 writes
        self._names: dict[str, int] = {}

    def _unique(self, name: str) -> str:
        if name not in self._names:
            self._names[name] = 0
            return name
        self._names[name] += 1
        return self._unique(f"{name}_{self._names[name]}")

    def op(self, op: str, inputs=(), *, name: str | None = None, control_inputs=(),
           device: str = "", num_outputs: int = 1, **attrs):
        """Add a node; returns its output name ("name:0"), or a list of names if num_outputs > 1."""
        node = self.graph_def.node.add(name=self._unique(name or op), op=op, device=device)
        node.input.extend(str(i) for i in inputs)
        node.input.extend(f"^{c.split(':')[0]}" for c in control_inputs)
        for k, v in attrs.items():
            node.attr[k].CopyFrom(encode_attr(v))
        if num_outputs == 1:
            return f"{node.name}:0"
        return [f"{node.name}:{i}" for i in range(num_outputs)]

    def placeholder(self, name: str, dtype, shape=None) -> str:
        """A Placeholder of `dtype` and `shape` (None dims unknown, None rank unknown); returns "name:0"."""
        return self.op("Placeholder", name=name, dtype=np.dtype(dtype), shape=Shape(shape))

    def const(self, name: str, value, dtype=None) -> str:
        """A Const holding `value` (converted to `dtype` if given); returns "name:0"."""
        value = np.asarray(value, dtype=dtype)
        return self.op("Const", name=name, dtype=value.dtype, value=value)

    def function(self, name: str, args: dict, build, stateful: bool = False) -> FuncAttr:
        """Add a FunctionDef to the library: `build(body, *arg_names)` adds the body's nodes to
        a fresh builder and returns its results as [(tensor, dtype)]. Body tensors are written
        as TensorFlow writes them in FunctionDefs ("node:output:0")."""
        body = GraphBuilder()
        results = build(body, *args)
        fdef = self.graph_def.library.function.add()
        fdef.signature.name = name
        fdef.signature.is_stateful = stateful
        for arg, dtype in args.items():
            fdef.signature.input_arg.add(name=arg, type=dtypes.to_enum(np.dtype(dtype)))

        def ref(tensor: str) -> str:
            node, _, index = tensor.partition(":")
            return tensor if node in args else f"{node}:output:{index or 0}"
        for nd in body.graph_def.node:
            new = fdef.node_def.add()
            new.CopyFrom(nd)
            del new.input[:]
            new.input.extend(i if i.startswith("^") else ref(i) for i in nd.input)
        for i, (tensor, dtype) in enumerate(results):
            fdef.signature.output_arg.add(name=f"output_{i}", type=dtypes.to_enum(np.dtype(dtype)))
            fdef.ret[f"output_{i}"] = ref(tensor)
        return FuncAttr(name, {})

    def graph(self) -> Graph:
        """The GraphDef built so far, loaded as a Graph (its source named "<GraphBuilder>")."""
        return graph_from_graphdef(self.graph_def, "<GraphBuilder>")
