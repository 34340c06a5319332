"""TF1 TensorArrays and stacks: what `tf.compat.v1.nn.dynamic_rnn`, `raw_rnn` and a
`tf.TensorArray` in a control-flow-v1 graph write, and the stacks that TF1's `tf.gradients`
of a v1 while loop pushes the forward values onto.

A TensorArray is a resource handle plus a float "flow" tensor (tensor_array_ops.cc): every op
takes the handle and the flow, writes return a new flow, and the flow's edges order the ops;
the array itself is mutable state. On the reference path the handle evaluates to the array
itself (a `TensorArrayResource`, like a VariableHandle naming a variable), so an array made in
one step lives for that step, is shared by everything holding the handle (a While body gets it
as a loop invariant), and is gone when the step's values are dropped, as TF's per-step
resources are. The flow is TF's scalar 0.0.

Semantics follow TensorFlow 2.21's TensorArray (tensor_array.cc):
- a fixed-size array refuses writes past its size; a `dynamic_size` one grows;
- writing an index twice is an error, except in a gradient array, where writes add up
  (`multiple_writes_aggregate`); writing an index already read is an error;
- reading an index never written gives zeros of the element shape (a gradient array: of the
  shape its entry was given, or the element shape), which must then be fully defined;
- `clear_after_read` (default true) makes a second read of an index an error;
- `identical_element_shapes` lets the first write fix a partially known element shape;
  every write must fit the element shape;
- TensorArrayGradV3 creates, once per `source`, the gradient array of a forward array (same
  size, dtype and element shape; aggregating writes; fixed size) and returns it on later
  calls with that source;
- a closed array refuses everything.

Stacks (stack_ops.cc): StackV2 makes an empty stack of `elem_type` (max_size < 0: unbounded),
StackPushV2 pushes and returns its input, StackPopV2 pops, StackCloseV2 closes.

Compiled, as XLA does it (tf2xla/kernels/tensor_array_ops.cc), an array is a buffer
[size, *element_shape] inside one cluster; its size must be a compile-time constant
(TensorArrayV3's size is a constant input) and its element shape known at compile time, from
the attribute or from what is written (a While body's first write, as the loop's fixpoint
joins it). hlobridge carries the buffer on the *flow*: a flow's spec is a TensorList spec
(list_values.ListInfo: capacity = size), so loops, conditionals, shape joins and
mark_for_compilation's variant rule treat a flow as a list, and in IR it is a ListValue; the
handle is no IR value at all. That is value semantics where TF mutates: it holds for what TF's
Python TensorArray writes (every op takes the latest flow). Like XLA's, compiled arrays do not
check TF's errors (a second write replaces, a second read of a cleared index reads it again).
Arrays that stay on the kernels: a dynamic_size array or a size not known at compile time
(`list_size_unknown`), a Split of unequal lengths, and every array that meets a gradient array
or a stack (those ops: `tensor_array`; the arrays they touch: `variant_boundary`): gradient
arrays are shared by `source` and aggregate writes, so their flows stay TF's float scalars and
their ops kernel-only, as are stacks (between two loops) and the V2 ops (string handles).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ... import dtypes
from ...errors import InputError
from ...spec import TensorSpec
from .values import ListInfo, ListValue, as_buffer, info_of, list_spec, merge_shapes
from ..registry import REGISTRY, register

_FLOAT = np.dtype(np.float32)
_IDS = itertools.count()


def _show(shape) -> str:
    return "<unknown>" if shape is None else "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def _fully_defined(shape) -> bool:
    return shape is not None and all(d is not None for d in shape)


@dataclass(frozen=True)
class TensorArrayInfo:
    """What shape inference knows of an array: the `handle` of its resource spec."""

    dtype: object
    element_shape: tuple | None
    grad: bool = False  # a gradient array's: its flows stay plain floats (see _flow_out)


@dataclass
class _Entry:
    """One index of an array (TF's TensorAndState): its value, or the shape of its zeros."""

    value: np.ndarray | None = None
    shape: tuple | None = None
    written: bool = False
    read: bool = False
    cleared: bool = False


@dataclass(eq=False)
class TensorArrayResource:
    """A TensorArray on the reference path; the value its handle evaluates to."""

    name: str
    dtype: object
    element_shape: tuple | None
    entries: list
    dynamic_size: bool = False
    clear_after_read: bool = True
    identical_element_shapes: bool = False
    is_grad: bool = False
    closed: bool = False
    grads: dict = field(default_factory=dict)  # source -> gradient array

    def info(self) -> TensorArrayInfo:
        return TensorArrayInfo(self.dtype, self.element_shape)

    def fail(self, where: str, message: str) -> InputError:
        """TensorFlow's error, after `where` (the node, as ctx.error names it)."""
        return InputError(f"{where}: TensorArray {self.name}: {message}")

    def check_open(self, where: str) -> None:
        if self.closed:
            raise self.fail(where, "has already been closed.")

    def write(self, index: int, value: np.ndarray, where: str) -> None:
        """TensorArray::LockedWriteOrAggregate."""
        self.check_open(where)
        if index < 0 or (not self.dynamic_size and index >= len(self.entries)):
            raise self.fail(where, f"Tried to write to index {index} but array is not resizeable and size is: "
                            f"{len(self.entries)}")
        if index >= len(self.entries):
            self.entries += [_Entry() for _ in range(index + 1 - len(self.entries))]
        entry = self.entries[index]
        if np.dtype(value.dtype) != np.dtype(self.dtype):
            raise self.fail(where, f"Could not write to TensorArray index {index} because the value dtype is "
                            f"{dtypes.name(value.dtype)} but TensorArray dtype is {dtypes.name(self.dtype)}.")
        shape = tuple(value.shape)
        if merge_shapes(self.element_shape, shape) != shape:
            raise self.fail(where, f"Could not write to TensorArray index {index} because the value shape is "
                            f"{_show(shape)} which is incompatible with the TensorArray's inferred element "
                            f"shape: {_show(self.element_shape)} (consider setting infer_shape=False).")
        if self.identical_element_shapes and not _fully_defined(self.element_shape):
            self.element_shape = shape
        if entry.read:
            raise self.fail(where, f"Could not write to TensorArray index {index} because it has already been read.")
        if entry.written and not self.is_grad:
            raise self.fail(where, f"Could not write to TensorArray index {index} because it has already been "
                            f"written to.")
        if entry.written:
            if shape != entry.shape:
                raise self.fail(where, f"Could not aggregate to TensorArray index {index} because the existing shape "
                                f"is {_show(entry.shape)} but the new input shape is {_show(shape)}.")
            entry.value = value if entry.value is None else entry.value + value
            return
        entry.value, entry.shape, entry.written = value, shape, True

    def read(self, index: int, where: str) -> np.ndarray:
        """TensorArray::LockedRead: an index never written reads as zeros."""
        self.check_open(where)
        if index < 0 or (not self.is_grad and index >= len(self.entries)):
            raise self.fail(where, f"Tried to read from index {index} but array size is: {len(self.entries)}")
        if index >= len(self.entries) or not self.entries[index].written:
            shape = self.entries[index].shape if index < len(self.entries) and self.entries[index].shape else None
            if shape is None:
                if not _fully_defined(self.element_shape):
                    raise self.fail(where, f"Could not read from TensorArray index {index}.  Furthermore, the element "
                                    f"shape is not fully defined: {_show(self.element_shape)}.  It is possible "
                                    f"you are working with a resizeable TensorArray and stop_gradients is not "
                                    f"allowing the gradients to be written.  If you set the full element_shape "
                                    f"property on the forward TensorArray, the proper all-zeros tensor will be "
                                    f"returned instead of incurring this error.")
                shape = self.element_shape
            if index >= len(self.entries):
                self.entries += [_Entry() for _ in range(index + 1 - len(self.entries))]
            self.entries[index].shape, self.entries[index].written = tuple(shape), True
        entry = self.entries[index]
        if entry.cleared:
            raise self.fail(where, f"Could not read index {index} twice because it was cleared after a previous read "
                            f"(perhaps try setting clear_after_read = false?).")
        value = entry.value if entry.value is not None else np.zeros(entry.shape, self.dtype)
        if self.clear_after_read:
            entry.value, entry.cleared = None, True
        entry.read = True
        return value

    def gradient(self, source: str, where: str) -> "TensorArrayResource":
        """The gradient array for `source`, made on first use (TensorArrayGradOp)."""
        self.check_open(where)
        if source not in self.grads:
            self.grads[source] = TensorArrayResource(
                f"{self.name}@{source}", self.dtype, self.element_shape, [_Entry() for _ in self.entries],
                dynamic_size=False, clear_after_read=True, identical_element_shapes=self.identical_element_shapes,
                is_grad=True)
        return self.grads[source]

    def __repr__(self) -> str:
        return f"TensorArray<{self.name}: {dtypes.name(self.dtype)}{_show(self.element_shape)} x {len(self.entries)}>"


@dataclass(eq=False)
class StackResource:
    """A stack (StackV2) on the reference path; the value its handle evaluates to."""

    name: str
    dtype: object
    max_size: int
    items: list = field(default_factory=list)
    closed: bool = False

    def check_open(self, where: str) -> None:
        if self.closed:
            raise InputError(f"{where}: Stack[{self.name}] has already been closed.")


def handle_spec(value) -> TensorSpec | None:
    """The spec of a handle value as an argument of a function run on kernels (None: not ours)."""
    if isinstance(value, TensorArrayResource):
        return TensorSpec(dtypes.RESOURCE, (), handle=value.info())
    if isinstance(value, StackResource):
        return TensorSpec(dtypes.RESOURCE, (), handle=("stack", value.dtype))
    return None


def handle_key(value):
    """What a function body's plan depends on for a handle argument (None: not ours)."""
    if isinstance(value, TensorArrayResource):
        return ("tensor_array", value.info())
    if isinstance(value, StackResource):
        return ("stack", np.dtype(value.dtype).str)
    return None


# -- shared pieces ------------------------------------------------------------------------------

def _array(ctx, value, i: int = 0) -> TensorArrayResource:
    if not isinstance(value, TensorArrayResource):
        raise ctx.error(f"input {i} is {type(value).__name__}, not a TensorArray handle", InputError)
    value.check_open(_where(ctx))
    return value


def _where(ctx) -> str:
    return f"node '{ctx.name}' ({ctx.op})"


def _info_in(ctx) -> TensorArrayInfo | None:
    handle = ctx.inputs[0].handle
    return handle if isinstance(handle, TensorArrayInfo) else None


# Where each op reads the array's flow.
_FLOW_IN = {"Read": 2, "Write": 3, "Gather": 2, "Scatter": 3, "Concat": 1, "Split": 3, "Size": 1, "Grad": 1}


def _flow_info(ctx) -> ListInfo | None:
    """What the flow input's spec knows of the array (see the module docstring: a flow is a list)."""
    kind = ctx.op[len("TensorArray"):-2]
    return info_of(ctx.inputs[_FLOW_IN[kind]]) if kind in _FLOW_IN else None


def _element_shape(ctx, attr: str = "element_shape") -> tuple | None:
    """The element shape as the node's attribute, the handle's spec and the flow's spec tell it."""
    info, flow = _info_in(ctx), _flow_info(ctx)
    shape = merge_shapes(ctx.attr(attr, None), None if info is None else info.element_shape)
    return merge_shapes(shape, None if flow is None else flow.element_shape)


def _flow_out(ctx, element_shape=None, known: bool = True) -> TensorSpec:
    """The flow a write returns: the array's facts, its element shape refined by what was
    written; `known=False` when the write leaves the array's contents unknown at compile time."""
    flow, handle = _flow_info(ctx), _info_in(ctx)
    dtype = np.dtype(ctx.attr("T"))
    if (handle is not None and handle.grad) or ctx.inputs[_FLOW_IN[ctx.op[11:-2]]].dtype != dtypes.VARIANT:
        return _FLOAT_FLOW  # a gradient array's flow: tf.gradients adds these up as floats
    if flow is None or not known:
        return list_spec(ListInfo(dtype, None if flow is None else flow.element_shape))
    return list_spec(ListInfo(dtype, merge_shapes(flow.element_shape, element_shape), flow.capacity, flow.length))


def _int(value) -> int:
    return int(np.asarray(value))


def _flow() -> np.ndarray:
    return np.array(0.0, _FLOAT)


# The spec of a flow that is not a compiled array's (a gradient array's): TF's float scalar.
_FLOAT_FLOW = TensorSpec(_FLOAT, ())


def _indices(ctx, indices) -> list[int]:
    indices = np.asarray(indices)
    if indices.ndim != 1:
        raise ctx.error(f"indices must be a vector, got shape {list(indices.shape)}", InputError)
    return [int(i) for i in indices]


def _stacked(ctx, array: TensorArrayResource, items: list, element_shape, what: str) -> np.ndarray:
    """np.stack of `items`; an empty one needs a fully defined element shape."""
    if not items:
        shape = merge_shapes(element_shape, array.element_shape)
        if not _fully_defined(shape):
            raise ctx.error(f"TensorArray has size zero, but element shape {_show(shape)} is not fully defined. "
                            f"Currently only static shapes are supported when {what} zero-size TensorArrays.",
                            InputError)
        return np.zeros((0, *shape), array.dtype)
    first = tuple(items[0].shape)
    for i, item in enumerate(items[1:], 1):
        if tuple(item.shape) != first:
            raise ctx.error(f"TensorArray has inconsistent shapes.  Index 0 has shape: {_show(first)} but index "
                            f"{i} has shape: {_show(tuple(item.shape))}", InputError)
    return np.stack(items)


# -- making arrays --------------------------------------------------------------------------------

def _create_infer(ctx):
    dtype, shape = np.dtype(ctx.attr("dtype")), ctx.attr("element_shape", None)
    specs = [TensorSpec(dtypes.RESOURCE, (), handle=TensorArrayInfo(dtype, shape))]
    size = ctx.inputs[0].value
    size = None if size is None or ctx.attr("dynamic_size", False) else int(np.asarray(size))
    return specs + [list_spec(ListInfo(dtype, shape, size, size))] if ctx.op == "TensorArrayV3" else specs


def _create_kernel(ctx, size):
    n = _int(size)
    if n < 0:
        raise ctx.error(f"Size should be >= 0, got {n}", InputError)
    name = ctx.attr("tensor_array_name", "") or ctx.name
    name = name.decode() if isinstance(name, bytes) else name
    array = TensorArrayResource(f"{name}_{next(_IDS)}", np.dtype(ctx.attr("dtype")), ctx.attr("element_shape", None),
                                [_Entry() for _ in range(n)], dynamic_size=bool(ctx.attr("dynamic_size", False)),
                                clear_after_read=bool(ctx.attr("clear_after_read", True)),
                                identical_element_shapes=bool(ctx.attr("identical_element_shapes", False)))
    return [array, _flow()] if ctx.op == "TensorArrayV3" else [array]


def _grad_infer(ctx):
    info = _info_in(ctx)
    info = TensorArrayInfo(None if info is None else info.dtype, None if info is None else info.element_shape, True)
    specs = [TensorSpec(dtypes.RESOURCE, (), handle=info)]
    return specs + [_FLOAT_FLOW] if ctx.op == "TensorArrayGradV3" else specs


def _grad_kernel(ctx, handle, flow_in):
    source = ctx.attr("source")
    grad = _array(ctx, handle).gradient(source.decode() if isinstance(source, bytes) else source, _where(ctx))
    return [grad, np.asarray(flow_in, _FLOAT)] if ctx.op == "TensorArrayGradV3" else [grad]


# -- items ----------------------------------------------------------------------------------------

def _read_infer(ctx):
    return [TensorSpec(np.dtype(ctx.attr("dtype")), _element_shape(ctx))]


def _read_kernel(ctx, handle, index, flow_in):
    array = _array(ctx, handle)
    _check_dtype(ctx, array, ctx.attr("dtype"))
    return array.read(_int(index), _where(ctx))


def _check_dtype(ctx, array: TensorArrayResource, dtype) -> None:
    if np.dtype(dtype) != np.dtype(array.dtype):
        raise ctx.error(f"TensorArray dtype is {dtypes.name(array.dtype)} but Op requested dtype "
                        f"{dtypes.name(dtype)}.", InputError)


def _write_kernel(ctx, handle, index, value, flow_in):
    _array(ctx, handle).write(_int(index), np.asarray(value), _where(ctx))
    return np.asarray(flow_in, _FLOAT)


def _write_infer(ctx):
    return [_flow_out(ctx, ctx.inputs[2].shape)]


def _scatter_infer(ctx):
    value = ctx.inputs[2].shape
    return [_flow_out(ctx, None if value is None else value[1:], known=ctx.inputs[1].value is not None)]


def _split_infer(ctx):
    """Compiles (as XLA does) only for equal constant lengths: then the element shape is known."""
    value, lengths = ctx.inputs[1].shape, ctx.inputs[2].value
    lengths = None if lengths is None else np.asarray(lengths).reshape(-1)
    if value is None or lengths is None or not len(lengths) or (lengths != lengths[0]).any():
        return [_flow_out(ctx, known=False)]
    return [_flow_out(ctx, (int(lengths[0]), *value[1:]))]


# -- whole arrays ---------------------------------------------------------------------------------

def _gather_infer(ctx):
    idx = ctx.inputs[1].shape
    n = idx[0] if idx is not None and len(idx) == 1 else None
    element = _element_shape(ctx)
    return [TensorSpec(np.dtype(ctx.attr("dtype")), None if element is None else (n, *element))]


def _gather_kernel(ctx, handle, indices, flow_in):
    array = _array(ctx, handle)
    _check_dtype(ctx, array, ctx.attr("dtype"))
    items = [array.read(i, _where(ctx)) for i in _indices(ctx, indices)]
    return _stacked(ctx, array, items, ctx.attr("element_shape", None), "packing")


def _scatter_kernel(ctx, handle, indices, value, flow_in):
    array, indices, value = _array(ctx, handle), _indices(ctx, indices), np.asarray(value)
    if value.ndim == 0 or len(indices) != value.shape[0]:
        raise ctx.error(f"Expected len(indices) == values.shape[0], but saw: {len(indices)} vs. "
                        f"{value.shape[0] if value.ndim else 'a scalar'}", InputError)
    if not array.dynamic_size and indices and max(indices) >= len(array.entries):
        raise ctx.error(f"Tried to scatter to index {max(indices)} but array is not resizeable and size is: "
                        f"{len(array.entries)}", InputError)
    for i, item in zip(indices, value):
        array.write(i, item, _where(ctx))
    return np.asarray(flow_in, _FLOAT)


def _concat_infer(ctx):
    info, flow = _info_in(ctx), _flow_info(ctx)
    whole = merge_shapes(None if info is None else info.element_shape, None if flow is None else flow.element_shape)
    rest = merge_shapes(ctx.attr("element_shape_except0", None), whole[1:] if whole else None)
    lead = None
    if whole and whole[0] is not None and flow is not None and flow.length is not None:
        lead = whole[0] * flow.length
    n = None if flow is None else flow.length
    return [TensorSpec(np.dtype(ctx.attr("dtype")), None if rest is None else (lead, *rest)),
            TensorSpec(np.dtype(np.int64), (n,))]


def _concat_kernel(ctx, handle, flow_in):
    array = _array(ctx, handle)
    _check_dtype(ctx, array, ctx.attr("dtype"))
    items = [array.read(i, _where(ctx)) for i in range(len(array.entries))]
    if not items:
        rest = merge_shapes(ctx.attr("element_shape_except0", None),
                            None if array.element_shape is None else array.element_shape[1:])
        if not _fully_defined(rest):
            raise ctx.error(f"TensorArray has size zero, but element_shape_except0 {_show(rest)} is not fully "
                            f"defined. Currently only static shapes are supported when concatenating zero-size "
                            f"TensorArrays.", InputError)
        return [np.zeros((0, *rest), array.dtype), np.zeros((0,), np.int64)]
    for i, item in enumerate(items):
        if item.ndim == 0:
            raise ctx.error(f"Concat saw a scalar shape at index {i} but requires at least vectors.", InputError)
        if item.shape[1:] != items[0].shape[1:]:
            raise ctx.error(f"TensorArray has inconsistent shapes.  Index 0 has (excepting dimension 0) shape: "
                            f"{_show(items[0].shape[1:])} but index {i} has (excepting dimension 0) shape: "
                            f"{_show(item.shape[1:])}", InputError)
    return [np.concatenate(items), np.array([t.shape[0] for t in items], np.int64)]


def _split_kernel(ctx, handle, value, lengths, flow_in):
    array, value = _array(ctx, handle), np.asarray(value)
    lengths = np.asarray(lengths).reshape(-1).astype(np.int64)
    if value.ndim == 0:
        raise ctx.error(f"Expected value to be at least a vector, but received shape: {_show(value.shape)}",
                        InputError)
    if (lengths < 0).any() or lengths.sum() != value.shape[0]:
        raise ctx.error(f"Expected sum of lengths to be equal to values.shape[0], but sum of lengths is: "
                        f"{int(lengths.sum())} and value's shape is: {_show(value.shape)}", InputError)
    if not array.dynamic_size and len(lengths) != len(array.entries):
        raise ctx.error(f"TensorArray's size is not equal to the size of lengths ({len(lengths)} vs. "
                        f"{len(array.entries)}), and the TensorArray is not marked as dynamically resizeable",
                        InputError)
    for i, piece in enumerate(np.split(value, np.cumsum(lengths)[:-1]) if len(lengths) else []):
        array.write(i, piece, _where(ctx))
    return np.asarray(flow_in, _FLOAT)


def _size_kernel(ctx, handle, flow_in):
    return np.array(len(_array(ctx, handle).entries), np.int32)


def _close_kernel(ctx, handle):
    _array(ctx, handle).closed = True
    return []


# -- stacks ---------------------------------------------------------------------------------------

def _stack(ctx, value) -> StackResource:
    if not isinstance(value, StackResource):
        raise ctx.error(f"input 0 is {type(value).__name__}, not a stack handle", InputError)
    value.check_open(_where(ctx))
    return value


def _stack_infer(ctx):
    return [TensorSpec(dtypes.RESOURCE, (), handle=("stack", np.dtype(ctx.attr("elem_type"))))]


def _stack_kernel(ctx, max_size):
    name = ctx.attr("stack_name", "") or ctx.name
    name = name.decode() if isinstance(name, bytes) else name
    return StackResource(f"{name}_{next(_IDS)}", np.dtype(ctx.attr("elem_type")), _int(max_size))


def _push_kernel(ctx, handle, elem):
    stack, elem = _stack(ctx, handle), np.asarray(elem)
    if np.dtype(elem.dtype) != np.dtype(stack.dtype):
        raise ctx.error(f"Stack[{stack.name}]: pushing {dtypes.name(elem.dtype)} onto a stack of "
                        f"{dtypes.name(stack.dtype)}", InputError)
    if 0 <= stack.max_size <= len(stack.items):
        raise ctx.error(f"Stack[{stack.name}] overflowed its max_size ({stack.max_size})", InputError)
    stack.items.append(elem)
    return elem


def _pop_kernel(ctx, handle):
    stack = _stack(ctx, handle)
    if not stack.items:
        raise ctx.error(f"Stack[{stack.name}] is empty.", InputError)
    return stack.items.pop()


def _stack_close_kernel(ctx, handle):
    _stack(ctx, handle).closed = True
    return []


# -- lowerings (XLA's, tf2xla/kernels/tensor_array_ops.cc) -----------------------------------------
# In IR an array is its flow: a ListValue (values.py), a buffer [size, *element_shape]; the
# handle is no value at all (the lowering driver hands resources to rules as None, and loops and
# calls carry none). Reads, writes and gathers are the TensorList rules on that buffer, whose
# inputs sit where these ops' do (the item at input 2, the result shape in ctx.out()).

def _list_rule(op: str, flow_in: int, *keep: int):
    """The lowering of TensorList op `op` on this op's flow (input `flow_in`) and inputs `keep`."""
    rule = REGISTRY[op].lower

    def lower(ctx, *operands):
        return rule(ctx, operands[flow_in], *(operands[i] for i in keep), *([None] * (2 - len(keep))))
    return lower


def _in_ir(ctx, flow) -> ListValue:
    if not isinstance(flow, ListValue):
        raise ctx.lowering_error("the TensorArray's flow is not a compiled array")
    return flow


def _create_lower(ctx, size):
    info = info_of(ctx.out(1))
    if info is None or info.capacity is None:
        raise ctx.lowering_error("the TensorArray's size is not a compile-time constant")
    buffer = hlo.splat(0, info.buffer_shape(), info.dtype) if info.element_static else None
    return [None, ListValue(buffer, hlo.constant(np.array(info.capacity, np.int32)), info.capacity, info.dtype)]


def _write_lower(ctx, handle, index, value, flow):
    return REGISTRY["TensorListSetItem"].lower(ctx, _in_ir(ctx, flow), index, value)


def _scatter_lower(ctx, handle, indices, value, flow):
    """The rows of `value` at constant indices: the whole buffer when they are 0..size-1."""
    flow, indices = _in_ir(ctx, flow), [int(i) for i in np.asarray(ctx.const(1)).reshape(-1)]
    shape = ctx.inputs[2].shape
    element = shape[1:]
    if indices == list(range(flow.capacity)):
        return ListValue(as_buffer(value, flow.capacity, element, flow.dtype), flow.length, flow.capacity, flow.dtype)
    flow = flow.materialized(element, f"node '{ctx.name}' ({ctx.op})")
    buffer, zeros = flow.buffer, [hlo.constant(np.array(0, np.int32))] * len(element)
    for row, i in enumerate(indices):
        item = hlo.slice(value, [row, *[0] * len(element)], [row + 1, *element])
        buffer = hlo.dynamic_update_slice(buffer, item, [hlo.constant(np.array(i, np.int32)), *zeros])
    return ListValue(buffer, flow.length, flow.capacity, flow.dtype)


def _split_lower(ctx, handle, value, lengths, flow):
    info = info_of(ctx.out())
    whole = hlo.reshape(value, (info.capacity, *info.element_shape))
    return ListValue(as_buffer(whole, info.capacity, info.element_shape, info.dtype), _in_ir(ctx, flow).length,
                     info.capacity, info.dtype)


def _concat_lower(ctx, handle, flow):
    flow, out = _in_ir(ctx, flow), ctx.out().shape
    info = info_of(ctx.inputs[1])
    element = merge_shapes(info.element_shape, (None, *out[1:]))
    flow = flow.materialized(element, f"node '{ctx.name}' ({ctx.op})")
    whole = hlo.slice(flow.buffer, [0] * (1 + len(element)), [flow.capacity, *element])
    return [hlo.reshape(whole, out), hlo.constant(np.full((flow.capacity,), element[0], np.int64))]


def _size_lower(ctx, handle, flow):
    return hlo.constant(np.array(_in_ir(ctx, flow).capacity, np.int32))


# -- the table ------------------------------------------------------------------------------------

_CREATE_ATTRS = ("dtype", "element_shape", "dynamic_size", "clear_after_read", "tensor_array_name")
# op -> (infer, kernel, lower, attrs, dtype_attrs, output_args, const_inputs); the V2 forms share
# the V3 rules, on kernels only (their handles are string tensors)
_OPS = {
    "TensorArrayV3": (_create_infer, _create_kernel, _create_lower, _CREATE_ATTRS + ("identical_element_shapes",),
                      ("dtype",), ("handle", "flow"), (0,)),
    "TensorArrayV2": (_create_infer, _create_kernel, None, _CREATE_ATTRS, ("dtype",), (), ()),
    "TensorArrayGradV3": (_grad_infer, _grad_kernel, None, ("source",), (), ("grad_handle", "flow_out"), ()),
    "TensorArrayGradV2": (_grad_infer, _grad_kernel, None, ("source",), (), (), ()),
    "TensorArrayReadV3": (_read_infer, _read_kernel, _list_rule("TensorListGetItem", 2, 1), ("dtype",), ("dtype",),
                          (), ()),
    "TensorArrayWriteV3": (_write_infer, _write_kernel, _write_lower, ("T",), ("T",), (), ()),
    "TensorArrayGatherV3": (_gather_infer, _gather_kernel, _list_rule("TensorListGather", 2, 1),
                            ("dtype", "element_shape"), ("dtype",), (), ()),
    "TensorArrayScatterV3": (_scatter_infer, _scatter_kernel, _scatter_lower, ("T",), ("T",), (), (1,)),
    "TensorArrayConcatV3": (_concat_infer, _concat_kernel, _concat_lower, ("dtype", "element_shape_except0"),
                            ("dtype",), ("value", "lengths"), ()),
    "TensorArraySplitV3": (_split_infer, _split_kernel, _split_lower, ("T",), ("T",), (), (2,)),
    "TensorArraySizeV3": (lambda ctx: [TensorSpec(np.dtype(np.int32), ())], _size_kernel, _size_lower, (), (), (),
                          ()),
    "TensorArrayCloseV3": (lambda ctx: [], _close_kernel, lambda ctx, handle: [], (), (), (), ()),
    "StackV2": (_stack_infer, _stack_kernel, None, ("elem_type", "stack_name"), ("elem_type",), (), ()),
    "StackPushV2": (lambda ctx: [ctx.inputs[1]], _push_kernel, None, ("T", "swap_memory"), ("T",), (), ()),
    "StackPopV2": (lambda ctx: [TensorSpec(np.dtype(ctx.attr("elem_type")), None)], _pop_kernel, None,
                   ("elem_type",), ("elem_type",), (), ()),
    "StackCloseV2": (lambda ctx: [], _stack_close_kernel, None, (), (), (), ()),
}
for _v2 in ("Read", "Write", "Gather", "Scatter", "Concat", "Split", "Size", "Close"):
    _OPS[f"TensorArray{_v2}V2"] = (*_OPS[f"TensorArray{_v2}V3"][:2], None, *_OPS[f"TensorArray{_v2}V3"][3:])

# Ops that make state each time they run (never folded, never in a compiled loop body). The
# others only use an array through its handle: stateless in the registry's sense, so that a
# loop body reading and writing arrays compiles.
_MAKERS = {"TensorArrayV3", "TensorArrayV2", "TensorArrayGradV3", "TensorArrayGradV2", "StackV2", "StackPushV2",
           "StackPopV2", "StackCloseV2"}
for _op, (_infer, _kernel, _lower, _attrs, _dtype_attrs, _outputs, _consts) in _OPS.items():
    register(_op, infer=_infer, kernel=_kernel, lower=_lower, attrs=_attrs, stateful=_op in _MAKERS,
             dtype_attrs=_dtype_attrs, output_args=_outputs, const_inputs=_consts)

# Every TensorArray and stack op, and those that never compile (clustering reason "tensor_array").
TENSOR_ARRAY_OPS = frozenset(_OPS)
KERNEL_ONLY = frozenset(op for op in _OPS if REGISTRY[op].lower is None)
# Ops whose output 0 is an array's handle, and the outputs that are flows (lists, for clustering).
HANDLE_MAKERS = frozenset({"TensorArrayV3", "TensorArrayGradV3"})
FLOW_OUTPUTS = {"TensorArrayV3": (1,), "TensorArrayGradV3": (1,), "TensorArrayWriteV3": (0,),
                "TensorArrayScatterV3": (0,), "TensorArraySplitV3": (0,)}
