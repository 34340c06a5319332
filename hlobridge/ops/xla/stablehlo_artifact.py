"""StableHLO portable artifacts (what JAX serializes into XlaCallModule): reading them, and
specializing their shapes to the ones fed.

Reading. An artifact is MLIR bytecode of the VHLO dialect (versioned StableHLO). StableHLO's
deserializer is the pass pair `vhlo-to-version{target=current}`, `vhlo-legalize-to-stablehlo`;
IREE 3.13 links both (its input pipeline runs them on VHLO input) but registers neither by
name, so neither the Python PassManager nor iree-opt can run them. `deserialize` therefore runs
IREE's own input pipeline in the iree-compile subprocess (a crash stays there) and keeps the IR
that MLIR's pass instrumentation prints after `vhlo-legalize-to-stablehlo`
(`--mlir-print-ir-after-all --mlir-print-ir-tree-dir`): StableHLO text, exactly what StableHLO's
own `deserializePortableArtifact` returns. A VHLO version newer than IREE's StableHLO is an
error from that pass. One subprocess per distinct module (cached by content).

Specializing. JAX exports with polymorphic shapes (`polymorphic_shapes=["(b, ...)"]`) have
`?` dims, dimension arithmetic on `get_dimension_size` and `shape_assertion` custom calls;
IREE cannot compile them (`dynamic_broadcast_in_dim` to a partly dynamic shape fails to
legalize). XLA refines them to the actual argument shapes first (StableHLO's
`stablehlo-refine-shapes`, also not registered in IREE), and so does `specialize`: it gives
`main` the fed (static) argument types, inlines every call, lets MLIR's canonicalizer fold the
dimension arithmetic to constants, then sets each remaining dynamic result type from its
operands (`_refined_types`), and repeats until every type is static. Shape assertions must then
be constants: true ones are dropped, a false one is the error JAX would raise. Anything it
cannot resolve is an error naming the op, never a guess.
"""

from __future__ import annotations

import functools
import hashlib
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np
from iree.compiler import ir, passmanager

from ... import dtypes

_DESERIALIZED = "*_vhlo-legalize-to-stablehlo.mlir"
_TIMEOUT_S = 300


class ArtifactError(Exception):
    """The artifact cannot be read or specialized; the message says why (the caller names the node)."""


# -- reading ------------------------------------------------------------------------------------


def deserialize(artifact: bytes) -> str:
    """A StableHLO portable artifact (VHLO bytecode), or StableHLO bytecode or text (which TF's
    XlaCallModule also reads) -> StableHLO text."""
    return _deserialize(hashlib.sha256(artifact).hexdigest(), artifact)


@functools.lru_cache(maxsize=64)
def _deserialize(digest: str, artifact: bytes) -> str:
    from iree.compiler.tools.binaries import find_tool
    with tempfile.TemporaryDirectory(prefix="hlobridge-vhlo-") as tmp:
        source = Path(tmp) / "module.mlir"  # MLIR tells bytecode from text by its magic number
        source.write_bytes(artifact)
        cmd = [find_tool("iree-compile"), "--iree-input-type=stablehlo", "--compile-to=input",
               "--mlir-print-ir-after-all", f"--mlir-print-ir-tree-dir={tmp}/tree", str(source),
               "-o", str(Path(tmp) / "input.mlir")]
        try:
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ArtifactError(f"reading the module took over {_TIMEOUT_S} s") from None
        found = sorted(Path(tmp, "tree").glob(f"*/{_DESERIALIZED}"))
        if not found:
            raise ArtifactError(f"IREE could not read the StableHLO module: {_first_error(run)}")
        return found[0].read_text()


def _first_error(run: subprocess.CompletedProcess) -> str:
    """iree-compile's first error message, without the temporary file's location."""
    for line in run.stderr.splitlines():
        if "error: " in line:
            return line.split("error: ", 1)[1].strip()
    return f"iree-compile exited with {run.returncode}"


# -- specializing -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Specialized:
    """A module with static shapes: `main` takes the given arguments and returns `results`."""

    text: str
    results: tuple  # ((shape tuple, numpy dtype), ...)


