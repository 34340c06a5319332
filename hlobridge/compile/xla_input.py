"""What XLA takes: a lowered module with IREE's own constructs replaced by plain StableHLO.

hlobridge's lowering writes a few things only IREE understands, and XLA rejects each of them:

- `flow.dispatch.region`s, hlobridge's fusion groups (passes/ir/fusion.py): dissolved, XLA
  fuses by itself (the Session's XLA clusters are not even given the fusion stage);
- `tensor.empty` (IREE's StableHLO folders make one of an empty tensor, a zero-sized batch):
  a constant of zeros (its contents are undefined anyway);
- host scalars: `tensor.extract` of a 0-d tensor and `arith` integer ops on the result, which
  IREE computes on the host beside a loop's bound (the counted-loop check of ops/control/flow.py):
  each becomes the same arithmetic on 0-d tensors (stablehlo.convert, add, compare, ...);
- `cf.assert` (the loop limit, CheckNumerics, random ops' argument checks; device_checks.py):
  StableHLO has no op that fails a call, so each check becomes one more i1 result of the
  function (a check inside a While's body or an If/Case branch first becomes a flag that op
  carries out: a loop ANDs it over its iterations), and its message goes into the reflection
  under `hlobridge.checks`; the PJRT
  module reads those results after each call and raises the error IREE's failure would
  (runtime/pjrt.py). The check then happens after the call, not inside it: a loop over the
  iteration limit still runs to its end before the error;
- `iree.abi.output = N` on a variable argument (passes/ir/tie_variables.py, written in place):
  becomes `tf.aliasing_output = N`, XLA's input/output alias, so the argument's buffer is
  donated and holds the new value;
- with `exact_f32`, f32 dots and convolutions of DEFAULT precision get HIGHEST: XLA:GPU computes
  DEFAULT f32 in TF32 on Ampere and later, TensorFlow (and IREE) in f32;
- `iree.reflection` (the signature and notes the runtime reads): kept as a function attribute
  under `hlobridge.reflection` (XLA ignores attributes it does not know; the portable
  artifact keeps it, so a saved module describes itself).

The result is printed in MLIR's generic op form: jaxlib's MLIR build parses it whatever its
pretty-printing syntax is (compile/xla.py).
"""

from __future__ import annotations

import json

from iree.compiler import ir

from hlobridge.passes.ir.dispatch_regions import without_regions
from hlobridge.passes.ir.ir_helpers import REFLECTION, dict_entries
from hlobridge.passes.ir.tie_variables import OUTPUT_STORAGE

from ..errors import CompileError

XLA_REFLECTION = "hlobridge.reflection"
CHECKS_KEY = "hlobridge.checks"
XLA_ALIAS = "tf.aliasing_output"
# arith integer ops on host scalars -> the StableHLO op on 0-d tensors (cmpi: a compare)
_ARITH = {"arith.addi": "stablehlo.add", "arith.subi": "stablehlo.subtract", "arith.muli": "stablehlo.multiply",
          "arith.andi": "stablehlo.and", "arith.ori": "stablehlo.or", "arith.xori": "stablehlo.xor"}
_CMPI = ("EQ", "NE", "LT", "LE", "GT", "GE", "LT", "LE", "GT", "GE")  # arith.cmpi predicate order
_UNSIGNED_CMPI = range(6, 10)


def for_xla(source: str | bytes, exact_f32: bool = True) -> str:
    """The module text (or bytecode) XLA can take, in generic op form (see the module docstring)."""
    plain = without_regions(source)
    source = plain if plain is not None else source
    with ir.Context() as ctx, ir.Location.unknown():
        ctx.allow_unregistered_dialects = False
        module = ir.Module.parse(source)
        for op in module.body.operations:
            op = op.operation
            if op.name == "func.func" and op.regions[0].blocks:
                _empty_tensors_to_constants(op)
                _host_scalars_to_tensors(op)
                _nested_checks_out(op)
                _checks_to_results(op)
                _attributes_for_xla(op)
                if exact_f32:
                    _exact_f32_products(op)
        try:
            module.operation.verify()
        except ir.MLIRError as e:
            raise CompileError(f"the module for XLA does not verify: {e}") from None
        _refuse_foreign_ops(module)
        return module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)


