"""XlaCallModule: a StableHLO module inside a TF graph, as JAX writes it (jax2tf with native
serialization, or jax.export wrapped in a tf.Module).

The `module` attribute is a StableHLO portable artifact (or StableHLO bytecode or text, which
TF reads too); stablehlo_artifact.py reads it and specializes it to the fed shapes (JAX's
polymorphic dimensions, shape assertions). The lowering moves the specialized functions into
the cluster's module, renamed so that two calls (or two modules with a `main` each) cannot
clash, and calls its `main`: the module is inlined into the cluster like any other op (IREE
inlines private functions). The kernel compiles the specialized module alone with IREE
(llvm-cpu) and runs it: the module is StableHLO, so that is its reference semantics; a NumPy
interpreter of StableHLO would be a second compiler to maintain.

TensorFlow's attributes (tensorflow/compiler/tf2xla/ops/xla_ops.cc, and XlaCallModuleLoader):
- `version`: the calling convention, 5..10 here (TF 2.21 writes 10; 5 is the first whose module
  computes its dimension variables itself instead of taking `dim_args_spec`).
- `platforms`: the platforms the module was lowered for ("CPU", "CUDA", "TPU", ...). hlobridge
  runs CPU and CUDA code; with several platforms, `main` takes the platform's index as a
  leading tensor<i32> argument, which becomes a constant (CPU's, else CUDA's).
- `disabled_checks`: the safety checks JAX was told to skip: "platform" lets a module of
  another platform run; "shape_assertions" drops JAX's shape assertions unchecked; others
  (custom calls) are refused.
- `has_token_input_output`, `function_list` (callbacks into TF functions, jax2tf's call_tf)
  and effects (!stablehlo.token) are refused; `use_shardy_partitioner` only says how sharding
  annotations are spelled, which the lowering drops (one device).
"""

from __future__ import annotations

import functools
import re

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import func

from hlobridge.dialects import stablehlo as hlo

from ...errors import HlobridgeError
from ...spec import TensorSpec
from . import stablehlo_artifact
from ..registry import register

_ATTRS = ("version", "module", "Tin", "Tout", "Sout", "platforms", "dim_args_spec", "disabled_checks",
          "has_token_input_output", "function_list", "use_shardy_partitioner")
_VERSIONS = range(5, 11)
_RUNNABLE_PLATFORMS = ("CPU", "CUDA")
_KNOWN_CHECKS = ("platform", "shape_assertions")


def _check_call(ctx) -> tuple[int | None, bool]:
    """Raise for what hlobridge does not run; the platform index argument to bind (or None), and
    whether JAX's shape assertions are checked."""
    version = ctx.attr("version")
    if version not in _VERSIONS:
        raise ctx.error(f"XlaCallModule version {version} is not supported (versions "
                        f"{_VERSIONS.start}..{_VERSIONS.stop - 1})")
    if ctx.attr("dim_args_spec", []):
        raise ctx.error("dim_args_spec (dimension arguments of old jax2tf exports) is not supported")
    if ctx.attr("function_list", []):
        raise ctx.error("the module calls back into TensorFlow functions (function_list, jax2tf's call_tf): "
                        "not supported")
    if ctx.attr("has_token_input_output", False):
        raise ctx.error("the module takes and returns a token (ordered effects): not supported")
    checks = [_text(c) for c in ctx.attr("disabled_checks", [])]
    unknown = [c for c in checks if c not in _KNOWN_CHECKS]
    if unknown:
        raise ctx.error(f"disabled_checks {unknown} are not supported (only {list(_KNOWN_CHECKS)})")
    platforms = [_text(p).upper() for p in ctx.attr("platforms", [])]
    runnable = [p for p in _RUNNABLE_PLATFORMS if p in platforms]
    if not runnable and "platform" not in checks:
        raise ctx.error(f"the module was exported for platform(s) {platforms or '(none)'}; hlobridge runs "
                        f"{' or '.join(_RUNNABLE_PLATFORMS)} modules (export with platforms including 'cpu')")
    check_shapes = "shape_assertions" not in checks
    if len(platforms) <= 1:
        return None, check_shapes
    return (platforms.index(runnable[0]) if runnable else 0), check_shapes


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _specialized(ctx, specs) -> stablehlo_artifact.Specialized:
    """The module specialized to these (static) input specs; errors name the node."""
    platform_index, check_shapes = _check_call(ctx)
    try:
        module = ctx.attr("module")  # the graph reader gives text that is valid UTF-8 as str
        text = stablehlo_artifact.deserialize(module.encode() if isinstance(module, str) else module)
        return stablehlo_artifact.specialize(text, tuple((s.shape, s.dtype) for s in specs), platform_index,
                                             check_shapes)
    except stablehlo_artifact.ArtifactError as e:
        raise ctx.error(str(e)) from None


