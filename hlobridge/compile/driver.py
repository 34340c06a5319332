"""The compiler driver: GraphDef -> shapes -> StableHLO -> simplified StableHLO -> vmfb.

Each stage can be stopped at and dumped (numbered files, one per stage). IREE runs
as the `iree-compile` subprocess (`compile_str`), so a crash inside IREE is an
error message, not a dead Python process (see iree-notes).
"""

from __future__ import annotations

import os
import re
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from iree.compiler import CompilerToolError, compile_str

from hlobridge.passes.ir import pipeline
from hlobridge.passes.ir.dispatch_regions import without_regions

from . import iree_stats
from ..debug.dump import Dumper
from ..errors import CompileError, FusionFallbackWarning, HlobridgeError
from ..frontend.graph import Graph, TensorRef, load_graph
from ..debug.graphviz import dump_stablehlo_dot
from ..lowering.driver import LoweredModule, lower_to_stablehlo
from ..analysis.shape_inference import infer_specs
from ..spec import TensorSpec

TARGETS = ("llvm-cpu", "cuda")
# IREE's compilation phases, dumped as iree-<phase> (--compile-to accepts each).
IREE_PHASES = ("input", "abi", "preprocessing", "global-optimization", "dispatch-creation", "flow",
               "stream", "executable-sources", "executable-configurations", "executable-targets",
               "hal", "vm")
# IREE 3.13 has no sm_90 entry (iree-org/iree#22147) and crashes on "hopper". sm_80 code
# runs on A100 natively and on H100/H200 through the driver's PTX JIT.
DEFAULT_CUDA_ARCH = "sm_80"
# Portable CPU defaults: "host" tunes for this machine; cross triples for AOT elsewhere.
CPU_TRIPLES = {"aarch64": "aarch64-unknown-linux-gnu", "x86_64": "x86_64-unknown-linux-gnu"}


@dataclass
class CompileOptions:
    target: str = "llvm-cpu"
    cpu: str = "host"
    cpu_triple: str | None = None
    cuda_arch: str = DEFAULT_CUDA_ARCH
    extra_flags: Sequence[str] = ()
    precision: str = "f32"  # "bf16"/"f16": compute f32 graphs in it (passes/reduce_precision.py)
    # who forms dispatches: "hlobridge" (passes/fusion.py), "iree" (IREE alone) or "none" (one per op)
    fusion: str = "iree"

    def stages(self) -> tuple:
        """hlobridge's IR pipeline (passes/pipeline.py) for these options."""
        return pipeline.build(precision=self.precision, fusion=self.fusion)

    def iree_flags(self) -> list[str]:
        if self.target == "llvm-cpu":
            flags = [f"--iree-llvmcpu-target-cpu={self.cpu}"]
            if self.cpu_triple:
                triple = CPU_TRIPLES.get(self.cpu_triple, self.cpu_triple)
                flags.append(f"--iree-llvmcpu-target-triple={triple}")
        elif self.target == "cuda":
            if not re.fullmatch(r"sm_\d+a?", self.cuda_arch):
                raise HlobridgeError(f"--cuda-arch must look like sm_80, got '{self.cuda_arch}'")
            flags = [f"--iree-cuda-target={self.cuda_arch}"]
        else:
            raise HlobridgeError(f"unknown target '{self.target}'; choose one of {', '.join(TARGETS)}")
        # TensorFlow computes float64 in float64; IREE would demote it to f32 by default.
        flags.append("--iree-input-demote-f64-to-f32=false")
        return flags + list(self.extra_flags)


@dataclass
class CompiledModel:
    vmfb: bytes
    lowered: LoweredModule
    options: CompileOptions
    stablehlo: str = ""
    dumps: list = field(default_factory=list)
    stats: dict = field(default_factory=dict)  # IREE's dispatch statistics (iree_stats.py)

    @property
    def signature(self):
        return self.lowered.signature

    def save(self, path: str | os.PathLike) -> None:
        Path(path).write_bytes(self.vmfb)

    def load(self, device: str = "cpu"):
        from .. import runtime
        return runtime.load(self.vmfb, device=device)