def _walk(fn: ir.Operation) -> list[ir.Operation]:
    found = []
    fn.walk(lambda op: (found.append(op.operation), ir.WalkResult.ADVANCE)[1])
    return found


def _create(name: str, operands, result_type, attrs=None) -> ir.Value:
    return ir.Operation.create(name, results=[result_type], operands=list(operands), attributes=attrs or {}).result


def _scalar_tensor(t: ir.Type) -> ir.RankedTensorType:
    return ir.RankedTensorType.get([], t)


def _zeros(t: ir.RankedTensorType) -> ir.Value:
    """A splat constant of zeros of type `t` (complex: stablehlo.complex of two)."""
    et = t.element_type
    if isinstance(et, ir.ComplexType):
        part = ir.RankedTensorType.get(t.shape, ir.ComplexType(et).element_type)
        return _create("stablehlo.complex", [_zeros(part), _zeros(part)], t)
    zero = ir.IntegerAttr.get(et, 0) if isinstance(et, ir.IntegerType) else ir.FloatAttr.get(et, 0.0)
    return _create("stablehlo.constant", [], t, {"value": ir.DenseElementsAttr.get_splat(t, zero)})


def _empty_tensors_to_constants(fn: ir.Operation) -> None:
    """tensor.empty -> stablehlo.constant of zeros (a splat: no bytes however large)."""
    for op in [op for op in _walk(fn) if op.name == "tensor.empty"]:
        t = ir.RankedTensorType(op.results[0].type)
        with ir.InsertionPoint(op), op.location:
            new = _zeros(t)
        op.results[0].replace_all_uses_with(new)
        op.erase()


def _host_scalars_to_tensors(fn: ir.Operation) -> None:
    """tensor.extract / arith.* / cf.assert of an i1 scalar -> the same on 0-d tensors."""
    host = [op for op in _walk(fn) if op.name == "tensor.extract" or op.name.startswith("arith.")]
    tensors: dict = {}  # a host scalar Value -> its 0-d tensor

    def as_tensor(v):
        return tensors.get(v, v)

    for op in host:
        with ir.InsertionPoint(op), op.location:
            result = op.results[0]
            t = _scalar_tensor(result.type)
            if op.name == "tensor.extract":
                if ir.RankedTensorType(op.operands[0].type).rank != 0:
                    raise CompileError("XLA: a tensor.extract of a non-scalar tensor cannot be expressed")
                new = _create("stablehlo.reshape", [op.operands[0]], t)
            elif op.name == "arith.constant":
                value = ir.IntegerAttr(op.attributes["value"]).value
                width = ir.IntegerType(result.type).width
                dense = ir.DenseElementsAttr.get_splat(t, ir.IntegerAttr.get(result.type, value if width > 1 else value & 1))
                new = _create("stablehlo.constant", [], t, {"value": dense})
            elif op.name == "arith.extsi":
                new = _create("stablehlo.convert", [as_tensor(op.operands[0])], t)
            elif op.name in _ARITH:
                new = _create(_ARITH[op.name], [as_tensor(v) for v in op.operands], t)
            elif op.name == "arith.cmpi":
                p = ir.IntegerAttr(op.attributes["predicate"]).value
                direction = ir.Attribute.parse(f"#stablehlo<comparison_direction {_CMPI[p]}>")
                kind = ir.Attribute.parse(f"#stablehlo<comparison_type {'UNSIGNED' if p in _UNSIGNED_CMPI else 'SIGNED'}>")
                new = _create("stablehlo.compare", [as_tensor(v) for v in op.operands], _scalar_tensor(result.type),
                              {"comparison_direction": direction, "compare_type": kind})
            else:
                raise CompileError(f"XLA: host scalar op {op.name} has no StableHLO form here")
            tensors[result] = new
    for op in _walk(fn):  # the asserts read the tensors now
        if op.name == "cf.assert" and op.operands[0] in tensors:
            op.operands[0] = tensors[op.operands[0]]
    for op in reversed(host):
        if all(len(list(r.uses)) == 0 for r in op.results):
            op.erase()


