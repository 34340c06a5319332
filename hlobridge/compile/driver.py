"""The compiler driver: GraphDef -> shapes -> StableHLO -> simplified StableHLO -> vmfb.

Each stage can be stopped at and dumped (numbered files, one per stage). The options live in
options.py, the iree-compile invocation in iree.py; both are re-exported here, where the
public API (`compile_graph`, `lower_graph`, `CompileOptions`) has always been.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Sequence

from google.protobuf import text_format

from hlobridge.passes.ir import pipeline

from ..analysis.shape_inference import infer_specs
from ..debug import progress
from ..debug.dump import Dumper
from ..debug.graphviz import dump_stablehlo_dot
from ..errors import HlobridgeError
from ..frontend.functions import library_of
from ..frontend.graph import Graph, TensorRef
from ..frontend.load import load_graph
from ..frontend.proto.schema import GraphDef
from ..lowering.driver import LoweredModule, lower_to_stablehlo
from ..ops.backend_style import lowering_for
from ..ops.kinds import GRAPH_INPUTS
from ..runtime.interpreter import FunctionRunner
from ..spec import TensorSpec
from .backend import backend_of
from .buckets import lower_with_buckets
from .iree import IREE_PHASES, compile_mlir  # noqa: F401  (public here)
from .options import CPU_TRIPLES, DEFAULT_CUDA_ARCH, TARGETS, CompileOptions  # noqa: F401  (public here)

log = logging.getLogger(__name__)


@dataclass
class CompiledModel:
    """A compiled graph: the backend's artifact (an IREE vmfb, or XLA's portable StableHLO
    artifact: compile/xla.py), the lowered module it came from, and IREE's statistics."""

    vmfb: bytes  # (the name predates the XLA backend: `artifact` says what it is)
    lowered: LoweredModule
    options: CompileOptions
    stablehlo: str = ""
    dumps: list = field(default_factory=list)
    stats: dict = field(default_factory=dict)  # IREE's dispatch statistics (iree_stats.py)

    @property
    def signature(self):
        """Inputs' and outputs' names, dtypes and shapes (lowering.signature.Signature)."""
        return self.lowered.signature

    @property
    def artifact(self) -> bytes:
        """What the backend compiled: a vmfb (IREE) or a portable artifact (XLA)."""
        return self.vmfb

    def save(self, path: str | os.PathLike) -> None:
        """Write the artifact (hlobridge.runtime.load reads either kind; an HlobridgeError naming
        `path` if it cannot be written)."""
        try:
            Path(path).write_bytes(self.vmfb)
        except OSError as e:
            raise HlobridgeError(f"{path}: cannot write the module: {e.strerror or e}") from None

    def load(self, device: str = "cpu"):
        """The module loaded on `device` by the backend that compiled it."""
        return backend_of(self.options).load(self.vmfb, device)


def parse_shape(text: str) -> tuple:
    """'4,32,32,3' -> (4, 32, 32, 3); '?,224,224,3' -> (None, 224, 224, 3) (a dynamic
    dimension); '' or 'scalar' -> ()."""
    text = text.strip()
    if text in ("", "scalar", "()"):
        return ()
    try:
        dims = tuple(None if d.strip() == "?" else int(d) for d in text.replace("x", ",").split(","))
    except ValueError:
        raise HlobridgeError(f"bad shape '{text}': expected comma-separated integers or ?") from None
    negative = [d for d in dims if d is not None and d < 0]
    if negative:  # MLIR's tensor type would reject it deep inside ("invalid tensor dimension size")
        raise HlobridgeError(f"bad shape '{text}': dimension {negative[0]} is negative; give every "
                             f"dimension's size")
    return dims


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
    for ref in in_refs:
        if ref.index != 0 and graph.nodes[ref.node].op in GRAPH_INPUTS:
            raise HlobridgeError(f"--inputs names {ref}, but node '{ref.node}' ({graph.nodes[ref.node].op}) "
                                 f"has 1 output(s)")
    shapes = {graph.tensor(k): tuple(v) for k, v in (shapes or {}).items()}
    unknown = [str(k) for k in shapes if k not in in_refs]
    if unknown:
        raise HlobridgeError(f"--input-shape names {', '.join(unknown)}, which are not inputs "
                             f"(inputs: {', '.join(str(r) for r in in_refs)})")
    feeds = {}
    for ref in in_refs:
        node = graph.nodes[ref.node]
        if node.op not in GRAPH_INPUTS:
            continue  # an intermediate tensor: its spec comes from inference (see below)
        declared = node.attr("shape")
        shape = shapes.get(ref, declared)
        if ref in shapes and declared is not None:
            if len(declared) != len(shape) or any(d is not None and d != s for d, s in zip(declared, shape)):
                raise HlobridgeError(f"--input-shape {ref}={','.join(map(str, shape))} does not fit the "
                                     f"placeholder's shape {TensorSpec(node.attr('dtype'), declared)}")
        feeds[ref] = TensorSpec(node.attr("dtype"), shape)
    return feeds