def parse_shape(text: str) -> tuple:
    """'4,32,32,3' -> (4, 32, 32, 3); '' or 'scalar' -> ()."""
    text = text.strip()
    if text in ("", "scalar", "()"):
        return ()
    try:
        return tuple(int(d) for d in text.replace("x", ",").split(","))
    except ValueError:
        raise HlobridgeError(f"bad shape '{text}': expected comma-separated integers") from None


def resolve_io(graph: Graph, inputs: Sequence[str] | None, outputs: Sequence[str] | None):
    """Default inputs: all placeholders; default outputs: output 0 of every node whose outputs
    nobody reads as data (control edges do not count), except NoOps and Asserts."""
    in_refs = [graph.tensor(n) for n in inputs] if inputs else [TensorRef(p) for p in graph.placeholders()]
    if outputs:
        out_refs = [graph.tensor(n) for n in outputs]
    else:
        out_refs = [TensorRef(s) for s in graph.data_sinks() if graph.nodes[s].op not in ("NoOp", "Assert")]
        if not out_refs:
            raise HlobridgeError(f"{graph.source}: no outputs: every sink is a NoOp; name them with --outputs")
    return in_refs, out_refs


def input_specs(graph: Graph, in_refs: list[TensorRef], shapes: dict | None) -> dict[TensorRef, TensorSpec]:
    """Specs for the function inputs: a placeholder's dtype and shape, with `shapes` overriding."""
    shapes = {graph.tensor(k): tuple(v) for k, v in (shapes or {}).items()}
    unknown = [str(k) for k in shapes if k not in in_refs]
    if unknown:
        raise HlobridgeError(f"--input-shape names {', '.join(unknown)}, which are not inputs "
                             f"(inputs: {', '.join(str(r) for r in in_refs)})")
    feeds = {}
    for ref in in_refs:
        node = graph.nodes[ref.node]
        if node.op not in ("Placeholder", "PlaceholderV2", "PlaceholderWithDefault"):
            continue  # an intermediate tensor: its spec comes from inference (see below)
        declared = node.attr("shape")
        shape = shapes.get(ref, declared)
        if ref in shapes and declared is not None:
            if len(declared) != len(shape) or any(d is not None and d != s for d, s in zip(declared, shape)):
                raise HlobridgeError(f"--input-shape {ref}={','.join(map(str, shape))} does not fit the "
                                     f"placeholder's shape {TensorSpec(node.attr('dtype'), declared)}")
        feeds[ref] = TensorSpec(node.attr("dtype"), shape)
    return feeds


def compile_mlir(source: str | bytes, options: CompileOptions, dump: Dumper | None = None,
                 stats: dict | None = None) -> bytes:
    """StableHLO text or bytecode -> vmfb bytes, in the iree-compile subprocess; a `stats`
    dict receives IREE's dispatch statistics (iree_stats.py)."""
    tmp = None
    extra = options.iree_flags()
    stats_dir = tempfile.TemporaryDirectory(prefix="hlobridge-stats-") if stats is not None else None
    if stats_dir is not None:
        extra += iree_stats.flags(Path(stats_dir.name) / "stats.json")
    if dump is not None and dump.directory and any(dump.wants(f"iree-{p}") for p in IREE_PHASES):
        tmp = tempfile.mkdtemp(prefix="iree-phases-", dir=dump.directory)
        extra.append(f"--dump-compilation-phases-to={tmp}")
    try:
        vmfb = _iree_compile(source, options, extra)
    finally:
        if stats_dir is not None:
            stats_file = Path(stats_dir.name) / "stats.json"
            if stats_file.exists():
                stats.update(iree_stats.read(stats_file))
            stats_dir.cleanup()
    if tmp:
        phases = sorted(Path(tmp).glob("*.mlir"), key=lambda p: int(p.name.split(".")[1]))
        for p in phases:
            dump(f"iree-{p.name.split('.')[2]}", p.read_text())
            p.unlink()
        Path(tmp).rmdir()
    return vmfb