_BRANCHING = ("stablehlo.if", "stablehlo.case")
def _i1() -> ir.RankedTensorType:
    return _scalar_tensor(ir.IntegerType.get_signless(1))


def _flag(a: ir.Operation) -> ir.Value:
    """The check's flag as a 0-d i1 tensor, made before the check."""
    flag = a.operands[0]
    if ir.RankedTensorType(flag.type).rank != 0:
        with ir.InsertionPoint(a), a.location:
            flag = _create("stablehlo.reshape", [flag], _i1())
    return flag


def _nested_checks_out(fn: ir.Operation) -> None:
    """Checks inside a While's body or an If/Case branch -> flags the op returns, each checked by
    a cf.assert after it (innermost ops first, until every check is at the function's top)."""
    while True:
        nested = [op for op in _walk(fn) if op.name == "cf.assert" and op.parent.operation != fn]
        if not nested:
            return
        holder = nested[0].parent.operation
        if holder.name != "stablehlo.while" and holder.name not in _BRANCHING:
            raise CompileError(f"XLA: a check (cf.assert) inside {holder.name} cannot be returned")
        checks = [a for a in nested if a.parent.operation == holder]
        _carry_checks_out(holder, checks)


def _carry_checks_out(holder: ir.Operation, checks: list) -> None:
    """`holder` again with one more i1 result per check (see _nested_checks_out)."""
    is_loop = holder.name == "stablehlo.while"
    regions = list(holder.regions)
    in_region = []
    for a in checks:
        index = next(i for i, r in enumerate(regions) if any(b == a.block for b in r.blocks))
        if is_loop and index == 0:
            raise CompileError("XLA: a check (cf.assert) in a While's condition cannot be returned")
        in_region.append(index)
    k = len(checks)
    messages = [ir.StringAttr(a.attributes["msg"]).value for a in checks]
    with ir.InsertionPoint(holder), holder.location:
        true = ir.DenseElementsAttr.get_splat(_i1(), ir.IntegerAttr.get(ir.IntegerType.get_signless(1), 1))
        inits = [_create("stablehlo.constant", [], _i1(), {"value": true}) for _ in range(k)] if is_loop else []
        new = ir.Operation.create(holder.name, results=[*(r.type for r in holder.results), *[_i1()] * k],
                                  operands=[*holder.operands, *inits],
                                  attributes={a.name: a.attr for a in holder.attributes}, regions=len(regions))
    for old, region in zip(regions, new.regions):
        old.blocks[0].append_to(region)
    flags = {id(a): _flag(a) for a in checks}
    for i, region in enumerate(new.regions):
        block = region.blocks[0]
        if is_loop:
            carried = [block.add_argument(_i1(), holder.location) for _ in range(k)]
            if i == 0:
                continue
        ret = block.operations[len(block.operations) - 1]
        out = []
        with ir.InsertionPoint(ret), ret.location:
            for j, a in enumerate(checks):
                mine = in_region[j] == i
                if is_loop:
                    out.append(_create("stablehlo.and", [carried[j], flags[id(a)]], _i1()) if mine else carried[j])
                else:
                    out.append(flags[id(a)] if mine else _create("stablehlo.constant", [], _i1(), {"value": true}))
            ir.Operation.create(ret.name, operands=[*ret.operands, *out])
        ret.erase()
    for a in checks:
        a.erase()
    n = len(holder.results)
    for old, value in zip(holder.results, new.results):
        old.replace_all_uses_with(value)
    with ir.InsertionPoint(holder), holder.location:
        for j, message in enumerate(messages):
            ir.Operation.create("cf.assert", operands=[new.results[n + j]],
                                attributes={"msg": ir.StringAttr.get(message)})
    holder.erase()


