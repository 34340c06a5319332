"""What IREE made of each CUDA dispatch, read from the executables it dumps while compiling:
the codegen pipeline it chose, the MMA intrinsic it configured, the work (FLOPs, bytes) of the
dispatch's linalg ops, and the tensor-core instructions in its PTX.

iree-compile writes each executable after strategy selection (`configured_*.mlir`: the
`translation_info` pipeline on the dispatch function, `lowering_config`s with their `mma_kind`
on its ops) and the PTX of the module (one `.entry` per dispatch function, all executables
linked into one `.ptx` file). Both come from the one real compile (`dump_flags`), so they
describe the binary that is written, not a second compile.

Work is counted on the configured ops, generalised (`linalg-generalize-named-ops`): a
`linalg.generic`'s loop ranges come from the dimensions its operands index directly, its
FLOPs are the iterations times the float arithmetic of its body (a multiply-add is two, as
matmul FLOPs are counted; conversions and selects are free); ops with a reduction loop and a
multiply are contractions (matmuls, convolutions), the work tensor cores can do. Bytes are what
the dispatch reads and writes through its bindings: the tensors it loads and stores, or, for a
binding used as a memref, the views it takes of it (the whole binding where it takes none).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from iree.compiler import ir
from iree.compiler.passmanager import PassManager

_PIPELINE = re.compile(r"translation_info<pipeline = (?:#iree_gpu\.pipeline<)?(\w+)")
_MMA_KIND = re.compile(r"mma_kind = #iree_gpu\.(?:mma_layout|virtual_mma_layout)<(\w+)>")
_ENTRY = re.compile(r"\.entry\s+([\w$.]+)\s*\(")
_TENSOR_CORE = re.compile(r"\b(?:mma\.sync|wmma\.mma|wgmma\.mma_async)[\w.]*")
_MMA_TYPES = ("bf16", "f16", "tf32", "e4m3", "e5m2", "s8", "u8", "f64")
_FREE = frozenset({"arith.extf", "arith.truncf", "arith.select", "arith.bitcast", "arith.constant",
                   "linalg.yield", "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui"})
_LOADS = frozenset({"iree_codegen.load_from_buffer", "iree_tensor_ext.dispatch.tensor.load"})
_STORES = frozenset({"iree_codegen.store_to_buffer", "iree_tensor_ext.dispatch.tensor.store"})


def dump_flags(directory: str | Path) -> list[str]:
    """The iree-compile flags that dump each executable's configuration and the PTX to `directory`."""
    return [f"--iree-hal-dump-executable-configurations-to={directory}",
            f"--iree-hal-dump-executable-binaries-to={directory}"]


@dataclass
class Kernel:
    """One dispatch function as IREE compiled it (per call of the dispatch)."""

    key: str  # the export (dispatch function) name, as stream.cmd.dispatch names it
    pipeline: str = ""  # IREE's codegen pipeline (TileAndFuse, VectorDistribute, Distribute, ...)
    mma_kinds: tuple = ()  # the MMA intrinsics its lowering_configs ask for
    flops: int = 0
    contraction_flops: int = 0  # of those, in contractions (a reduction loop with a multiply)
    bytes: int = 0
    tensor_core: dict = field(default_factory=dict)  # PTX tensor-core instructions by input type
    note: str = ""  # why work is missing (the configured IR did not parse)

    @property
    def tensor_core_type(self) -> str | None:
        """The input type of its tensor-core instructions ("bf16", "f16", "tf32", ...), or None
        when its PTX has none."""
        return max(self.tensor_core, key=self.tensor_core.get) if self.tensor_core else None


def read_dump(directory: str | Path) -> dict[str, Kernel]:
    """The dumped executables of one compile (see `dump_flags`) -> {dispatch key: Kernel}."""
    directory = Path(directory)
    kernels: dict[str, Kernel] = {}
    for path in sorted(directory.glob("configured_*.mlir")):
        for kernel in read_configured(path.read_text()):
            kernels[kernel.key] = kernel
    for path in sorted(directory.glob("*.ptx")):
        for key, body in ptx_entries(path.read_text()).items():
            if key in kernels:
                kernels[key].tensor_core = dict(tensor_core_instructions(body))
    return kernels


def read_configured(text: str) -> list[Kernel]:
    """A `configured_*.mlir` executable -> a Kernel per dispatch function in it."""
    with ir.Context() as ctx:
        ctx.allow_unregistered_dialects = False
        try:
            module = ir.Module.parse(text)
            PassManager.parse("builtin.module(linalg-generalize-named-ops)").run(module.operation)
        except ir.MLIRError as e:
            return _from_text(text, f"configured IR not read: {str(e).splitlines()[0][:200]}")
        kernels = []
        for fn in _ops(module.operation, "func.func"):
            info = fn.attributes["translation_info"] if "translation_info" in fn.attributes else None
            pipeline = _PIPELINE.search(str(info)) if info is not None else None
            kernel = Kernel(ir.StringAttr(fn.attributes["sym_name"]).value, pipeline.group(1) if pipeline else "",
                            tuple(dict.fromkeys(_MMA_KIND.findall(str(fn)))))
            for op in _ops(fn, "linalg.generic"):
                flops, contraction = generic_flops(op)
                kernel.flops += flops
                kernel.contraction_flops += flops if contraction else 0
            kernel.bytes = binding_bytes(fn)
            kernels.append(kernel)
        return kernels