def specialize(text: str, args: tuple, platform_index: int | None, check_shapes: bool = True) -> Specialized:
    """`text`'s main specialized to `args` ((shape, dtype) per argument, after the platform index
    argument that multi-platform exports take, which `platform_index` fills); without
    `check_shapes`, JAX's shape assertions are dropped unchecked."""
    return _specialize(text, tuple((tuple(s), np.dtype(d).str) for s, d in args), platform_index, check_shapes)


@functools.lru_cache(maxsize=256)
def _specialize(text: str, args: tuple, platform_index: int | None, check_shapes: bool) -> Specialized:
    with ir.Context() as context, ir.Location.unknown():
        context.allow_unregistered_dialects = False
        try:
            module = ir.Module.parse(text)
        except ir.MLIRError as e:
            raise ArtifactError(f"the deserialized module does not parse: {_first(e)}") from None
        main = _main(module)
        _check_signature(main, args, platform_index)
        if platform_index is not None:
            _bind_platform_index(main, platform_index)
        _composites_to_calls(module)
        _run(module, "builtin.module(inline,symbol-dce)")
        _retype_arguments(main, args)
        for _ in range(8):
            _run(module, "builtin.module(inline,func.func(canonicalize,iree-stablehlo-canonicalize,cse))")
            changed = _rewrite_dynamic_reduce_windows(main.regions[0].blocks[0])
            changed |= _refine_block(main.regions[0].blocks[0])
            _results_from_return(main)
            if not changed:
                break
        _resolve_shape_assertions(main, check_shapes)
        _check_static(main)
        _finish_signature(main)
        for fn in module.body.operations:  # what main no longer calls (inlined reducers) goes
            if fn.operation != main:
                fn.operation.attributes["sym_visibility"] = ir.StringAttr.get("private")
        _run(module, "builtin.module(func.func(canonicalize,cse),symbol-dce)")
        try:
            module.operation.verify()
        except ir.MLIRError as e:
            raise ArtifactError(f"the specialized module does not verify: {_first(e)}") from None
        results = tuple((tuple(t.shape), _np_dtype(t.element_type))
                        for t in map(ir.RankedTensorType, _function_type(main).results))
        return Specialized(module.operation.get_asm(), results)


def _first(e: ir.MLIRError) -> str:
    diags = getattr(e, "error_diagnostics", None) or []
    return f"{diags[0].message}" if diags else str(e).splitlines()[0]


def _run(module, pipeline: str) -> None:
    try:
        passmanager.PassManager.parse(pipeline).run(module.operation)
    except ir.MLIRError as e:
        raise ArtifactError(f"{pipeline} failed: {_first(e)}") from None


def _main(module):
    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main":
            return op.operation
    raise ArtifactError("the module has no function 'main'")


def _function_type(fn) -> ir.FunctionType:
    return ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)


_BY_MLIR_NAME = {dtypes.mlir_name(d): np.dtype(d) for d in (
    np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int8, np.int16, np.int32, np.int64, np.uint8,
    np.uint16, np.uint32, np.uint64, np.bool_, np.complex64, np.complex128)}


def _np_dtype(element_type) -> np.dtype:
    dtype = _BY_MLIR_NAME.get(str(element_type))
    if dtype is None:
        raise ArtifactError(f"element type {element_type} has no TensorFlow dtype")
    return np.dtype(dtype)


def _check_signature(main, args, platform_index) -> None:
    types = list(_function_type(main).inputs)
    if platform_index is not None:
        types = types[1:]
    bad = [t for t in [*types, *_function_type(main).results] if not isinstance(t, ir.RankedTensorType)]
    if any("token" in str(t) for t in bad):
        raise ArtifactError("main takes or returns a !stablehlo.token (effects): not supported")
    if bad:
        raise ArtifactError(f"main has argument or result types hlobridge cannot take: {', '.join(map(str, bad))}")
    if len(types) != len(args):
        raise ArtifactError(f"main takes {len(types)} argument(s), the node gives {len(args)}")
    for i, (t, (shape, dtype)) in enumerate(zip(types, args)):
        t = ir.RankedTensorType(t)
        if _np_dtype(t.element_type) != np.dtype(dtype):
            raise ArtifactError(f"argument {i}: main expects {t}, got {dtypes.name(np.dtype(dtype))}")
        dims = [None if t.is_dynamic_dim(d) else t.shape[d] for d in range(t.rank)]
        if len(dims) != len(shape) or any(d is not None and d != s for d, s in zip(dims, shape)):
            raise ArtifactError(f"argument {i}: main expects {t}, got shape {list(shape)}")


