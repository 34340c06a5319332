"""TF2 TensorList ops: what `tf.TensorArray` and Keras' recurrent layers write in TF2 graphs.

Values, specs and IR forms are values.py's. Lowerings follow XLA
(tf2xla/kernels/tensor_list_ops.cc): a list is a buffer [capacity, *element_shape] plus its
length; GetItem/SetItem are dynamic slices and updates of the buffer, PushBack/PopBack move
the length, Stack returns the buffer (sliced to the length when that is known and shorter).
As in XLA, a compiled list needs its capacity and its element shape at compile time: from
TensorListReserve's num_elements, FromTensor's leading dim or EmptyTensorList's
max_num_elements, and from the element_shape input, or from the first item set into it
(the spec's `join` through While bodies). A list without them stays on its kernels, with
mark_for_compilation's reason `list_size_unknown`.

Like XLA, compiled GetItem/SetItem/PushBack do not check the index against the length
(dynamic slices clamp); the kernels raise TensorFlow's errors.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ... import dtypes
from ...errors import InputError
from ...spec import TensorSpec
from .. import typesets
from ..math import elementwise  # noqa: F401  (ZerosLike and AddN, registered before _for_lists_too wraps them)
from .values import (ListInfo, ListValue, TensorList, as_buffer, check_item, info_of, list_spec, merge_shapes,
                          shape_from_tensor, shape_to_tensor)
from ..registry import REGISTRY, register


# -- shared pieces -----------------------------------------------------------------------------

def _requested_shape(ctx, i: int) -> tuple | None:
    """The element_shape input i as a shape (None: unknown rank, or not a constant)."""
    value = ctx.inputs[i].value
    if value is None:
        return None
    try:
        return shape_from_tensor(value)
    except ValueError as e:
        raise ctx.error(str(e)) from None


def _list_in(ctx, i: int = 0) -> ListInfo:
    """The ListInfo of list input i (what is known of it; the element dtype from the attr)."""
    info = info_of(ctx.inputs[i])
    dtype = ctx.attr("element_dtype", None)
    if info is None:
        if dtype is None:
            raise ctx.error(f"input {i} is not a known TensorList and the node has no element_dtype")
        return ListInfo(np.dtype(dtype), None)
    if dtype is not None and np.dtype(dtype) != np.dtype(info.dtype):
        raise ctx.error(f"element_dtype {np.dtype(dtype).name} for a list of {np.dtype(info.dtype).name}")
    return info


def _const_int(ctx, i: int) -> int | None:
    value = ctx.inputs[i].value
    return None if value is None else int(np.asarray(value))


def _the_list(ctx, value, i: int = 0) -> TensorList:
    if not isinstance(value, TensorList):
        raise ctx.error(f"input {i} is {type(value).__name__}, not a TensorList")
    return value


def _where(ctx) -> str:
    return f"node '{ctx.name}' ({ctx.op})"


def _index(ctx, lst: TensorList, index) -> int:
    i = int(np.asarray(index))
    if not 0 <= i < len(lst.items):
        raise ctx.error(f"trying to access element {i} in a list with {len(lst.items)} elements", InputError)
    return i


def _in_ir(ctx, value: ListValue, i: int = 0) -> ListValue:
    """A list operand for a lowering; its capacity must be known (mark_for_compilation checks)."""
    if not isinstance(value, ListValue):
        raise ctx.lowering_error(f"input {i} is not a compiled TensorList")
    return value


def _materialized(ctx, value: ListValue, shape: tuple | None) -> ListValue:
    return value.materialized(shape, _where(ctx))


def _i32(n: int):
    return hlo.constant(np.array(n, np.int32))


def _zeros_i32(n: int) -> list:
    return [_i32(0) for _ in range(n)]


def _new_list_ir(ctx, info: ListInfo, length: int) -> ListValue:
    """A fresh compiled list of `info`'s capacity: zeros, or no buffer while the shape is unknown."""
    if info.capacity is None:
        raise ctx.lowering_error("the list's capacity is not known at compile time")
    buffer = hlo.splat(0, info.buffer_shape(), info.dtype) if info.element_static else None
    return ListValue(buffer, _i32(length), info.capacity, info.dtype)