def pinned_intermediates(graph: Graph, in_refs: list[TensorRef], shapes: dict | None,
                         specs: dict) -> dict[TensorRef, TensorSpec]:
    """Specs for the intermediate tensors among the inputs that --input-shape sizes (a model cut
    at a layer, compiled from there): their inferred dtype with the shape given, which must fit
    the inferred one (a `?` may be sized, a known dimension may not change)."""
    pinned = {}
    for name, shape in (shapes or {}).items():
        ref = graph.tensor(name)
        if graph.nodes[ref.node].op in GRAPH_INPUTS or ref not in specs:
            continue  # a placeholder's shape is input_specs' (an unknown ref: check_output_indices)
        inferred, shape = specs[ref], tuple(shape)
        if inferred.shape is not None and (
                len(inferred.shape) != len(shape)
                or any(d is not None and s is not None and d != s for d, s in zip(inferred.shape, shape))):
            raise HlobridgeError(f"--input-shape {ref}={','.join('?' if d is None else str(d) for d in shape)} "
                                 f"does not fit the tensor's inferred shape {inferred}")
        pinned[ref] = TensorSpec(inferred.dtype, shape)
    return pinned


def check_output_indices(graph: Graph, refs: list[TensorRef], flag: str, specs: dict) -> None:
    """An HlobridgeError naming `flag` for a tensor 'y:7' of a node with fewer outputs (inferred
    `specs` hold every output of a needed node), before lowering meets a missing value."""
    for ref in refs:
        if ref not in specs:
            count = sum(1 for r in specs if r.node == ref.node)
            raise HlobridgeError(f"{flag} names {ref}, but node '{ref.node}' ({graph.nodes[ref.node].op}) "
                                 f"has {count} output(s)")


def lower_graph(graph, *, inputs=None, outputs=None, input_shapes=None, names: dict | None = None,
                dump: Dumper | None = None, stages=pipeline.DEFAULT_STAGES, backend: str = "iree",
                target: str = "llvm-cpu") -> LoweredModule:
    """Graph -> verified, simplified StableHLO: `stages` (passes/ir/pipeline.py) run on the
    lowered module, each dumped to `dump` (default: HLOBRIDGE_FLAGS' --dump-to, if any), the
    op rules lowering for `backend` (ops/backend_style.py) and IREE's `target`. `names` gives
    inputs and outputs the names the module's signature carries (tensor -> name; a SavedModel
    signature's keys), else they are their tensors' names ("x:0")."""
    start = time.perf_counter()
    graph = load_graph(graph)
    dump = dump if dump is not None else Dumper.from_flags()
    in_refs, out_refs = resolve_io(graph, inputs, outputs)
    feeds = input_specs(graph, in_refs, input_shapes)
    needed = graph.ancestors([r.node for r in out_refs], stop=[r.node for r in in_refs if r in feeds])
    unused = [str(r) for r in in_refs if r not in feeds and r.node not in needed]
    if unused:  # an intermediate tensor gets its spec from inference, which only sees what is needed
        raise HlobridgeError(f"input(s) {', '.join(unused)} are not read by the outputs "
                             f"({', '.join(map(str, out_refs))}); leave them out of --inputs")
    functions = FunctionRunner(library_of(graph), None)  # folds through If/While bodies, as TF does
    progress.report("shape inference", f"{len(needed)} ops")
    specs = infer_specs(graph, needed, feeds, functions)
    pinned = pinned_intermediates(graph, in_refs, input_shapes, specs)
    if pinned:  # inferred again from the shapes given, as a feed of that tensor would be
        feeds.update(pinned)
        needed = graph.prune([r.node for r in out_refs], feeds)  # the pinned nodes' own ops not run
        specs = infer_specs(graph, needed, feeds, functions)
    check_output_indices(graph, in_refs, "--inputs", specs)
    check_output_indices(graph, out_refs, "--outputs", specs)
    if dump.wants("graph"):
        dump("graph", graph_text(graph), ".pbtxt")
    if dump.wants("shapes"):
        dump("shapes", format_specs(graph, specs), ".txt")
    progress.report("lowering", f"{len(needed)} ops")
    with lowering_for(backend):
        lowered = lower_to_stablehlo(graph, specs, in_refs, out_refs, functions=functions, target=target,
                                     keep_f32=pipeline.reduces_precision(stages),
                                     dynamic=backend == "iree")  # ? dims: IREE's (docs/dynamic_shapes.md)
    if names:
        lowered.rename({str(graph.tensor(k)): v for k, v in names.items()})
    with lowered.context:
        if dump.wants("stablehlo"):
            dump("stablehlo", lowered.module.operation.get_asm())
        pipeline.run(lowered.module, stages, dump=dump)
        dump_stablehlo_dot(dump, lowered.module, str(graph.source))
    lowered.verify()
    log.info("lowered %s: %d ops to StableHLO in %.1f s", graph.source, len(needed), time.perf_counter() - start)
    return lowered