def _iree_compile(source: str | bytes, options: CompileOptions, extra: list[str]) -> bytes:
    """compile_str; if IREE cannot compile hlobridge's dispatch regions (passes/fusion.py),
    warn and compile the same module without them, as fusion="iree" would."""
    def compile_once(src):
        try:
            return compile_str(src, input_type="stablehlo", target_backends=[options.target], extra_args=extra)
        except CompilerToolError as e:
            raise CompileError(f"IREE failed to compile for {options.target}:\n{_short_diagnostics(str(e))}") from None

    try:
        return compile_once(source)
    except CompileError as e:
        error = e
    plain = without_regions(source)
    if plain is None:
        raise error
    cause = next((ln.strip() for ln in str(error).splitlines()[1:] if "error" in ln), "")[:300]
    warnings.warn(FusionFallbackWarning(
        f"IREE could not compile hlobridge's dispatch regions, so IREE formed the dispatches "
        f"itself (as --fusion=iree). Cause: {cause}"), stacklevel=4)
    return compile_once(plain)


def _short_diagnostics(text: str, limit: int = 40) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    keep = [ln for ln in lines if "error" in ln.lower() or "note" in ln.lower()] or lines
    return "\n".join(keep[:limit])


def lower_graph(graph, *, inputs=None, outputs=None, input_shapes=None,
                dump: Dumper | None = None, stages=pipeline.DEFAULT_STAGES) -> LoweredModule:
    """Graph -> verified, simplified StableHLO: `stages` (passes/pipeline.py) run on the
    lowered module, each dumped to `dump` (default: HLOBRIDGE_FLAGS' --dump-to, if any)."""
    graph = load_graph(graph)
    dump = dump if dump is not None else Dumper.from_flags()
    in_refs, out_refs = resolve_io(graph, inputs, outputs)
    feeds = input_specs(graph, in_refs, input_shapes)
    needed = graph.ancestors([r.node for r in out_refs], stop=[r.node for r in in_refs if r in feeds])
    specs = infer_specs(graph, needed, feeds)
    if dump.wants("graph"):
        dump("graph", graph_text(graph), ".pbtxt")
    if dump.wants("shapes"):
        dump("shapes", format_specs(graph, specs), ".txt")
    lowered = lower_to_stablehlo(graph, specs, in_refs, out_refs)
    with lowered.context:
        if dump.wants("stablehlo"):
            dump("stablehlo", lowered.module.operation.get_asm())
        pipeline.run(lowered.module, stages, dump=dump)
        dump_stablehlo_dot(dump, lowered.module, str(graph.source))
    lowered.verify()
    return lowered


def graph_text(graph: Graph) -> str:
    """The graph as GraphDef text, as TensorFlow would write it."""
    from google.protobuf import text_format

    from ..frontend.proto.schema import GraphDef
    gd = GraphDef()
    gd.node.extend(n.node_def for n in graph.nodes.values())
    gd.library.CopyFrom(graph.library)
    return text_format.MessageToString(gd)


def format_specs(graph: Graph, specs: dict) -> str:
    """One line per node: name, op, and the spec of each output (value shown when small)."""
    lines = []
    for name in graph.order:
        outs = [(r, s) for r, s in specs.items() if r.node == name]
        if not outs:
            continue
        parts = []
        for r, s in sorted(outs, key=lambda x: x[0].index):
            text = str(s)
            if s.value is not None and s.value.size <= 8:
                text += f" = {s.value.tolist()}"
            elif s.value is not None:
                text += " = <const>"
            parts.append(text)
        lines.append(f"{name} ({graph.nodes[name].op}): {', '.join(parts)}")
    return "\n".join(lines) + "\n"


def compile_graph(graph, *, inputs=None, outputs=None, input_shapes=None,
                  options: CompileOptions | None = None, dump_dir=None,
                  dump: Dumper | None = None) -> CompiledModel:
    """The whole pipeline; `dump_dir` (or a `dump`) receives every stage's IR as numbered
    files (default: HLOBRIDGE_FLAGS' --dump-to, if any)."""
    options = options or CompileOptions()
    options.iree_flags()  # validate before the slow part
    dump = dump if dump is not None else Dumper.from_flags(dump_dir)
    lowered = lower_graph(graph, inputs=inputs, outputs=outputs, input_shapes=input_shapes, dump=dump,
                          stages=options.stages())
    text = lowered.text()
    stats = {"fusion": options.fusion}
    vmfb = compile_mlir(text, options, dump, stats=stats)
    return CompiledModel(vmfb, lowered, options, text, stats=stats)


__all__ = ["CompileOptions", "CompiledModel", "compile_graph", "lower_graph", "compile_mlir",
           "parse_shape"]