def _register(name, infer, kernel, lower=None, attrs=("element_dtype",), const_inputs=(), output_args=()):
    dtype_attrs = ("element_dtype",) if "element_dtype" in attrs else ()
    register(name, infer=infer, kernel=kernel, lower=lower, attrs=attrs, const_inputs=const_inputs,
             dtype_attrs=dtype_attrs, dtypes=typesets.ANY if dtype_attrs else (), output_args=output_args)


# -- making lists ------------------------------------------------------------------------------

def _empty_infer(ctx):
    cap = _const_int(ctx, 1)
    return [list_spec(ListInfo(np.dtype(ctx.attr("element_dtype")), _requested_shape(ctx, 0),
                               cap if cap is not None and cap >= 0 else None, 0))]


def _empty_kernel(ctx, element_shape, max_num_elements):
    return TensorList(np.dtype(ctx.attr("element_dtype")), shape_from_tensor(element_shape), [],
                      int(np.asarray(max_num_elements)))


def _empty_lower(ctx, element_shape, max_num_elements):
    return _new_list_ir(ctx, info_of(ctx.out()), 0)


def _reserve_infer(ctx):
    n = _const_int(ctx, 1)
    if n is not None and n < 0:
        raise ctx.error(f"num_elements must be >= 0, got {n}")
    return [list_spec(ListInfo(np.dtype(ctx.attr("element_dtype")), _requested_shape(ctx, 0), n, n))]


def _reserve_kernel(ctx, element_shape, num_elements):
    n = int(np.asarray(num_elements))
    return TensorList(np.dtype(ctx.attr("element_dtype")), shape_from_tensor(element_shape), [None] * n)


def _reserve_lower(ctx, element_shape, num_elements):
    info = info_of(ctx.out())
    return _new_list_ir(ctx, info, info.capacity)


def _from_tensor_infer(ctx):
    spec = ctx.inputs[0]
    if spec.shape is not None and len(spec.shape) == 0:
        raise ctx.error("the tensor must have rank >= 1 to be split into a list")
    element = merge_shapes(None if spec.shape is None else spec.shape[1:], _requested_shape(ctx, 1))
    n = None if spec.shape is None else spec.shape[0]
    return [list_spec(ListInfo(np.dtype(spec.dtype), element, n, n))]


def _from_tensor_kernel(ctx, tensor, element_shape):
    tensor = np.asarray(tensor)
    lst = TensorList(tensor.dtype, shape_from_tensor(element_shape))
    return lst.with_items([check_item(lst, t, _where(ctx)) for t in tensor])


def _from_tensor_lower(ctx, tensor, element_shape):
    spec = ctx.inputs[0]
    n = spec.shape[0]
    return ListValue(as_buffer(tensor, n, spec.shape[1:], spec.dtype), _i32(n), n, spec.dtype)


def _split_infer(ctx):
    spec, lengths = ctx.inputs[0], ctx.inputs[2].value
    rest = None if spec.shape is None else spec.shape[1:]
    n, lead = None, None
    if lengths is not None:
        lengths = np.asarray(lengths).reshape(-1)
        n = len(lengths)
        lead = int(lengths[0]) if n and (lengths == lengths[0]).all() else None
    element = merge_shapes(None if rest is None else (lead, *rest), _requested_shape(ctx, 1))
    return [list_spec(ListInfo(np.dtype(spec.dtype), element, n, n))]


def _split_kernel(ctx, tensor, element_shape, lengths):
    tensor, lengths = np.asarray(tensor), np.asarray(lengths).reshape(-1).astype(np.int64)
    if lengths.sum() != tensor.shape[0] or (lengths < 0).any():
        raise ctx.error(f"lengths {lengths.tolist()} do not split a leading dim of {tensor.shape[0]}", InputError)
    lst = TensorList(tensor.dtype, shape_from_tensor(element_shape))
    pieces = np.split(tensor, np.cumsum(lengths)[:-1]) if len(lengths) else []
    return lst.with_items([check_item(lst, p, _where(ctx)) for p in pieces])