def _from_text(text: str, note: str) -> list[Kernel]:
    """Kernels named and configured from the text alone (no work) where the IR does not parse."""
    names = re.findall(r"func\.func @([\w$.]+)\(", text)
    pipeline = _PIPELINE.search(text)
    return [Kernel(n, pipeline.group(1) if pipeline else "", tuple(dict.fromkeys(_MMA_KIND.findall(text))),
                   note=note) for n in names]


def _ops(root: ir.Operation, name: str) -> list:
    found = []

    def visit(op):
        if op.name == name:
            found.append(op.operation)
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return found


def generic_flops(op: ir.Operation) -> tuple[int, bool]:
    """(FLOPs, whether it is a contraction) of one linalg.generic; 0 FLOPs where a loop's range
    is not read off a static operand dimension."""
    maps = [ir.AffineMapAttr(a).value for a in op.attributes["indexing_maps"]]
    ranges: dict[int, int] = {}
    for value, amap in zip(op.operands, maps):
        shape = _shape(value.type)
        if shape is None:
            continue
        for expr, size in zip(amap.results, shape):
            if isinstance(expr, ir.AffineDimExpr) and size >= 0:
                ranges.setdefault(expr.position, size)
    n_dims = maps[0].n_dims if maps else 0
    body = [o.name for o in op.regions[0].blocks[0].operations]
    per_iteration = sum(2 if name == "math.fma" else 0 if name in _FREE else 1
                        for name in body if name.startswith(("arith.", "math.")))
    reduction = any("reduction" in str(a) for a in op.attributes["iterator_types"])
    contraction = reduction and ("arith.mulf" in body or "math.fma" in body)
    if per_iteration == 0 or any(d not in ranges for d in range(n_dims)):
        return 0, contraction
    return per_iteration * math.prod(ranges[d] for d in range(n_dims)), contraction


def _shape(t: ir.Type) -> list | None:
    if isinstance(t, (ir.RankedTensorType, ir.MemRefType)):
        return [d if d != ir.ShapedType.get_dynamic_size() else -1 for d in t.shape]
    return None


def _nbytes(t: ir.Type) -> int:
    t = ir.ShapedType(t)
    if not t.has_static_shape:
        return 0
    width = t.element_type.width if hasattr(t.element_type, "width") else 32
    return math.prod(t.shape) * max(width, 8) // 8


def binding_bytes(fn: ir.Operation) -> int:
    """Bytes the dispatch reads and writes through its bindings (see the module docstring)."""
    total = 0
    for subspan in _ops(fn, "hal.interface.binding.subspan"):
        accessed = _accessed(subspan.results[0], 0)
        if accessed:
            total += sum(accessed)
        elif isinstance(subspan.results[0].type, ir.MemRefType):
            total += _nbytes(subspan.results[0].type)
    return total


def _accessed(value: ir.Value, depth: int) -> list[int]:
    """Sizes of the loads, stores and views of a binding (through alignment assumptions)."""
    sizes = []
    for use in value.uses:
        owner = use.owner.operation if hasattr(use.owner, "operation") else use.owner
        if owner.name in _LOADS:
            sizes.append(_nbytes(owner.results[0].type))
        elif owner.name in _STORES:
            sizes.append(_nbytes(owner.operands[0].type))
        elif owner.name == "memref.subview":
            sizes.append(_nbytes(owner.results[0].type))
        elif owner.name == "memref.assume_alignment" and depth < 4:
            sizes.extend(_accessed(owner.results[0], depth + 1))
    return sizes


def ptx_entries(text: str) -> dict[str, str]:
    """A PTX module -> {entry function name: its text}."""
    starts = [(m.group(1), m.start()) for m in _ENTRY.finditer(text)]
    return {name: text[start:(starts[i + 1][1] if i + 1 < len(starts) else len(text))]
            for i, (name, start) in enumerate(starts)}


def tensor_core_instructions(ptx: str) -> Counter:
    """Tensor-core MMA instructions in PTX text, counted by input type (`mma.sync.aligned.
    m16n8k16.row.col.f32.bf16.bf16.f32` is a bf16 one)."""
    found = Counter()
    for instruction in _TENSOR_CORE.findall(ptx):
        parts = instruction.split(".")
        found[next((p for p in parts if p in _MMA_TYPES), "f16")] += 1
    return found
