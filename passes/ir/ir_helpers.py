"""What the Python IR passes share: finding ops, reading constants and dimension numbers,
removing dead ops.

Every pass here follows the same discipline (see iree-notes, "Python Value of an op you
already erase()d: segfault"): collect the candidate ops first, then rewrite; re-read an
op's operands at the moment it is rewritten; erase only the op being replaced, never
touch it afterwards; and leave producers that became dead to `erase_dead_ops`, which
walks afresh.
"""

from __future__ import annotations

import math
import re

import numpy as np
from iree.compiler import ir

from hlobridge.lowering.signature import SIGNATURE_KEY

REFLECTION = "iree.reflection"  # a function's notes, kept by IREE in the .vmfb for the runtime
# StableHLO ops without side effects or regions: removable once nothing reads them.
PURE_OPS = frozenset(f"stablehlo.{n}" for n in (
    "constant abs add and atan2 broadcast_in_dim ceil clamp compare concatenate convert "
    "cosine divide dot_general dynamic_broadcast_in_dim exponential exponential_minus_one floor "
    "iota is_finite log log_plus_one logistic maximum minimum multiply negate not or pad power remainder "
    "reshape reverse round_nearest_afz round_nearest_even rsqrt select sign sine slice sqrt "
    "subtract tanh transpose xor").split())