def _infer(ctx):
    _check_call(ctx)
    tout, sout = ctx.attr("Tout"), ctx.attr("Sout")
    if len(tout) != len(sout):
        raise ctx.error(f"Tout lists {len(tout)} type(s), Sout {len(sout)} shape(s)")
    declared = [TensorSpec(np.dtype(t), None if s is None else tuple(s)) for t, s in zip(tout, sout)]
    if not all(s.is_static for s in ctx.inputs):
        return declared  # polymorphic dims stay unknown until the inputs' shapes are
    # read and specialized now (cached for the lowering and the kernel): a module hlobridge cannot
    # run fails here, once, naming the node, rather than as a cluster that falls back
    results = _specialized(ctx, ctx.inputs).results
    if len(results) != len(declared):
        raise ctx.error(f"the module returns {len(results)} result(s), Tout lists {len(declared)}")
    for i, ((shape, dtype), spec) in enumerate(zip(results, declared)):
        if dtype != spec.dtype or spec.shape is not None and (
                len(shape) != len(spec.shape) or any(d is not None and d != r for d, r in zip(spec.shape, shape))):
            raise ctx.error(f"result {i}: the module returns {dtype}{list(shape)}, Tout/Sout declare {spec}")
    return [TensorSpec(dtype, shape) for shape, dtype in results]


def _lower(ctx, *operands):
    specialized = _specialized(ctx, ctx.inputs)
    callee = _import_functions(specialized.text, _enclosing_module(), ctx.name)
    with ir.Location.name(ctx.name):
        call = func.CallOp([hlo.tensor_type(s, d) for s, d in specialized.results],
                           ir.FlatSymbolRefAttr.get(callee), list(operands))
    return list(call.results)


def _enclosing_module() -> ir.Operation:
    """The builtin.module the lowering is writing into (the insertion point may be deep inside a
    While's region)."""
    op = ir.InsertionPoint.current.block.owner.operation
    while op.name != "builtin.module":
        op = op.parent.operation
    return op


def _symbol(op) -> str:
    return ir.StringAttr(op.attributes["sym_name"]).value


def _import_functions(text: str, module: ir.Operation, node_name: str) -> str:
    """Parse `text` in the current context, rename its functions `xla_call_module_<node>_<k>_<name>`
    with the first k that clashes with no symbol of `module`, make them private and move them
    into `module` (before its other functions); the new name of its main."""
    parsed = ir.Module.parse(text)
    functions = [op.operation for op in parsed.body.operations if op.operation.name == "func.func"]
    taken = {_symbol(op) for op in module.regions[0].blocks[0].operations if "sym_name" in op.attributes}
    base, k = "xla_call_module_" + re.sub(r"[^A-Za-z0-9_]", "_", node_name), 0
    while any(f"{base}_{k}_{_symbol(fn)}" in taken for fn in functions):
        k += 1
    prefix = f"{base}_{k}_"
    for fn in functions:
        old = _symbol(fn)
        ir.SymbolTable.replace_all_symbol_uses(old, prefix + old, parsed.operation)
        fn.attributes["sym_name"] = ir.StringAttr.get(prefix + old)
        fn.attributes["sym_visibility"] = ir.StringAttr.get("private")
    anchor = module.regions[0].blocks[0].operations[0]
    for fn in functions:
        fn.move_before(anchor)
    return prefix + "main"


def _kernel(ctx, *args):
    specialized = _specialized(ctx, [TensorSpec(np.asarray(a).dtype, np.shape(a)) for a in args])
    try:
        main = _loaded(specialized.text)
        results = main(*[np.asarray(a, order="C") for a in args])  # (ascontiguousarray makes 0-d 1-d)
    except (RuntimeError, ValueError) as e:  # CompilerToolError is a RuntimeError
        raise ctx.error(f"IREE could not run the module: {str(e).strip().splitlines()[0]}",
                        HlobridgeError) from None
    results = results if isinstance(results, (list, tuple)) else [results]
    # copies: to_host() is a view of the device buffer, which IREE reuses once the result is freed
    return [np.array(r.to_host() if hasattr(r, "to_host") else r, dtype=d).reshape(s)
            for r, (s, d) in zip(results, specialized.results)]


@functools.lru_cache(maxsize=32)
def _loaded(text: str):
    """The specialized module compiled alone for the host CPU: its `main`, callable on arrays."""
    from iree import runtime
    from iree.compiler import compile_str
    vmfb = compile_str(text, input_type="stablehlo", target_backends=["llvm-cpu"],
                       extra_args=["--iree-llvmcpu-target-cpu=host",
                                   "--iree-input-demote-f64-to-f32=false"])  # float64 stays float64, as in XLA
    return runtime.load_vm_flatbuffer(vmfb, driver="local-sync").main


register("XlaCallModule", infer=_infer, lower=_lower, kernel=_kernel, attrs=_ATTRS)