def _split_lower(ctx, tensor, element_shape, lengths):
    info = info_of(ctx.out())
    if not info.element_static:
        raise ctx.lowering_error("TensorListSplit compiles only for equal constant lengths")
    whole = hlo.reshape(tensor, (info.capacity, *info.element_shape))
    return ListValue(as_buffer(whole, info.capacity, info.element_shape, info.dtype), _i32(info.capacity),
                     info.capacity, info.dtype)


# -- reading and writing items -------------------------------------------------------------------

def _get_item_infer(ctx):
    info = _list_in(ctx)
    return [TensorSpec(info.dtype, merge_shapes(info.element_shape, _requested_shape(ctx, 2)))]


def _get_item_kernel(ctx, lst, index, element_shape):
    lst = _the_list(ctx, lst)
    return lst.read(_index(ctx, lst, index), shape_from_tensor(element_shape), _where(ctx))


def _slice_item(buffer, index, element_shape):
    """buffer[index] of a [capacity, *element_shape] buffer."""
    rank = len(element_shape)
    item = hlo.dynamic_slice(buffer, [index, *_zeros_i32(rank)], [1, *element_shape])
    return hlo.reshape(item, element_shape)


def _write_item(buffer, index, item, element_shape):
    """buffer with buffer[index] = item."""
    return hlo.dynamic_update_slice(buffer, hlo.reshape(item, [1, *element_shape]),
                                    [index, *_zeros_i32(len(element_shape))])


def _get_item_lower(ctx, lst, index, element_shape):
    shape = ctx.out().shape
    lst = _materialized(ctx, _in_ir(ctx, lst), shape)
    return _slice_item(lst.buffer, index, shape)


def _set_item_infer(ctx):
    info = _list_in(ctx)
    element = merge_shapes(info.element_shape, ctx.inputs[2].shape)
    if ctx.attr("resize_if_index_out_of_bounds", False):  # the length depends on the index
        return [list_spec(ListInfo(info.dtype, element))]
    return [list_spec(ListInfo(info.dtype, element, info.capacity, info.length))]


def _set_item_kernel(ctx, lst, index, item):
    lst = _the_list(ctx, lst)
    items = list(lst.items)
    i = int(np.asarray(index))
    if ctx.attr("resize_if_index_out_of_bounds", False) and i >= len(items):
        items += [None] * (i + 1 - len(items))
    if not 0 <= i < len(items):
        raise ctx.error(f"trying to modify element {i} in a list with {len(items)} elements", InputError)
    items[i] = check_item(lst, np.asarray(item), _where(ctx))
    return lst.with_items(items)


def _set_item_lower(ctx, lst, index, item):
    shape = ctx.inputs[2].shape
    lst = _materialized(ctx, _in_ir(ctx, lst), shape)
    return ListValue(_write_item(lst.buffer, index, item, shape), lst.length, lst.capacity, lst.dtype)


def _push_back_infer(ctx):
    info = _list_in(ctx)
    length = None if info.length is None else info.length + 1
    if info.capacity is not None and length is not None and length > info.capacity:
        raise ctx.error(f"pushes item {length} into a list of at most {info.capacity} elements")
    return [list_spec(ListInfo(info.dtype, merge_shapes(info.element_shape, ctx.inputs[1].shape),
                               info.capacity, length))]


def _push_back_kernel(ctx, lst, item):
    lst = _the_list(ctx, lst)
    if 0 <= lst.max_num_elements <= len(lst.items):
        raise ctx.error(f"tried to push item into a full list (max_num_elements {lst.max_num_elements})",
                        InputError)
    return lst.with_items([*lst.items, check_item(lst, np.asarray(item), _where(ctx))])