def _bind_platform_index(main, index: int) -> None:
    """Multi-platform exports take the platform's index as a leading tensor<i32>: a constant here."""
    block = main.regions[0].blocks[0]
    with ir.InsertionPoint.at_block_begin(block):
        attr = ir.DenseElementsAttr.get(np.array(index, np.int32))
        const = ir.Operation.create("stablehlo.constant", results=[attr.type], attributes={"value": attr})
    block.arguments[0].replace_all_uses_with(const.result)
    block.erase_argument(0)
    ft = _function_type(main)
    main.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(list(ft.inputs)[1:], ft.results))
    _drop_attrs(main, ("arg_attrs",))


def _drop_attrs(fn, names) -> None:
    for name in names:
        if name in fn.attributes:
            del fn.attributes[name]


def _composites_to_calls(module) -> None:
    """stablehlo.composite (JAX writes chlo.top_k as one) -> a call of its decomposition, which
    the inliner then inlines: a composite's operand types must equal its decomposition's, so it
    cannot stay once the arguments' types are specialized (StableHLO's
    stablehlo-legalize-composite-to-call, which IREE does not register by name)."""
    composites = []

    def visit(op):
        if op.name == "stablehlo.composite":
            composites.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op in composites:
        callee = ir.FlatSymbolRefAttr(op.attributes["decomposition"]).value
        with ir.InsertionPoint(op), op.location:
            call = ir.Operation.create("func.call", results=[r.type for r in op.results], operands=list(op.operands),
                                       attributes={"callee": ir.FlatSymbolRefAttr.get(callee)})
        for old, new in zip(op.results, call.results):
            old.replace_all_uses_with(new)
        op.erase()


def _retype_arguments(main, args) -> None:
    block = main.regions[0].blocks[0]
    for arg, (shape, dtype) in zip(block.arguments, args):
        arg.set_type(ir.RankedTensorType.get(list(shape), ir.RankedTensorType(arg.type).element_type))
    ft = _function_type(main)
    main.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get([a.type for a in block.arguments], ft.results))


def _results_from_return(main) -> None:
    """main's result types from what it returns (refined types flow into its return)."""
    ret = list(main.regions[0].blocks[0].operations)[-1]
    ft = _function_type(main)
    main.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(ft.inputs, [v.type for v in ret.operands]))


def _finish_signature(main) -> None:
    """JAX's arg/result attributes (jax.result_info, shardings) dropped."""
    _results_from_return(main)
    _drop_attrs(main, ("arg_attrs", "res_attrs"))


# -- shape refinement ---------------------------------------------------------------------------


def _is_static(t) -> bool:
    return not isinstance(t, ir.ShapedType) or ir.ShapedType(t).has_static_shape


def _refine_block(block) -> bool:
    """Set static result types where the operands now decide them; True if anything changed."""
    changed = False
    for op in block.operations:
        op = op.operation
        if op.name == "stablehlo.while":
            changed |= _refine_while(op)
        elif op.name in ("stablehlo.case", "stablehlo.if"):
            changed |= _refine_branches(op)
        if all(_is_static(r.type) for r in op.results):
            continue
        new = _refined_types(op)
        if new is not None and all(_is_static(t) for t in new):
            for r, t in zip(op.results, new):
                r.set_type(t)
            changed = True
    return changed


def _refine_while(op) -> bool:
    changed = False
    for region in op.regions:
        block = region.blocks[0]
        for arg, operand in zip(block.arguments, op.operands):
            if arg.type != operand.type and _is_static(operand.type):
                arg.set_type(operand.type)
                changed = True
        changed |= _refine_block(block)
    return changed


def _refine_branches(op) -> bool:
    changed = False
    for region in op.regions:
        changed |= _refine_block(region.blocks[0])
    return changed


def _terminator_types(op) -> list:
    return [v.type for v in list(op.regions[0].blocks[0].operations)[-1].operands]


