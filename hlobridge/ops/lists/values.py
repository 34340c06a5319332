"""What a TensorList (a DT_VARIANT tensor) is at each stage: its spec, its value, its IR.

TensorFlow's TF2 lists are immutable values of dtype variant: a list op takes a list and
returns a new one (tensor_list.h). hlobridge gives them one form per stage:

- `ListInfo`, the `handle` of a variant TensorSpec: the element dtype, the element shape (as
  far as it is known), the capacity (how many elements a compiled buffer needs) and the
  length, each None where unknown. Shape inference fills it; `join` merges two of them where
  control flow meets (a While's body refines the element shape of a list reserved with
  unknown dims, as XLA's GetTensorListShape does by compiling the body once);
- `TensorList`, the value reference kernels pass around: the element dtype, the declared
  element shape, the maximum size, and the items (None for an item reserved but never set,
  which reads as zeros, as TF's kernels do);
- `ListValue`, what a lowering sees: XLA's representation (tf2xla/kernels/tensor_list_utils.cc),
  a buffer [capacity, *element_shape] plus the length as an i32 scalar (the push index). A
  list whose element shape is not known yet (a TensorListReserve with -1 dims) has no buffer
  until something tells its shape (`materialize`). At function and loop boundaries a list
  travels as its two parts: `leaves` flattens values by their specs, `rebuild` regroups them.

Lists never cross a cluster boundary (mark_for_compilation's variant rule): a cluster's
arguments and results stay plain tensors.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ... import dtypes
from ...errors import InputError, LoweringError
from ...spec import TensorSpec


def merge_shapes(a: tuple | None, b: tuple | None) -> tuple | None:
    """The most specific shape compatible with both, known dims winning over unknown ones
    (None: an unknown rank); conflicting dims become unknown, conflicting ranks an unknown rank."""
    if a is None:
        return b
    if b is None:
        return a
    if len(a) != len(b):
        return None
    return tuple(y if x is None else x if y is None or x == y else None for x, y in zip(a, b))


def _same_or_none(a, b):
    return a if a == b else None


@dataclass(frozen=True)
class ListInfo:
    """The static facts about a list: a variant spec's `handle` (see the module docstring)."""

    dtype: object
    element_shape: tuple | None
    capacity: int | None = None
    length: int | None = None

    def join(self, other: "ListInfo") -> "ListInfo | None":
        """Where two control-flow paths meet: element shapes refine each other, the rest must agree."""
        if other.dtype != self.dtype:
            return None
        return ListInfo(self.dtype, merge_shapes(self.element_shape, other.element_shape),
                        _same_or_none(self.capacity, other.capacity), _same_or_none(self.length, other.length))

    @property
    def element_static(self) -> bool:
        """Whether every element dim is known."""
        return self.element_shape is not None and all(d is not None for d in self.element_shape)

    def buffer_shape(self) -> tuple | None:
        """[buffer_rows(capacity), *element_shape] when both are known: the compiled buffer's shape."""
        if self.capacity is None or not self.element_static:
            return None
        return (buffer_rows(self.capacity), *self.element_shape)


def buffer_rows(capacity: int) -> int:
    """The rows of a compiled list's buffer: its capacity, but at least 2.

    A list of 0 items would make GetItem's dynamic_slice invalid IR (a slice of 1 row from 0),
    even where it never runs (a zero-trip loop's body). In a list of 1 item (Keras' RNN output
    without return_sequences) every SetItem replaces the whole buffer and folds to its item:
    inside a loop the old buffer is then a loop-carried value the body no longer reads, which
    crashes iree-compile 3.13 (ScfWhileOpConversion, signal 11); an optimization_barrier that
    reads it avoided the crash but the program then failed now and then on local-task
    ("transient buffer has not been committed"). A spare row avoids both: results slice the
    buffer to the list's length."""
    return max(capacity, 2)


def list_spec(info: ListInfo) -> TensorSpec:
    """The spec of a list tensor: a variant scalar whose handle holds `info`."""
    return TensorSpec(dtypes.VARIANT, (), handle=info)


def info_of(spec: TensorSpec) -> ListInfo | None:
    """The ListInfo of a variant spec, or None when it holds no list facts."""
    return spec.handle if isinstance(spec.handle, ListInfo) else None


def shape_from_tensor(value) -> tuple | None:
    """TF's element_shape tensor as a shape: -1 (scalar) is an unknown rank, -1 dims unknown dims."""
    value = np.asarray(value)
    if value.ndim == 0:
        if int(value) != -1:
            raise ValueError(f"a scalar element_shape must be -1 (unknown rank), got {int(value)}")
        return None
    return tuple(None if int(d) < 0 else int(d) for d in value.reshape(-1))


def shape_to_tensor(shape: tuple | None, dtype) -> np.ndarray:
    """The inverse of shape_from_tensor, as TensorListElementShape returns it."""
    if shape is None:
        return np.array(-1, dtype)
    return np.array([-1 if d is None else d for d in shape], dtype)


# -- the value reference kernels pass around ------------------------------------------------------


