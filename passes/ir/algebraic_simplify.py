"""Algebraic simplification: rewrites whose result is bit-for-bit what the original computes.

    x * 1, 1 * x, x / 1                      -> x
    x + (-0.0), (-0.0) + x, x - (+0.0)       -> x      (floats; any zero for integers)
    negate(negate(x))                        -> x
    select(p, x, x)                          -> x
    transpose(transpose(x, p), q)            -> transpose(x, p∘q), or x when that is the identity
    reshape(reshape(x)), reshape to x's type -> reshape(x), or x
    broadcast_in_dim(broadcast_in_dim(x))    -> one broadcast_in_dim; an identity one -> x
    convert to the same type                 -> x
    convert(convert(x, wider), back)         -> x      (the widening is exact: bf16->f32->bf16)

Float semantics are kept exactly, as XLA's algebraic simplifier does by default: `x + 0.0`
stays (for x = -0.0 it gives +0.0), `x * 0`, `x - x` and `x / x` stay (NaN and infinity).
The constant may be a splat seen through reshape/broadcast_in_dim. IREE's own
`iree-stablehlo-canonicalize` (the `stablehlo-canonicalize` pass) covers x - 0, x + (-0),
reshape of reshape and same-type converts but not the others; this pass does all of them so
it also stands alone (`hlobridge-opt --passes algebraic-simplify`).
"""

from __future__ import annotations

from iree.compiler import ir

from hlobridge.dialects import stablehlo as hlo

from .ir_helpers import (element_type_name, erase_dead_ops, i64_list, is_negative_zero, is_positive_zero,
                         ops_named, producer_named, replace, shape, splat_value)

_FLOATS = ("bf16", "f16", "f32", "f64")
# Converts A -> B that are exact for every value of A, so converting back gives x again.
_EXACT_FLOAT_WIDENING = {("bf16", "f32"), ("bf16", "f64"), ("f16", "f32"), ("f16", "f64"),
                         ("f32", "f64")}


def _is_one(v) -> bool:
    return v is not None and not isinstance(v, bool) and v == 1


def _is_additive_identity(v, element_type: str, negative: bool) -> bool:
    """-0.0 for add (x + -0.0 == x for every x, -0.0 included), +0.0 for subtract."""
    if v is None or isinstance(v, bool):
        return False
    if element_type in _FLOATS:
        return is_negative_zero(v) if negative else is_positive_zero(v)
    return v == 0


def _int_width(t: str) -> tuple[bool, int] | None:
    """("i32") -> (signed, 32); i1 counts as unsigned 1-bit; None for non-integers."""
    if t.startswith("ui") and t[2:].isdigit():
        return False, int(t[2:])
    if t.startswith("i") and t[1:].isdigit():
        width = int(t[1:])
        return width != 1, width
    return None


def _widens_exactly(src: str, dst: str) -> bool:
    if (src, dst) in _EXACT_FLOAT_WIDENING:
        return True
    a, b = _int_width(src), _int_width(dst)
    if a is None or b is None:
        return False
    (a_signed, a_bits), (b_signed, b_bits) = a, b
    return b_bits > a_bits and not (a_signed and not b_signed)  # signed -> unsigned loses negatives


# -- the rules: op -> replacement Value (built before `op`) or None --------------------------

def _multiply(op):
    x, y = op.operands
    if _is_one(splat_value(y)):
        return x
    if _is_one(splat_value(x)):
        return y
    return None


def _divide(op):
    x, y = op.operands
    return x if _is_one(splat_value(y)) else None


def _add(op):
    x, y = op.operands
    et = element_type_name(op.results[0])
    if _is_additive_identity(splat_value(y), et, negative=True):
        return x
    if _is_additive_identity(splat_value(x), et, negative=True):
        return y
    return None


def _subtract(op):
    x, y = op.operands
    return x if _is_additive_identity(splat_value(y), element_type_name(x), negative=False) else None


def _negate(op):
    inner = producer_named(op.operands[0], "stablehlo.negate")
    return inner.operands[0] if inner is not None else None


def _select(op):
    _, on_true, on_false = op.operands
    return on_true if on_true == on_false else None


def _transpose(op):
    perm = i64_list(op.attributes["permutation"])
    x = op.operands[0]
    inner = producer_named(x, "stablehlo.transpose")
    if inner is not None:  # result dim i = inner's dim perm[i] = source dim inner_perm[perm[i]]
        inner_perm = i64_list(inner.attributes["permutation"])
        perm = [inner_perm[p] for p in perm]
        x = inner.operands[0]
    if perm == list(range(len(perm))):
        return x
    return hlo.transpose(x, perm) if inner is not None else None


def _reshape(op):
    x = op.operands[0]
    inner = producer_named(x, "stablehlo.reshape")
    if inner is not None:
        x = inner.operands[0]
    if x.type == op.results[0].type:
        return x
    return hlo.reshape(x, shape(op.results[0])) if inner is not None else None


def _broadcast_in_dim(op):
    dims = i64_list(op.attributes["broadcast_dimensions"])
    x = op.operands[0]
    inner = producer_named(x, "stablehlo.broadcast_in_dim")
    if inner is not None:  # source dim i -> inner dim inner_dims[i] -> result dim dims[inner_dims[i]]
        dims = [dims[d] for d in i64_list(inner.attributes["broadcast_dimensions"])]
        x = inner.operands[0]
    if x.type == op.results[0].type and dims == list(range(len(dims))):
        return x
    return hlo.broadcast_in_dim(x, shape(op.results[0]), dims) if inner is not None else None


def _convert(op):
    x = op.operands[0]
    if x.type == op.results[0].type:
        return x
    inner = producer_named(x, "stablehlo.convert")
    if inner is not None:
        source = inner.operands[0]
        if source.type == op.results[0].type and _widens_exactly(element_type_name(source),
                                                                 element_type_name(x)):
            return source
    return None


RULES = {"stablehlo.multiply": _multiply, "stablehlo.divide": _divide, "stablehlo.add": _add,
         "stablehlo.subtract": _subtract, "stablehlo.negate": _negate, "stablehlo.select": _select,
         "stablehlo.transpose": _transpose, "stablehlo.reshape": _reshape,
         "stablehlo.broadcast_in_dim": _broadcast_in_dim, "stablehlo.convert": _convert}


def algebraic_simplify(module: ir.Module) -> int:
    """Apply the rules to every op once, in program order, then drop what became dead.
    Returns the number of ops rewritten. Chains (negate(negate(negate x)), three
    transposes) collapse in one sweep: a rewrite feeds the next op's operands."""
    rewritten = 0
    for op in ops_named(module, RULES):
        with ir.InsertionPoint(op), op.location:
            replacement = RULES[op.name](op)
        if replacement is not None:
            replace(op, replacement)
            rewritten += 1
    erase_dead_ops(module)
    return rewritten