_ELEMENTWISE = set("""abs add and atan2 cbrt ceil clamp compare complex convert cosine count_leading_zeros divide
    exponential exponential_minus_one floor imag is_finite log log_plus_one logistic maximum minimum multiply
    negate not or popcnt power real remainder round_nearest_afz round_nearest_even rsqrt select shift_left
    bitcast_convert shift_right_arithmetic shift_right_logical sign sine sqrt subtract tan tanh xor reduce_precision
    optimization_barrier map""".split())


def _refined_types(op) -> list | None:
    """The op's result types with dims its operands decide; None when no rule applies."""
    name = op.name.split(".", 1)[1] if op.name.startswith(("stablehlo.", "chlo.")) else None
    operands = [v.type for v in op.operands]
    results = [ir.RankedTensorType(r.type) for r in op.results]
    if op.name == "stablehlo.while":
        return operands
    if op.name in ("stablehlo.case", "stablehlo.if"):
        return _terminator_types(op)
    if name in ("dynamic_broadcast_in_dim", "dynamic_reshape", "dynamic_iota"):
        shape = _constant_ints(op.operands[0 if name == "dynamic_iota" else 1])
        return None if shape is None else [ir.RankedTensorType.get(shape, results[0].element_type)]
    if name == "real_dynamic_slice":
        start, limit, strides = (_constant_ints(v) for v in list(op.operands)[1:])
        if None in (start, limit, strides):
            return None
        return [ir.RankedTensorType.get([max(0, -(-(hi - lo) // st)) for lo, hi, st in zip(start, limit, strides)],
                                        results[0].element_type)]
    if name in _ELEMENTWISE or op.name.startswith("chlo.") and len(results) == 1:
        return [_merge_dims(r, [ir.RankedTensorType(t) for t in operands if ir.RankedTensorType(t).rank == r.rank])
                for r in results]
    if name == "dot_general":
        return [_dot_general_type(op, results[0])]
    if name == "reduce":
        drop = set(ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
        n = len(results)
        return [ir.RankedTensorType.get([d for i, d in enumerate(ir.RankedTensorType(t).shape) if i not in drop],
                                        r.element_type) for t, r in zip(operands[:n], results)]
    if name == "convolution":
        return [_convolution_type(op, results[0])]
    if name == "reduce_window":
        return [_reduce_window_type(op, ir.RankedTensorType(t), r) for t, r in zip(operands, results)]
    if name in ("sort", "scatter"):
        return operands[:len(results)]
    return _inferred_types(op)


def _merge_dims(result, operands) -> ir.RankedTensorType:
    dims = []
    for i in range(result.rank):
        sizes = {t.shape[i] for t in operands if not t.is_dynamic_dim(i)}
        dims.append(sizes.pop() if len(sizes) == 1 else ir.ShapedType.get_dynamic_size())
    return ir.RankedTensorType.get(dims, result.element_type)


def _dot_general_type(op, result) -> ir.RankedTensorType:
    text = str(op.attributes["dot_dimension_numbers"])
    dims = {k: [int(x) for x in re.findall(r"\d+", v)] for k, v in
            re.findall(r"(\w+_dimensions) = \[([\d, ]*)\]", text)}
    lhs, rhs = (ir.RankedTensorType(v.type).shape for v in op.operands)
    lb, rb = dims.get("lhs_batching_dimensions", []), dims.get("rhs_batching_dimensions", [])
    lc, rc = dims.get("lhs_contracting_dimensions", []), dims.get("rhs_contracting_dimensions", [])
    shape = ([lhs[i] for i in lb] + [d for i, d in enumerate(lhs) if i not in lb + lc]
             + [d for i, d in enumerate(rhs) if i not in rb + rc])
    return ir.RankedTensorType.get(shape, result.element_type)


def _window_attr(op, name: str, rank: int, default: int) -> list:
    return list(ir.DenseI64ArrayAttr(op.attributes[name])) if name in op.attributes else [default] * rank


def _reduce_window_type(op, operand, result) -> ir.RankedTensorType:
    """XLA's window arithmetic: the dilated, padded input over the dilated window, by the strides."""
    rank = operand.rank
    window = _window_attr(op, "window_dimensions", rank, 1)
    strides, base = _window_attr(op, "window_strides", rank, 1), _window_attr(op, "base_dilations", rank, 1)
    dilations = _window_attr(op, "window_dilations", rank, 1)
    padding = _elements(op.attributes["padding"]).reshape(rank, 2) if "padding" in op.attributes \
        else np.zeros((rank, 2), np.int64)
    dims = list(result.shape)
    for i in range(rank):
        if result.is_dynamic_dim(i) and not operand.is_dynamic_dim(i):
            padded = (operand.shape[i] - 1) * base[i] + 1 + int(padding[i, 0]) + int(padding[i, 1])
            extent = (window[i] - 1) * dilations[i] + 1
            dims[i] = (padded - extent) // strides[i] + 1 if padded >= extent else 0
    return ir.RankedTensorType.get(dims, result.element_type)


def _rewrite_dynamic_reduce_windows(block) -> bool:
    """JAX's custom_call @stablehlo.dynamic_reduce_window(operands..., inits..., window dims,
    strides, base dilations, window dilations, padding) {called_computations = [@reducer]}
    (polymorphic reduce_window, cumsum) -> stablehlo.reduce_window, once the window operands
    are constants; the reducer is called from its body and inlined by the next round."""
    changed = False
    for op in list(block.operations):
        op = op.operation
        if op.name != "stablehlo.custom_call" or \
                ir.StringAttr(op.attributes["call_target_name"]).value != "stablehlo.dynamic_reduce_window":
            continue
        window = [_constant_ints(v) for v in list(op.operands)[-5:]]
        if any(w is None for w in window):
            continue
        n = (len(op.operands) - 5) // 2
        operands, inits = list(op.operands)[:n], list(op.operands)[n:2 * n]
        rank = ir.RankedTensorType(operands[0].type).rank
        reducer = ir.FlatSymbolRefAttr(ir.ArrayAttr(op.attributes["called_computations"])[0])
        with ir.InsertionPoint(op), op.location:
            new = ir.Operation.create("stablehlo.reduce_window", results=[r.type for r in op.results],
                                      operands=operands + inits, regions=1, attributes={
                                          "window_dimensions": ir.DenseI64ArrayAttr.get(window[0]),
                                          "window_strides": ir.DenseI64ArrayAttr.get(window[1]),
                                          "base_dilations": ir.DenseI64ArrayAttr.get(window[2]),
                                          "window_dilations": ir.DenseI64ArrayAttr.get(window[3]),
                                          "padding": ir.DenseIntElementsAttr.get(
                                              np.array(window[4], np.int64).reshape(rank, 2))})
            scalars = [v.type for v in inits]
            body = new.regions[0].blocks.append(*scalars, *scalars)
            with ir.InsertionPoint(body):
                call = ir.Operation.create("func.call", results=scalars, operands=list(body.arguments),
                                           attributes={"callee": ir.FlatSymbolRefAttr.get(reducer.value)})
                ir.Operation.create("stablehlo.return", operands=list(call.results))
        for old, result in zip(op.results, new.results):
            old.replace_all_uses_with(result)
        op.erase()
        changed = True
    return changed


def _convolution_type(op, result) -> ir.RankedTensorType:
    """The output's batch dim from the input's (a polymorphic batch); other dims as they are."""
    layouts = re.match(r"#stablehlo.conv<\[([^\]]*)\]x\[[^\]]*\]->\[([^\]]*)\]>",
                       str(op.attributes["dimension_numbers"]))
    dims = list(result.shape)
    if layouts:
        lhs_layout, out_layout = ([d.strip() for d in g.split(",")] for g in layouts.groups())
        groups = ir.IntegerAttr(op.attributes["batch_group_count"]).value if "batch_group_count" in op.attributes else 1
        lhs = ir.RankedTensorType(op.operands[0].type)
        b = lhs_layout.index("b")
        if not lhs.is_dynamic_dim(b):
            dims[out_layout.index("b")] = lhs.shape[b] // groups
    return ir.RankedTensorType.get(dims, result.element_type)


def _inferred_types(op) -> list | None:
    """MLIR's own type inference (InferTypeOpInterface) on a temporary copy of a region-free op."""
    if len(op.regions):
        return None
    try:
        with ir.InsertionPoint(op), op.location:
            attributes = [op.attributes[i] for i in range(len(op.attributes))]
            tmp = ir.Operation.create(op.name, operands=list(op.operands), infer_type=True,
                                      attributes={a.name: a.attr for a in attributes})
    except (ir.MLIRError, ValueError, TypeError):
        return None
    types = [r.type for r in tmp.results]
    tmp.erase()
    return types


_SHAPE_ARITHMETIC = {"stablehlo.add": np.add, "stablehlo.subtract": np.subtract, "stablehlo.multiply": np.multiply,
                     "stablehlo.maximum": np.maximum, "stablehlo.minimum": np.minimum}


def _constant_ints(value, depth: int = 0) -> list | None:
    """A value's integers (flat) when constants determine it through the shape arithmetic JAX
    writes and the canonicalizers leave (convert, reshape, concatenate, a broadcast scalar, add,
    ...); None otherwise (a block argument, data)."""
    if isinstance(value.owner, ir.Block) or depth > 32:
        return None
    op = value.owner.operation
    if op.name in ("stablehlo.constant", "arith.constant"):
        if not isinstance(op.attributes["value"], ir.DenseIntElementsAttr):
            return None
        return [int(v) for v in np.ravel(_elements(op.attributes["value"]))]
    if not all(isinstance(v.type, ir.RankedTensorType) and ir.RankedTensorType(v.type).has_static_shape
               and isinstance(ir.RankedTensorType(v.type).element_type, ir.IntegerType)
               for v in [*op.operands, *op.results]):
        return None
    parts = [_constant_ints(v, depth + 1) for v in op.operands]
    if any(p is None for p in parts):
        return None
    if op.name in ("stablehlo.convert", "stablehlo.reshape"):
        return parts[0]
    if op.name == "stablehlo.concatenate" and ir.IntegerAttr(op.attributes["dimension"]).value == 0:
        return [v for p in parts for v in p]
    if op.name == "stablehlo.broadcast_in_dim" and len(parts[0]) == 1:
        return parts[0] * int(np.prod(ir.RankedTensorType(op.result.type).shape))
    if op.name in _SHAPE_ARITHMETIC and len(parts) == 2 and len(parts[0]) == len(parts[1]):
        return [int(v) for v in _SHAPE_ARITHMETIC[op.name](np.array(parts[0], np.int64), np.array(parts[1], np.int64))]
    return None


def _elements(attr) -> np.ndarray:
    attr = ir.DenseIntElementsAttr(attr)
    t = ir.RankedTensorType(attr.type)
    if attr.is_splat:
        return np.full(t.shape, ir.IntegerAttr(attr.get_splat_value()).value)
    return np.array([attr[i] for i in range(len(attr))]).reshape(t.shape)


def _resolve_shape_assertions(main, check: bool) -> None:
    """JAX's shape_assertion(ok, dim values...) {error_message}: with static shapes its operands are
    constants; a true one is dropped, a false one is the error JAX raises (its {i} filled in).
    Unchecked (`check` False: the "shape_assertions" check disabled) they are all dropped."""
    for op in list(main.regions[0].blocks[0].operations):
        op = op.operation
        if op.name != "stablehlo.custom_call":
            continue
        target = ir.StringAttr(op.attributes["call_target_name"]).value
        if target != "shape_assertion":
            raise ArtifactError(f"custom_call @{target} is not supported (only JAX's shape_assertion)")
        if not check:
            op.erase()
            continue
        values = [_constant_ints(v) for v in op.operands]
        if any(v is None for v in values):
            raise ArtifactError("a shape assertion does not fold to a constant with the fed shapes")
        if not all(values[0]):
            message = ir.StringAttr(op.attributes["error_message"]).value
            raise ArtifactError(message.format(*[v[0] for v in values[1:]]))
        op.erase()


def _check_static(main) -> None:
    dynamic = []

    def visit(op):
        if any(not _is_static(r.type) for r in op.results) and len(dynamic) < 3:
            dynamic.append(f"{op.name} -> {', '.join(str(r.type) for r in op.results)}")
        return ir.WalkResult.ADVANCE

    main.walk(visit)
    if dynamic:
        raise ArtifactError("shapes stay dynamic after specializing to the fed shapes: " + "; ".join(dynamic))
