"""hlobridge-opt: print the IR after a named stage, for lit/FileCheck tests and for people.

    hlobridge-opt graph.pbtxt                       # simplified StableHLO (default stage)
    hlobridge-opt graph.pbtxt --stage stablehlo     # as lowered, before simplification
    hlobridge-opt graph.pbtxt --stage shapes        # inferred dtypes/shapes per node
    hlobridge-opt graph.pbtxt --stage iree-flow     # an IREE phase (input, abi, flow, stream, hal, vm, ...)
    hlobridge-opt module.mlir --stage simplify      # run hlobridge's passes on StableHLO text
    hlobridge-opt module.mlir --stage simplify.cse  # stop after one pass inside a stage
    hlobridge-opt module.mlir --passes constant-fold,cse   # only these registered passes
    hlobridge-opt --list-stages                     # the pipeline's stages and passes, in order
    hlobridge-opt --list-passes                     # every registered pass, with what it does
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from iree.compiler import CompilerToolError, compile_str, ir

from hlobridge.passes.ir import pipeline

from ..compile import driver as compiler
from ..compile.driver import CompileOptions
from ..errors import CompileError, HlobridgeError
from .common import add_io_arguments, add_output_arguments, check_output_path, configure_output, io_options, run_main

PROG = "hlobridge-opt"
GRAPH_STAGES = ("graph", "shapes", "stablehlo")
IREE_PHASES = compiler.IREE_PHASES
_PIPELINE_STEPS = dict.fromkeys(n for p in pipeline.PRECISIONS for n in pipeline.step_names(pipeline.build(p)))
STAGES = GRAPH_STAGES + tuple(_PIPELINE_STEPS) + tuple(f"iree-{p}" for p in IREE_PHASES)


def parse_arguments(argv=None) -> argparse.Namespace:
    """hlobridge-opt's command line; an input file is required unless listing stages or passes."""
    p = argparse.ArgumentParser(prog=PROG, description="Print hlobridge IR after a stage.")
    p.add_argument("input", nargs="?", help=".pbtxt/.pb GraphDef or .mlir StableHLO module")
    p.add_argument("--stage", default=pipeline.DEFAULT_STAGES[-1].name, choices=STAGES,
                   help="stop after this stage and print its IR (default: %(default)s)")
    p.add_argument("--precision", default="f32", choices=pipeline.PRECISIONS,
                   help="add the precision stage: compute f32 in bf16 or f16")
    p.add_argument("--target", default="llvm-cpu", choices=compiler.TARGETS,
                   help="target for the iree-* stages")
    p.add_argument("-o", "--output", default="-", help="output file (default: stdout)")
    p.add_argument("--passes", default=None, metavar="NAME,...",
                   help="on .mlir input: run exactly these registered passes/stages, in order, "
                        "instead of the pipeline (see --list-passes)")
    p.add_argument("--list-stages", action="store_true", help="list the stages and exit")
    p.add_argument("--list-passes", action="store_true", help="list the registered passes and exit")
    add_io_arguments(p)
    add_output_arguments(p)
    args = p.parse_args(argv)
    if not (args.list_stages or args.list_passes) and not args.input:
        p.error("an input file is required")
    return args


def _stage_text_from_graph(args) -> str:
    captured: dict[str, str] = {}
    lowered = compiler.lower_graph(args.input, dump=compiler.Dumper(sink=captured.__setitem__),
                                   stages=pipeline.build(args.precision), **io_options(args))
    if args.stage in captured:
        return captured[args.stage]
    return _iree_phase(lowered.text(), args)


def _iree_phase(text: str, args) -> str:
    phase = args.stage.removeprefix("iree-")
    options = CompileOptions(target=args.target)
    try:
        out = compile_str(text, input_type="stablehlo", target_backends=[args.target],
                          extra_args=options.iree_flags() + [f"--compile-to={phase}"])
    except CompilerToolError as e:
        raise CompileError(str(e)) from None
    return out.decode() if isinstance(out, bytes) else out


def _stage_text_from_mlir(args) -> str:
    if args.stage in GRAPH_STAGES:
        raise HlobridgeError(f"stage '{args.stage}' needs a GraphDef input, not .mlir")
    text = Path(args.input).read_text()
    if args.stage.startswith("iree-"):
        return _iree_phase(text, args)
    with ir.Context():
        try:
            module = ir.Module.parse(text)
        except ir.MLIRError as e:
            raise HlobridgeError(f"{args.input}: {e}") from None
        if args.passes:
            stages = [pipeline.lookup(n.strip()) for n in args.passes.split(",") if n.strip()]
            pipeline.run(module, stages)
        else:
            pipeline.run(module, pipeline.build(args.precision), until=args.stage)
        return module.operation.get_asm()


def main(argv=None) -> int:
    """List stages or passes, or print (or write to -o) the IR after --stage or the --passes given;
    returns the exit status."""
    args = parse_arguments(argv)
    configure_output(args)
    if args.list_stages:
        print("\n".join(STAGES))
        return 0
    if args.list_passes:
        width = max(map(len, pipeline.REGISTRY))
        print("\n".join(f"{n:<{width}}  {s.description}" for n, s in sorted(pipeline.REGISTRY.items())))
        return 0
    check_output_path(args.output)
    if args.passes and not args.input.endswith(".mlir"):
        raise HlobridgeError("--passes runs on a .mlir module; for a GraphDef use --stage")
    if not Path(args.input).exists():
        raise HlobridgeError(f"{args.input}: no such file")
    is_mlir = args.input.endswith(".mlir")
    text = _stage_text_from_mlir(args) if is_mlir else _stage_text_from_graph(args)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        try:
            Path(args.output).write_text(text)
        except OSError as e:
            raise HlobridgeError(f"{args.output}: cannot write: {e.strerror or e}") from None
    return 0


def _cli_main() -> None:
    sys.exit(run_main(PROG, main))


if __name__ == "__main__":
    _cli_main()
