"""hlobridge-compile: a GraphDef to an IREE module (.vmfb) or to StableHLO text.

    hlobridge-compile graph.pbtxt -o model.vmfb --input-shape images:0=4,32,32,3
    hlobridge-compile saved_model_dir/ -o model.vmfb --signature serving_default --input-shape x=4,8
    hlobridge-compile graph.pbtxt -o model_cuda.vmfb --target cuda
    hlobridge-compile graph.pbtxt --emit stablehlo -o -      # print the StableHLO
    hlobridge-compile graph.pbtxt -o m.vmfb --dump-to dumps/ # every stage and pass, numbered
    hlobridge-compile graph.pbtxt -o m.vmfb --dump-to dumps/ --dump-pass 'simplify|iree-flow'
    hlobridge-compile graph.pbtxt -o m.vmfb --fusion none --stats stats.json  # dispatch counts
    hlobridge-compile graph.pbtxt -o model.mlirbc --backend xla  # XLA's portable StableHLO artifact
    hlobridge-compile graph.pbtxt -o m.vmfb --target cuda --stats stats.json --card h100  # + GPU report
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hlobridge.passes.ir import pipeline
from hlobridge.passes.ir.fusion import MODES as FUSION_MODES

from ..compile import buckets, driver as compiler
from ..compile.driver import CompileOptions, Dumper
from ..compile.gpu_cards import CARDS, DEFAULT_CARD, card as gpu_card
from ..compile.options import BACKENDS, DATA_TILING
from ..debug import gpu_report
from ..errors import HlobridgeError
from . import saved_model
from .common import add_io_arguments, add_output_arguments, check_output_path, configure_output, io_options, run_main

PROG = "hlobridge-compile"


def parse_arguments(argv=None) -> argparse.Namespace:
    """hlobridge-compile's command line -> its options (argv=None reads sys.argv)."""
    p = argparse.ArgumentParser(prog=PROG, description="Compile a TensorFlow GraphDef with IREE.")
    p.add_argument("graph", help="GraphDef file (.pbtxt text or .pb binary) or a SavedModel directory")
    p.add_argument("-o", "--output", required=True, help="output file ('-' for stdout with --emit stablehlo)")
    p.add_argument("--target", default="llvm-cpu", choices=compiler.TARGETS)
    p.add_argument("--cpu", default="host",
                   help="llvm-cpu target CPU: host (this machine), generic, or a name like x86-64-v3, "
                        "neoverse-v1 (default: host)")
    p.add_argument("--cpu-triple", default=None,
                   help="cross-compile for another architecture: aarch64, x86_64 or a full LLVM triple")
    p.add_argument("--cuda-arch", default=compiler.DEFAULT_CUDA_ARCH,
                   help=f"cuda target SM (default {compiler.DEFAULT_CUDA_ARCH}: runs on A100 and, "
                        "through PTX JIT, on H100; IREE 3.13 rejects sm_90)")
    p.add_argument("--backend", default="iree", choices=BACKENDS,
                   help="iree: an IREE module (.vmfb); xla: a StableHLO portable artifact (versioned "
                        "MLIR bytecode, .mlirbc) that XLA compiles through PJRT when it is loaded "
                        "(the xla extra; docs/backends.md); auto: xla for --target cuda where installed")
    p.add_argument("--emit", default="vmfb", choices=("vmfb", "stablehlo"),
                   help="vmfb: the backend's artifact; stablehlo: the StableHLO text (with --batch-sizes, "
                        "the merged module the .vmfb is compiled from)")
    p.add_argument("--precision", default="f32", choices=pipeline.PRECISIONS,
                   help="compute f32 graphs in bf16 or f16, accumulating dots, convolutions and "
                        "reductions in f32 (default: f32, no change)")
    p.add_argument("--fusion", default=CompileOptions.fusion, choices=FUSION_MODES,
                   help="who forms IREE dispatches: hlobridge (our fusion pass), iree (IREE's own "
                        "dispatch formation) or none (one dispatch per op) (default: %(default)s)")
    p.add_argument("--data-tiling", default=CompileOptions.data_tiling, choices=DATA_TILING,
                   help="IREE's data tiling (matmul operands packed for the CPU): auto turns it on "
                        "where weights are constants; ahead packs constant weights at compile time, into "
                        "the module, instead of when it is loaded (default: %(default)s)")
    p.add_argument("--no-fold-batch-norm", dest="fold_batch_norm", action="store_false",
                   help="leave inference batch norms as their own ops (by default their per-channel "
                        "scale and shift fold into the convolution's weights: faster, rounded once)")
    p.add_argument("--no-split-narrow-rows", dest="split_narrow_rows", action="store_false",
                   help="leave dots of a few rows whole (by default, on the CPU with data tiling, a dot "
                        "of 9 rows runs as 8 + 1 rows, not one 16-row tile: faster, bit for bit)")
    p.add_argument("--stats", default=None, metavar="FILE",
                   help="write IREE's dispatch statistics as JSON: dispatches (kernel launches per "
                        "call; with data tiling, the initializer's weight packing too), "
                        "executables (distinct kernels), fills, copies; with --target cuda also the "
                        "GPU report (docs/gpu.md): per dispatch its TF nodes, FLOPs, bytes, IREE "
                        "pipeline, tensor-core use and roofline time on --card, totals under \"gpu\"")
    p.add_argument("--card", default=DEFAULT_CARD, choices=sorted(CARDS),
                   help="the GPU whose peak rates the --stats GPU report assumes (default: %(default)s)")
    p.add_argument("--dump-to", "--dump-ir", dest="dump_to", default=None, metavar="DIR",
                   help="write the IR after every stage and pass to DIR as numbered files "
                        "(default: HLOBRIDGE_FLAGS' --dump-to)")
    p.add_argument("--dump-pass", default=None, metavar="REGEX",
                   help="dump only the stages/passes whose name matches REGEX (e.g. "
                        "'simplify', 'cse', 'iree-flow')")
    p.add_argument("--iree-flag", action="append", default=[], metavar="FLAG",
                   help="extra flag passed to iree-compile (repeatable)")
    p.add_argument("--batch-sizes", default=None, metavar="N,N,...",
                   help="beside the dynamic-batch main, static functions for these batch sizes in the "
                        "same .vmfb; the runtime picks one when the fed batch matches (docs/dynamic_shapes.md)")
    p.add_argument("--pad-to-batch-sizes", action="store_true",
                   help="with --batch-sizes: run a batch padded up to the next listed size, where no op "
                        "mixes rows of the batch (else the compile says which node does)")
    add_io_arguments(p)
    saved_model.add_cli_arguments(p)
    add_output_arguments(p)
    return p.parse_args(argv)