def _checks_to_results(fn: ir.Operation) -> None:
    """Each cf.assert -> one more i1[] result of the function; its message in the reflection."""
    asserts = [op for op in _walk(fn) if op.name == "cf.assert"]
    if not asserts:
        return
    block = fn.regions[0].blocks[0]
    if any(op.parent.operation != fn for op in asserts):
        raise CompileError("XLA: a check (cf.assert) inside a loop or branch cannot be returned")
    ret = block.operations[len(block.operations) - 1]
    flags, messages = [], []
    for op in asserts:
        flag = op.operands[0]
        with ir.InsertionPoint(ret), op.location:
            if not isinstance(flag.type, ir.RankedTensorType):
                raise CompileError("XLA: a check of a host scalar that was not converted")
            if ir.RankedTensorType(flag.type).rank != 0:
                flag = _create("stablehlo.reshape", [flag], _scalar_tensor(ir.IntegerType.get_signless(1)))
        flags.append(flag)
        messages.append(ir.StringAttr(op.attributes["msg"]).value)
        op.erase()
    operands = [*ret.operands, *flags]
    with ir.InsertionPoint(ret), ret.location:
        ir.Operation.create(ret.name, operands=operands)
    ret.erase()
    ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    fn.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get(ftype.inputs, [*ftype.results, *(f.type for f in flags)]))
    if "res_attrs" in fn.attributes:
        res = list(ir.ArrayAttr(fn.attributes["res_attrs"]))
        fn.attributes["res_attrs"] = ir.ArrayAttr.get(res + [ir.DictAttr.get({}) for _ in flags])
    if REFLECTION in fn.attributes:
        entries = dict_entries(fn.attributes[REFLECTION])
        entries[CHECKS_KEY] = ir.StringAttr.get(json.dumps(messages))
        fn.attributes[REFLECTION] = ir.DictAttr.get(entries)


def _attributes_for_xla(fn: ir.Operation) -> None:
    """iree.abi.output -> tf.aliasing_output; iree.reflection -> hlobridge.reflection."""
    if "arg_attrs" in fn.attributes:
        attrs = []
        for a in ir.ArrayAttr(fn.attributes["arg_attrs"]):
            entries = dict_entries(a)
            if OUTPUT_STORAGE in entries:
                index = ir.IntegerAttr(entries.pop(OUTPUT_STORAGE)).value
                entries[XLA_ALIAS] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), index)
            attrs.append(ir.DictAttr.get(entries))
        fn.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)
    if REFLECTION in fn.attributes:
        fn.attributes[XLA_REFLECTION] = fn.attributes[REFLECTION]
        del fn.attributes[REFLECTION]


_MATMUL_OPS = ("stablehlo.dot_general", "stablehlo.convolution", "stablehlo.dot")


def _exact_f32_products(fn: ir.Operation) -> None:
    """f32 dots and convolutions whose precision is DEFAULT (or unsaid) -> HIGHEST."""
    highest = ir.Attribute.parse("[#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>]")
    for op in _walk(fn):
        if op.name not in _MATMUL_OPS or str(ir.RankedTensorType(op.operands[0].type).element_type) != "f32":
            continue
        current = str(op.attributes["precision_config"]) if "precision_config" in op.attributes else ""
        if "HIGH" not in current:
            op.attributes["precision_config"] = highest


def _refuse_foreign_ops(module: ir.Module) -> None:
    """Name the first op XLA would not know (flow.*, hal.*, util.*, ...), before XLA does."""
    known = ("stablehlo.", "chlo.", "func.")
    foreign = sorted({op.name for op in _walk(module.operation)
                      if not op.name.startswith(known) and op.name != "builtin.module"})
    if foreign:
        raise CompileError(f"XLA cannot take op(s) {', '.join(foreign)} (IREE-only)")