def ops_named(module: ir.Module, names) -> list[ir.Operation]:
    """Every op whose name is in `names`, in walk (post-)order, collected before any rewrite."""
    names = frozenset([names] if isinstance(names, str) else names)
    found = []

    def collect(op):
        if op.name in names:
            found.append(op.operation if isinstance(op, ir.OpView) else op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(collect)
    return found


def signed_functions(module: ir.Module) -> list[tuple[ir.Operation, str]]:
    """The functions hlobridge lowered (those whose reflection holds its signature), each with
    the signature's JSON."""
    found = []
    for op in module.body.operations:
        op = op.operation
        if op.name == "func.func" and REFLECTION in op.attributes:
            reflection = ir.DictAttr(op.attributes[REFLECTION])
            if SIGNATURE_KEY in reflection:
                found.append((op, ir.StringAttr(reflection[SIGNATURE_KEY]).value))
    return found


def dict_entries(attr) -> dict:
    """A DictAttr's entries as a dict (to add some and build a new DictAttr)."""
    return {entry.name: entry.attr for entry in ir.DictAttr(attr)}


def note_in_reflection(fn: ir.Operation, notes: dict[str, str]) -> None:
    """Add `notes` (key: text) to `fn`'s reflection, which the runtime reads from the binary."""
    entries = dict_entries(fn.attributes[REFLECTION])
    entries.update((key, ir.StringAttr.get(text)) for key, text in notes.items())
    fn.attributes[REFLECTION] = ir.DictAttr.get(entries)


def producer(value: ir.Value) -> ir.Operation | None:
    """The op that defines `value` (None for a block argument)."""
    owner = value.owner
    return owner.operation if isinstance(owner, ir.OpView) else None


def producer_named(value: ir.Value, name: str) -> ir.Operation | None:
    """producer(value) if it is an op called `name` (e.g. "stablehlo.constant"), else None."""
    op = producer(value)
    return op if op is not None and op.name == name else None


def element_type_name(value: ir.Value) -> str:
    """"f32", "bf16", "i32", "ui8", "i1", ... of a ranked tensor value."""
    return str(ir.RankedTensorType(value.type).element_type)


def shape(value: ir.Value) -> list[int]:
    """The static shape of a ranked tensor value, as a list."""
    return list(ir.RankedTensorType(value.type).shape)


def i64_list(attr) -> list[int]:
    """A DenseI64ArrayAttr (permutation, broadcast_dimensions, ...) as a list of ints."""
    return [int(v) for v in ir.DenseI64ArrayAttr(attr)]


_DOT_DIMENSIONS = ("lhs_batching_dimensions", "rhs_batching_dimensions", "lhs_contracting_dimensions",
                   "rhs_contracting_dimensions")
_CONV_LAYOUT = re.compile(r"\[([^\]]*)\]x\[([^\]]*)\]->\[([^\]]*)\]")


def dot_dimensions(op: ir.Operation) -> dict[str, list[int]]:
    """A dot_general's batching and contracting dimensions by name (`lhs_contracting_dimensions`,
    ...; [] where absent), read from its attribute's text: IREE ships no StableHLO attribute
    classes for Python."""
    text = str(op.attributes["dot_dimension_numbers"])
    found = {}
    for key in _DOT_DIMENSIONS:
        m = re.search(key + r" = \[([0-9, ]*)\]", text)
        found[key] = [int(d) for d in m.group(1).split(",") if d.strip()] if m else []
    return found


def conv_layout(op: ir.Operation) -> tuple[list[str], list[str], list[str]] | None:
    """A convolution's input, kernel and output layouts as dimension letters, from its
    dimension numbers (`[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]`); None if they read otherwise."""
    m = _CONV_LAYOUT.search(str(op.attributes["dimension_numbers"]))
    return None if m is None else tuple([d.strip() for d in part.split(",")] for part in m.groups())


def splat_value(value: ir.Value) -> float | int | bool | None:
    """The scalar a splat constant holds (looking through reshape and broadcast_in_dim of
    one), else None. Floats come back as Python floats with their sign (-0.0 stays -0.0)."""
    op = producer(value)
    while op is not None and op.name in ("stablehlo.reshape", "stablehlo.broadcast_in_dim"):
        op = producer(op.operands[0])
    if op is None or op.name != "stablehlo.constant":
        return None
    if isinstance(ir.RankedTensorType(op.results[0].type).element_type, ir.ComplexType):
        return None  # (the bindings cannot read a complex DenseElementsAttr)
    attr = ir.DenseElementsAttr(op.attributes["value"])
    if not attr.is_splat:
        return None
    scalar = attr.get_splat_value()
    if isinstance(scalar, ir.BoolAttr):
        return bool(scalar.value)
    if isinstance(scalar, ir.FloatAttr):
        return float(scalar.value)
    if isinstance(scalar, ir.IntegerAttr):
        return int(scalar.value)
    return None


def is_negative_zero(x) -> bool:
    """Whether x is the float -0.0 (the identity of float add; the int 0 is not)."""
    return isinstance(x, float) and x == 0.0 and math.copysign(1.0, x) < 0


def is_positive_zero(x) -> bool:
    """Whether x is the float +0.0 (the identity of float subtract; -0.0 and the int 0 are not)."""
    return isinstance(x, float) and x == 0.0 and math.copysign(1.0, x) > 0


def constant_array(value: ir.Value, max_elements: int) -> np.ndarray | None:
    """A constant's value as NumPy (splats stay 0-d, broadcast on use), or None when the
    value is not a constant, holds more than `max_elements`, or has a type NumPy reads
    poorly (bf16 and other non-NumPy floats: MLIR's buffer protocol rejects them)."""
    op = producer_named(value, "stablehlo.constant")
    if op is None or element_type_name(value).startswith("complex"):  # (unreadable, see splat_value)
        return None
    attr = ir.DenseElementsAttr(op.attributes["value"])
    if attr.is_splat:
        scalar = splat_value(value)
        if scalar is None:
            return None
        dtype = numpy_dtype(element_type_name(value))
        return None if dtype is None else np.asarray(scalar, dtype=dtype)
    if int(np.prod(shape(value))) > max_elements or numpy_dtype(element_type_name(value)) is None:
        return None
    return np.array(attr)


_NUMPY_TYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i1": np.bool_,
                "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
                "ui8": np.uint8, "ui16": np.uint16, "ui32": np.uint32, "ui64": np.uint64}


def numpy_dtype(element_type: str):
    """NumPy dtype for the MLIR element types a constant folder may compute in, else None."""
    dtype = _NUMPY_TYPES.get(element_type)
    return np.dtype(dtype) if dtype is not None else None


def replace(op: ir.Operation, value: ir.Value) -> None:
    """Point every use of `op`'s single result at `value`, then erase `op` (do not touch it after)."""
    op.results[0].replace_all_uses_with(value)
    op.erase()


def erase_dead_ops(module: ir.Module) -> int:
    """Erase pure StableHLO ops nobody reads; returns how many. One backward sweep: a
    consumer comes after its producers in walk order, so erasing it first frees them."""
    erased = 0
    for op in reversed(ops_named(module, PURE_OPS)):
        if all(len(list(r.uses)) == 0 for r in op.results):  # op is still alive: only it is erased
            op.erase()
            erased += 1
    return erased