def _push_back_lower(ctx, lst, item):
    shape = ctx.inputs[1].shape
    lst = _materialized(ctx, _in_ir(ctx, lst), shape)
    return ListValue(_write_item(lst.buffer, lst.length, item, shape),
                     hlo.add(lst.length, _i32(1)), lst.capacity, lst.dtype)


def _pop_back_infer(ctx):
    info = _list_in(ctx)
    if info.length == 0:
        raise ctx.error("trying to pop from an empty list")
    length = None if info.length is None else info.length - 1
    element = merge_shapes(info.element_shape, _requested_shape(ctx, 1))
    return [list_spec(ListInfo(info.dtype, info.element_shape, info.capacity, length)),
            TensorSpec(info.dtype, element)]


def _pop_back_kernel(ctx, lst, element_shape):
    lst = _the_list(ctx, lst)
    if not lst.items:
        raise ctx.error("trying to pop from an empty list", InputError)
    item = lst.read(len(lst.items) - 1, shape_from_tensor(element_shape), _where(ctx))
    return [lst.with_items(lst.items[:-1]), item]


def _pop_back_lower(ctx, lst, element_shape):
    shape = ctx.out(1).shape
    lst = _materialized(ctx, _in_ir(ctx, lst), shape)
    last = hlo.subtract(lst.length, _i32(1))
    return [ListValue(lst.buffer, last, lst.capacity, lst.dtype), _slice_item(lst.buffer, last, shape)]


# -- whole lists -----------------------------------------------------------------------------------

def _stack_infer(ctx):
    info = _list_in(ctx)
    n = ctx.attr("num_elements", -1)
    if n is not None and n >= 0 and info.length is not None and n != info.length:
        raise ctx.error(f"expected a list with {n} elements but got a list with {info.length} elements")
    length = n if n is not None and n >= 0 else info.length
    element = merge_shapes(info.element_shape, _requested_shape(ctx, 1))
    return [TensorSpec(info.dtype, None if element is None else (length, *element))]


def _stack_kernel(ctx, lst, element_shape):
    lst = _the_list(ctx, lst)
    n = ctx.attr("num_elements", -1)
    if n is not None and n >= 0 and n != len(lst.items):
        raise ctx.error(f"expected a list with {n} elements but got a list with {len(lst.items)} elements",
                        InputError)
    return _stacked(ctx, lst, range(len(lst.items)), shape_from_tensor(element_shape))


def _stacked(ctx, lst: TensorList, indices, requested) -> np.ndarray:
    items = [lst.read(i, requested, _where(ctx)) for i in indices]
    if items:
        shapes = {tuple(t.shape) for t in items}
        if len(shapes) > 1:
            raise ctx.error(f"items of different shapes {sorted(shapes)} cannot be stacked", InputError)
        return np.stack(items)
    shape = lst.item_shape(requested)
    if shape is None or any(d is None for d in shape):
        raise ctx.error("tried to stack elements of an empty list with a non-fully-defined element shape",
                        InputError)
    return np.zeros((0, *shape), lst.dtype)


def _whole_buffer(ctx, lst: ListValue, element_shape, length: int | None):
    """The buffer's first `length` items (all of them when the length is the capacity)."""
    lst = _materialized(ctx, _in_ir(ctx, lst), element_shape)
    if length is None:
        raise ctx.lowering_error("the list's length is not known at compile time")
    if length == hlo.shape_of(lst.buffer)[0]:
        return lst.buffer
    return hlo.slice(lst.buffer, [0] * (1 + len(element_shape)), [length, *element_shape])


def _stack_lower(ctx, lst, element_shape):
    shape = ctx.out().shape
    return _whole_buffer(ctx, lst, shape[1:], shape[0])


def _gather_infer(ctx):
    info = _list_in(ctx)
    element = merge_shapes(info.element_shape, _requested_shape(ctx, 2))
    idx = ctx.inputs[1].shape
    n = None if idx is None or len(idx) != 1 else idx[0]
    return [TensorSpec(info.dtype, None if element is None else (n, *element))]