@dataclass
class TensorList:
    """A list value on the reference path. Ops never mutate one: they return a copy
    (`with_items`), so a list seen by two consumers stays what each expects."""

    dtype: object
    element_shape: tuple | None
    items: list = field(default_factory=list)
    max_num_elements: int = -1

    def with_items(self, items: list) -> "TensorList":
        """A new list of the same kind holding `items`."""
        return replace(self, items=list(items))

    def info(self) -> ListInfo:
        """The facts a plan may rely on for any list of this kind (not its length: a loop body
        planned once runs on lists of every length)."""
        return ListInfo(self.dtype, self.element_shape)

    def item_shape(self, requested: tuple | None = None) -> tuple | None:
        """The element shape as far as the list, its items and `requested` tell it."""
        shape = merge_shapes(self.element_shape, requested)
        for item in self.items:
            if item is not None:
                shape = merge_shapes(shape, tuple(item.shape))
        return shape

    def read(self, i: int, requested: tuple | None, where: str) -> np.ndarray:
        """Item i; an item never set reads as zeros of the element shape (which must then be known)."""
        item = self.items[i]
        if item is not None:
            return item
        shape = self.item_shape(requested)
        if shape is None or any(d is None for d in shape):
            raise InputError(f"{where}: item {i} was never set and the element shape "
                             f"{_show(shape)} is not fully defined")
        return np.zeros(shape, self.dtype)

    def __repr__(self) -> str:
        return f"TensorList<{dtypes.name(self.dtype)}{_show(self.element_shape)} x {len(self.items)}>"


def _show(shape) -> str:
    return "[*]" if shape is None else "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def check_item(lst: TensorList, item: np.ndarray, where: str) -> np.ndarray:
    """`item` if its dtype and shape fit the list's; TF's error otherwise."""
    if np.dtype(item.dtype) != np.dtype(lst.dtype):
        raise InputError(f"{where}: item of dtype {dtypes.name(item.dtype)} for a list of "
                         f"{dtypes.name(lst.dtype)}")
    if merge_shapes(lst.element_shape, tuple(item.shape)) != tuple(item.shape):
        raise InputError(f"{where}: item of shape {list(item.shape)} does not fit the list's element "
                         f"shape {_show(lst.element_shape)}")
    return item


# -- what a lowering sees ---------------------------------------------------------------------------


@dataclass
class ListValue:
    """A list in IR: `buffer` [buffer_rows(capacity), *element_shape] (None until the element
    shape is known) and `length`, an i32 scalar Value."""

    buffer: object
    length: object
    capacity: int
    dtype: object

    def materialized(self, element_shape: tuple | None, where: str) -> "ListValue":
        """This list with a buffer: zeros of `element_shape` (which must be static) if it had none."""
        if self.buffer is not None:
            return self
        if element_shape is None or any(d is None for d in element_shape):
            raise LoweringError(f"{where}: the list's element shape {_show(element_shape)} is not known "
                                f"at compile time")
        return ListValue(hlo.splat(0, (buffer_rows(self.capacity), *element_shape), self.dtype), self.length,
                         self.capacity, self.dtype)


def as_buffer(tensor, n: int, element_shape: tuple, dtype):
    """A [n, *element_shape] tensor as a list buffer: itself, or padded with zero rows to buffer_rows(n)."""
    rows = buffer_rows(n)
    if rows == n:
        return tensor
    return hlo.pad(tensor, hlo.constant(np.zeros((), dtype)), [0] * (1 + len(element_shape)),
                   [rows - n] + [0] * len(element_shape))


def lowered_types(spec: TensorSpec) -> list:
    """The IR types one value of `spec` travels as: a tensor's own, or a list's buffer and length."""
    info = info_of(spec)
    if spec.dtype == dtypes.RESOURCE:  # a TF1 TensorArray's handle: its flow carries the array
        return []
    if spec.dtype != dtypes.VARIANT:
        return [hlo.tensor_type(spec.shape, spec.dtype)]
    if info is None or info.buffer_shape() is None:
        raise LoweringError(f"a variant value of unknown list size or element shape ({info}) cannot be "
                            f"compiled")
    return [hlo.tensor_type(info.buffer_shape(), info.dtype), hlo.tensor_type((), np.int32)]


def leaves(values: list, specs: list, where: str) -> list:
    """`values` flattened for a loop, a branch or a call: each list as its buffer and length,
    materialized by its spec's element shape where it has no buffer yet."""
    flat = []
    for v, spec in zip(values, specs):
        if spec.dtype == dtypes.RESOURCE:  # (lowered_types: a handle travels as nothing)
            continue
        if isinstance(v, ListValue):
            v = v.materialized(info_of(spec).element_shape if info_of(spec) else None, where)
            flat += [v.buffer, v.length]
        else:
            flat.append(v)
    return flat


def rebuild(flat: list, specs: list) -> list:
    """The inverse of `leaves`: list specs take two values, every other spec one."""
    out, i = [], 0
    for spec in specs:
        if spec.dtype == dtypes.RESOURCE:
            out.append(None)
        elif spec.dtype == dtypes.VARIANT:
            info = info_of(spec)
            out.append(ListValue(flat[i], flat[i + 1], info.capacity, info.dtype))
            i += 2
        else:
            out.append(flat[i])
            i += 1
    return out