def main(argv=None) -> int:
    """Compile the graph to a .vmfb (and --stats JSON), or emit its StableHLO; returns the exit status."""
    args = parse_arguments(argv)
    configure_output(args)
    options = CompileOptions(target=args.target, cpu=args.cpu, cpu_triple=args.cpu_triple,
                             cuda_arch=args.cuda_arch, extra_flags=args.iree_flag,
                             precision=args.precision, fusion=args.fusion, data_tiling=args.data_tiling,
                             fold_batch_norm=args.fold_batch_norm, split_narrow_rows=args.split_narrow_rows,
                             backend=args.backend,
                             batch_sizes=buckets.parse_sizes(args.batch_sizes) if args.batch_sizes else (),
                             pad_batches=args.pad_to_batch_sizes)
    if args.pad_to_batch_sizes and not args.batch_sizes:
        raise HlobridgeError("--pad-to-batch-sizes needs --batch-sizes")
    io = io_options(args)
    check_output_path(args.output)
    if args.output == "-" and args.emit == "vmfb":
        raise HlobridgeError("-o -: a .vmfb is binary; give a file name ('-' prints --emit stablehlo)")
    if args.stats:
        check_output_path(args.stats, "--stats")
    graph = args.graph
    if saved_model.is_saved_model(graph):  # its signature, variables frozen
        graph, io = saved_model.compile_target(args, io)
    dump = Dumper.from_flags(args.dump_to, args.dump_pass)
    if args.emit == "stablehlo":
        lowered = compiler.lower_for(graph, options, dump=dump, **io)  # with --batch-sizes, merged
        _say_buckets(args, lowered)
        text = lowered.text()
        if args.output == "-":
            sys.stdout.write(text)
        else:
            _write(args.output, text.encode())
        return 0
    kernels = {} if args.stats and args.target == "cuda" else None
    model = compiler.compile_graph(graph, options=options, dump=dump, kernels=kernels, **io)
    model.save(args.output)
    if args.stats:
        stats = dict(model.stats)
        if kernels is not None:
            found = gpu_report.report(model.lowered.text(debug_info=True), model.options, kernels,
                                      gpu_card(args.card))
            stats.update(found)
            print(gpu_report.format_summary(found["gpu"], found["gpu_dispatches"]), file=sys.stderr)
        _write(args.stats, (json.dumps(stats, indent=2) + "\n").encode())
    sig = model.signature
    _say_buckets(args, model.lowered)
    if not args.quiet:
        kind = args.target if model.options.backend == "iree" else f"{model.options.backend} portable artifact"
        print(f"wrote {args.output} ({len(model.vmfb)} bytes, {kind}): "
              f"{', '.join(n for n, _ in sig.inputs)} -> {', '.join(n for n, _ in sig.outputs)}",
              file=sys.stderr)
    return 0


def _say_buckets(args, lowered) -> None:
    """With --batch-sizes, one stderr line: the static functions and whether batches pad."""
    if args.batch_sizes and not args.quiet:
        print(f"batch sizes {args.batch_sizes}: static functions beside the dynamic main; padding: "
              f"{lowered.notes.get('batch_padding', 'off')}", file=sys.stderr)


def _write(path: str, data: bytes) -> None:
    try:
        Path(path).write_bytes(data)
    except OSError as e:  # the disk filled up during the compile
        raise HlobridgeError(f"{path}: cannot write: {e.strerror or e}") from None


def _cli_main() -> None:
    sys.exit(run_main(PROG, main))


if __name__ == "__main__":
    _cli_main()