def _gather_kernel(ctx, lst, indices, element_shape):
    lst = _the_list(ctx, lst)
    indices = np.asarray(indices).reshape(-1)
    return _stacked(ctx, lst, [_index(ctx, lst, i) for i in indices], shape_from_tensor(element_shape))


def _gather_lower(ctx, lst, indices, element_shape):
    shape = ctx.out().shape
    element = shape[1:]
    lst = _materialized(ctx, _in_ir(ctx, lst), element)
    return hlo.gather(lst.buffer, hlo.reshape(indices, [shape[0], 1]), shape,
                      offset_dims=range(1, 1 + len(element)), collapsed_slice_dims=[0], start_index_map=[0],
                      index_vector_dim=1, slice_sizes=[1, *element])


def _concat_infer(ctx):
    info = _list_in(ctx)
    requested = _requested_shape(ctx, 1) if ctx.op == "TensorListConcatV2" else ctx.attr("element_shape", None)
    element = merge_shapes(info.element_shape, requested)
    if element is not None and len(element) == 0:
        raise ctx.error("concatenating a list of scalars: the items need rank >= 1")
    lead = None
    if element is not None and element[0] is not None and info.length is not None:
        lead = element[0] * info.length
    return [TensorSpec(info.dtype, None if element is None else (lead, *element[1:])),
            TensorSpec(np.dtype(np.int64), (info.length,))]


def _concat_kernel(ctx, lst, element_shape=None, leading_dims=None):
    lst = _the_list(ctx, lst)
    requested = shape_from_tensor(element_shape) if element_shape is not None else ctx.attr("element_shape", None)
    if not lst.items:
        shape = lst.item_shape(requested)
        if shape is None or any(d is None for d in shape[1:]):
            raise ctx.error("concatenating an empty list needs a fully defined element shape except dim 0",
                            InputError)
        return [np.zeros((0, *shape[1:]), lst.dtype), np.zeros((0,), np.int64)]
    items = []
    for i, item in enumerate(lst.items):
        if item is None:  # an unset item: its leading dim comes from leading_dims
            shape = lst.item_shape(requested)
            lead = int(np.asarray(leading_dims).reshape(-1)[i]) if leading_dims is not None else shape[0]
            item = lst.read(i, (lead, *shape[1:]), _where(ctx))
        items.append(item)
    if any(t.ndim == 0 for t in items):
        raise ctx.error("concatenating a list of scalars: the items need rank >= 1", InputError)
    return [np.concatenate(items), np.array([t.shape[0] for t in items], np.int64)]


def _concat_lower(ctx, lst, *const_operands):
    out, info = ctx.out().shape, info_of(ctx.inputs[0])
    element = merge_shapes(info.element_shape, (None, *out[1:]))
    if element is None or element[0] is None:
        raise ctx.lowering_error("the items' leading dim is not known at compile time")
    whole = _whole_buffer(ctx, lst, element, info.length)
    return [hlo.reshape(whole, out), hlo.constant(np.full((info.length,), element[0], np.int64))]


# -- facts about a list ------------------------------------------------------------------------------

def _length_infer(ctx):
    info = info_of(ctx.inputs[0])
    length = None if info is None else info.length
    return [TensorSpec(np.dtype(np.int32), (), None if length is None else np.array(length, np.int32))]


def _length_kernel(ctx, lst):
    return np.array(len(_the_list(ctx, lst).items), np.int32)


def _length_lower(ctx, lst):
    return _in_ir(ctx, lst).length


def _element_shape_infer(ctx):
    info = info_of(ctx.inputs[0])
    dtype = np.dtype(ctx.attr("shape_type", np.int32))
    element = None if info is None else info.element_shape
    value = shape_to_tensor(element, dtype) if info is not None and info.element_static else None
    return [TensorSpec(dtype, (None,) if element is None else (len(element),), value)]