def graph_text(graph: Graph) -> str:
    """The graph as GraphDef text, as TensorFlow would write it."""
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


def lower_for(graph, options: CompileOptions, *, inputs=None, outputs=None, input_shapes=None,
              names: dict | None = None, dump: Dumper | None = None) -> LoweredModule:
    """The StableHLO module `options` compile: lower_graph's, or with `options.batch_sizes` the
    dynamic `main` with its static `main_b<N>` merged in (compile/buckets.py). compile_graph and
    `hlobridge-compile --emit stablehlo` both call it, so the text a user reads is what IREE gets."""
    backend = backend_of(options).name
    lower = dict(inputs=inputs, outputs=outputs, input_shapes=input_shapes, names=names, dump=dump,
                 stages=options.stages(), backend=backend, target=options.lowers_for())
    if not options.batch_sizes:
        return lower_graph(graph, **lower)
    if backend != "iree":
        raise HlobridgeError("--batch-sizes: IREE modules only (the XLA backend compiles per shape)")
    graph = load_graph(graph)
    in_refs, out_refs = resolve_io(graph, inputs, outputs)
    return lower_with_buckets(graph, input_specs(graph, in_refs, input_shapes), out_refs,
                              options.batch_sizes, pad=options.pad_batches, lower=lower_graph, **lower)


def compile_graph(graph, *, inputs=None, outputs=None, input_shapes=None, names: dict | None = None,
                  options: CompileOptions | None = None, dump_dir=None,
                  dump: Dumper | None = None, kernels: dict | None = None) -> CompiledModel:
    """The whole pipeline; `dump_dir` (or a `dump`) receives every stage's IR as numbered
    files (default: HLOBRIDGE_FLAGS' --dump-to, if any); a `kernels` dict what IREE made of
    each CUDA dispatch (compile/gpu_kernels.py); `names` as in lower_graph."""
    options = options or CompileOptions()
    options.iree_flags()  # validate before the slow part
    backend = backend_of(options)
    options = replace(options, backend=backend.name)  # "auto" decided
    dump = dump if dump is not None else Dumper.from_flags(dump_dir)
    lowered = lower_for(graph, options, inputs=inputs, outputs=outputs, input_shapes=input_shapes,
                        names=names, dump=dump)
    text = lowered.text()
    options = options.for_module(reads_variables=bool(lowered.resource_args))
    stats = {"fusion": options.fusion} if backend.name == "iree" else {"backend": backend.name}
    stage = f"{backend.name}-compile"  # "iree-compile", as the tool is named
    progress.report(stage, options.target)
    start = time.perf_counter()
    vmfb = backend.compile(text, options, dump, stats=stats, kernels=kernels)
    log.info("%s (%s): %.1f s, %d bytes", stage, options.target, time.perf_counter() - start, len(vmfb))
    return CompiledModel(vmfb, lowered, options, text, stats=stats)


__all__ = ["CompileOptions", "CompiledModel", "compile_graph", "lower_for", "lower_graph", "compile_mlir",
           "parse_shape"]