def _element_shape_kernel(ctx, lst):
    return shape_to_tensor(_the_list(ctx, lst).element_shape, np.dtype(ctx.attr("shape_type", np.int32)))


def _element_shape_lower(ctx, lst):
    raise ctx.lowering_error("the list's element shape is not known at compile time")


# -- kernel only: XLA compiles none of these -------------------------------------------------------

def _scatter_infer(ctx):
    """ScatterV2 makes a list, ScatterIntoExistingList and Resize change one's length."""
    if ctx.op == "TensorListScatterV2":
        spec = ctx.inputs[0]
        element = merge_shapes(None if spec.shape is None else spec.shape[1:], _requested_shape(ctx, 2))
        return [list_spec(ListInfo(np.dtype(spec.dtype), element))]
    info = _list_in(ctx)
    return [list_spec(ListInfo(info.dtype, info.element_shape))]


def _scattered(ctx, lst: TensorList, tensor, indices, min_length: int) -> TensorList:
    tensor, indices = np.asarray(tensor), np.asarray(indices).reshape(-1)
    if len(indices) != (tensor.shape[0] if tensor.ndim else 0):
        raise ctx.error(f"{len(indices)} indices for a tensor of leading dim "
                        f"{tensor.shape[0] if tensor.ndim else 'none'}", InputError)
    if (indices < 0).any():
        raise ctx.error(f"negative index {int(indices.min())}", InputError)
    items = list(lst.items)
    size = max([min_length, len(items), *(int(i) + 1 for i in indices)])
    items += [None] * (size - len(items))
    for i, t in zip(indices, tensor):
        items[int(i)] = check_item(lst, t, _where(ctx))
    return lst.with_items(items)


def _scatter_v2_kernel(ctx, tensor, indices, element_shape, num_elements):
    lst = TensorList(np.asarray(tensor).dtype, shape_from_tensor(element_shape))
    return _scattered(ctx, lst, tensor, indices, int(np.asarray(num_elements)))


def _scatter_into_kernel(ctx, lst, tensor, indices):
    return _scattered(ctx, _the_list(ctx, lst), tensor, indices, 0)


def _resize_kernel(ctx, lst, size):
    lst, n = _the_list(ctx, lst), int(np.asarray(size))
    if n < 0:
        raise ctx.error(f"size must be >= 0, got {n}", InputError)
    return lst.with_items((list(lst.items) + [None] * n)[:n])


_SHAPED = ("element_dtype", "shape_type")
_register("EmptyTensorList", _empty_infer, _empty_kernel, _empty_lower, _SHAPED, const_inputs=(0, 1))
_register("TensorListReserve", _reserve_infer, _reserve_kernel, _reserve_lower, _SHAPED, const_inputs=(0, 1))
_register("TensorListFromTensor", _from_tensor_infer, _from_tensor_kernel, _from_tensor_lower, _SHAPED,
          const_inputs=(1,))
_register("TensorListSplit", _split_infer, _split_kernel, _split_lower, _SHAPED, const_inputs=(1, 2))
_register("TensorListGetItem", _get_item_infer, _get_item_kernel, _get_item_lower, ("element_dtype", "Tshape"),
          const_inputs=(2,))
_register("TensorListSetItem", _set_item_infer, _set_item_kernel, _set_item_lower,
          ("element_dtype", "resize_if_index_out_of_bounds"))
_register("TensorListPushBack", _push_back_infer, _push_back_kernel, _push_back_lower)
_register("TensorListPopBack", _pop_back_infer, _pop_back_kernel, _pop_back_lower, const_inputs=(1,),
          output_args=("output_handle", "tensor"))
_register("TensorListStack", _stack_infer, _stack_kernel, _stack_lower, ("element_dtype", "num_elements"),
          const_inputs=(1,))
_register("TensorListGather", _gather_infer, _gather_kernel, _gather_lower, const_inputs=(2,))
_register("TensorListConcatV2", _concat_infer, _concat_kernel, _concat_lower, _SHAPED, const_inputs=(1, 2),
          output_args=("tensor", "lengths"))
_register("TensorListConcat", _concat_infer, _concat_kernel, _concat_lower, ("element_dtype", "element_shape"),
          output_args=("tensor", "lengths"))
_register("TensorListLength", _length_infer, _length_kernel, _length_lower, ())
_register("TensorListElementShape", _element_shape_infer, _element_shape_kernel, _element_shape_lower,
          ("shape_type",))
_register("TensorListScatterV2", _scatter_infer, _scatter_v2_kernel, None, _SHAPED)
_register("TensorListScatterIntoExistingList", _scatter_infer, _scatter_into_kernel)
_register("TensorListResize", _scatter_infer, _resize_kernel, None, ())

# The outputs that are lists, per op (clustering's variant rule reads them: passes/graph/variant_groups.py).
LIST_OUTPUTS = {op: (0,) for op in ("EmptyTensorList", "TensorListReserve", "TensorListFromTensor", "TensorListSplit",
                                    "TensorListSetItem", "TensorListPushBack", "TensorListPopBack",
                                    "TensorListScatterV2", "TensorListScatterIntoExistingList", "TensorListResize")}
# Ops that may make a compiled list before its element shape is known (its first item tells it).
UNINITIALIZED_MAKERS = frozenset({"EmptyTensorList", "TensorListReserve"})


# -- ZerosLike and AddN of lists ---------------------------------------------------------------------
# TensorFlow registers both for variant lists (tensor_list.cc: TensorListZerosLike,
# TensorListBinaryAdd): the gradients of While loops over lists make zeros of a list and add
# list gradients. The elementwise entries handle tensors; a list takes the rules below.

def _zeros_like_kernel(ctx, lst):
    lst = _the_list(ctx, lst)
    return lst.with_items([None if t is None else np.zeros_like(t) for t in lst.items])


def _zeros_like_lower(ctx, lst):
    lst = _in_ir(ctx, lst)
    buffer = None if lst.buffer is None else hlo.splat(0, hlo.shape_of(lst.buffer), lst.dtype)
    return ListValue(buffer, lst.length, lst.capacity, lst.dtype)


def _add_n_kernel(ctx, *lists):
    lists = [_the_list(ctx, lst, i) for i, lst in enumerate(lists)]
    if len({len(lst.items) for lst in lists}) > 1:
        raise ctx.error(f"adding lists of different lengths {[len(lst.items) for lst in lists]}", InputError)
    items = []
    for parts in zip(*(lst.items for lst in lists)):
        present = [p for p in parts if p is not None]
        items.append(None if not present else sum(present[1:], present[0]))
    return lists[0].with_items(items)


def _add_n_lower(ctx, *lists):
    lists = [_in_ir(ctx, lst, i) for i, lst in enumerate(lists)]
    buffers = [lst.buffer for lst in lists if lst.buffer is not None]
    total = None if not buffers else buffers[0]
    for b in buffers[1:]:
        total = hlo.add(total, b)
    return ListValue(total, lists[0].length, lists[0].capacity, lists[0].dtype)


def _for_lists_too(op: str, kernel, lower) -> None:
    """Let the registered entry of `op` take lists: variant inputs go to these rules."""
    base = REGISTRY[op]

    def is_list(ctx) -> bool:
        return bool(ctx.inputs) and ctx.inputs[0].dtype == dtypes.VARIANT

    REGISTRY[op] = dataclasses.replace(
        base,
        infer=lambda ctx: [list_spec(_list_in(ctx))] if is_list(ctx) else base.infer(ctx),
        kernel=lambda ctx, *a: kernel(ctx, *a) if is_list(ctx) else base.kernel(ctx, *a),
        lower=lambda ctx, *a: lower(ctx, *a) if is_list(ctx) else base.lower(ctx, *a))


_for_lists_too("ZerosLike", _zeros_like_kernel, _zeros_like_lower)
_for_lists_too("AddN", _add_n_kernel, _add_n_lower)
