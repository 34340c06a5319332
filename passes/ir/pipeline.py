"""A small pass manager: named stages over an MLIR module, every pass able to dump its IR.

A stage is a name plus either `run`, a function that rewrites the module in place (one
pass), or `passes`, a tuple of passes run in order. Upstream MLIR passes are wrapped by
`mlir_pipeline("cse", "cse")`; Python passes are plain functions. `run(module, stages,
dump=...)` calls `dump("stage.pass", text)` after each pass inside a stage and
`dump("stage", text)` after each stage; the compiler driver turns these into numbered
files (`--dump-to DIR`, filtered by `--dump-pass REGEX`). Every pass and stage is
registered by name in `REGISTRY`, so `hlobridge-opt --passes NAME,...` runs any of them
alone, as the lit tests in tests/lit/passes do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from iree.compiler import ir
from iree.compiler.passmanager import PassManager

from hlobridge.debug import progress
from hlobridge.errors import HlobridgeError, LoweringError

from .algebraic_simplify import algebraic_simplify
from .constant_fold import constant_fold
from .fold_batch_norm import fold_batch_norm
from .fusion import MODES as FUSION_MODES
from .fusion import fuse
from .hoist_negation import hoist_negation
from .reduce_precision import LOW_TYPES, reduce_precision
from .split_contractions import split_contractions
from .split_narrow_rows import split_narrow_rows
from .separate_loop_inits import separate_loop_inits
from .tie_variables import tie_variables
from .work_estimate import estimate_work


@dataclass(frozen=True)
class Stage:
    """One pass (`run`) or a group of passes (`passes`), under a name that dumps and filters."""

    name: str
    run: Callable[[ir.Module], object] | None = None
    description: str = ""
    passes: tuple["Stage", ...] = ()

    def step_names(self, prefix: str = "") -> list[str]:
        """Qualified names in the order `run()` dumps them: each pass, then the stage."""
        name = prefix + self.name
        inner = [n for p in self.passes for n in p.step_names(name + ".")]
        return inner + [name]


REGISTRY: dict[str, Stage] = {}


def register(stage: Stage) -> Stage:
    """Add `stage` to REGISTRY under its name (names must be unique) and return it."""
    if stage.name in REGISTRY:
        raise ValueError(f"two passes named '{stage.name}'")
    REGISTRY[stage.name] = stage
    return stage


def lookup(name: str) -> Stage:
    """The registered stage or pass called `name`; an unknown name is an error listing the known ones."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise HlobridgeError(f"unknown pass '{name}'; known: {', '.join(sorted(REGISTRY))}") from None


def mlir_pipeline(name: str, pipeline: str, description: str = "") -> Stage:
    """A stage running an upstream pass pipeline, e.g. "inline,canonicalize,cse,symbol-dce"."""
    def run(module: ir.Module) -> None:
        pm = PassManager.parse(f"builtin.module({pipeline})")
        pm.run(module.operation)
    return Stage(name, run, description or pipeline)


# Upstream passes, each a named step of its own.
INLINE = register(mlir_pipeline("inline", "inline", "inline calls to private functions"))
CANONICALIZE = register(mlir_pipeline(
    "canonicalize", "canonicalize", "MLIR's folders and canonical forms, dead-op removal"))
STABLEHLO_CANONICALIZE = register(mlir_pipeline(
    "stablehlo-canonicalize", "func.func(iree-stablehlo-canonicalize)",
    "IREE's StableHLO simplifications: x-0, x+(-0), reshape of reshape, same-type converts, "
    "folding of constant add/multiply/reshape"))
CSE = register(mlir_pipeline("cse", "cse", "merge identical side-effect-free ops"))
SYMBOL_DCE = register(mlir_pipeline("symbol-dce", "symbol-dce", "drop functions nobody calls"))

# Our passes.
ALGEBRAIC_SIMPLIFY = register(Stage(
    "algebraic-simplify", algebraic_simplify,
    "x*1, x/1, x+(-0.0), x-(+0.0), negate(negate), select(p,x,x), transpose/reshape/broadcast "
    "chains, no-op converts; float results unchanged bit for bit"))
CONSTANT_FOLD = register(Stage(
    "constant-fold", constant_fold,
    "elementwise ops, converts, reshape/transpose/slice/concatenate and splat broadcasts of "
    "constants, computed in NumPy (up to 65536 elements)"))
FOLD_BATCH_NORM = register(Stage(
    "fold-batch-norm", fold_batch_norm,
    "(conv(x, W) - m) * s + o -> conv(x, W*s) + (o - m*s) where W, m, s, o are per-channel "
    "constants: inference batch norm folded into its convolution or dot (rounded once, not bit "
    "for bit)"))
SPLIT_NARROW_ROWS = register(Stage(
    "split-narrow-rows", split_narrow_rows,
    "a dot of a few rows by constant weights cut into row pieces that fill IREE's CPU matmul "
    "tiles (9 rows as 8 + 1, not one 16-row tile); bit for bit"))
HOIST_NEGATION = register(Stage("hoist-negation", lambda module: hoist_negation(module),
                                "sum(-x) -> -sum(x), which IREE's CUDA backend needs"))

SEPARATE_LOOP_INITS = register(Stage(
    "separate-loop-inits", separate_loop_inits,
    "a copy of each While initial value that something else also reads (IREE's async CPU "
    "driver frees it after a loop that ran zero times)"))

TIE_VARIABLES = register(Stage(
    "tie-variables", tie_variables,
    "each variable argument only its own elementwise update reads becomes the storage of its "
    "new value (iree.abi.output): written in place, no new buffer per step"))

ESTIMATE_WORK = register(Stage(
    "estimate-work", estimate_work,
    "each function's arithmetic, estimated, noted in its reflection (hlobridge.work): the Session "
    "runs small clusters on the calling thread"))

CONVERT_TO = {low: register(Stage(
    f"convert-to-{low}", lambda module, low=low: reduce_precision(module, low),
    f"f32 compute in {low}: converts around elementwise ops, {low} operands for dots and "
    "convolutions with f32 results, reductions left in f32")) for low in LOW_TYPES}

SPLIT_CONTRACTIONS = register(Stage(
    "split-contractions", split_contractions,
    "f32 dots and convolutions as three bf16 products with f32 accumulation (bf16x3): f32-class "
    "results on tensor cores, where IREE has no TF32"))

# The simplification hlobridge runs on every lowered module before IREE.
SIMPLIFY = register(Stage(
    "simplify", description="inline calls, fold and simplify, common subexpressions, drop dead "
                            "functions",
    # constant-fold before IREE's folder: ours reshapes a weight at memory speed, IREE's element
    # by element (passes/ir/constant_fold.py)
    passes=(INLINE, CANONICALIZE, CONSTANT_FOLD, STABLEHLO_CANONICALIZE, ALGEBRAIC_SIMPLIFY, CSE,
            SYMBOL_DCE)))


# "bf16x3": only the contractions, each as three bf16 products (split_contractions.py)
PRECISIONS = ("f32", *LOW_TYPES, "bf16x3")

# Dispatch formation (passes/ir/fusion.py): the last stage; "iree" adds none (IREE decides).
FUSION_STAGES = {
    "hlobridge": register(Stage(
        "fusion", lambda module: fuse(module, "hlobridge"),
        "hlobridge's fusion decisions (elementwise chains, reductions with their producers, dot "
        "epilogues, softmax chains, sibling reductions), each group an IREE flow.dispatch.region")),
    "none": register(Stage(
        "no-fusion", lambda module: fuse(module, "none"),
        "one flow.dispatch.region per computing op: no fusion, one dispatch per op")),
}


def precision_stage(precision: str) -> Stage:
    """Compute in bf16/f16: the conversion, then constant converts folded, low->f32->low
    round trips cancelled and duplicate converts merged."""
    return Stage("precision", description=f"f32 compute in {precision}",
                 passes=(CONVERT_TO[precision], CONSTANT_FOLD, ALGEBRAIC_SIMPLIFY, CSE))


def reduces_precision(stages) -> bool:
    """Whether `stages` compute f32 in bf16/f16 (the lowering then marks the ops Keras keeps f32)."""
    return any(CONVERT_TO[low] in stage.passes for stage in stages for low in LOW_TYPES)


def build(precision: str | None = None, fusion: str | None = None, tie_variables: bool = False,
          estimate_work: bool = False, fold_batch_norm: bool = True,
          split_narrow_rows: bool = False) -> tuple[Stage, ...]:
    """The pipeline every lowered module goes through, with the stages the options ask for:
    `precision` "bf16"/"f16"/"bf16x3" adds the precision stage ("f32" or None: off); `tie_variables`
    the variables written in place (for callers that hand over their variables' buffers, as
    the Session does); `estimate_work` the work estimate that picks a cluster's executor (the
    Session); `fusion` "hlobridge"/"none" adds the fusion stage ("iree" or None: IREE forms
    dispatches); `fold_batch_norm` False leaves inference batch norms unfolded (TensorFlow's
    rounding, op for op); `split_narrow_rows` cuts dots of a few rows into pieces that fill this
    host's CPU matmul tiles (only for IREE's llvm-cpu with data tiling: CompileOptions decides)."""
    stages = [SIMPLIFY, *([FOLD_BATCH_NORM] if fold_batch_norm else []),
              *([SPLIT_NARROW_ROWS] if split_narrow_rows else []), HOIST_NEGATION, SEPARATE_LOOP_INITS]
    if precision == "bf16x3":
        stages.append(Stage("precision", description="f32 contractions as three bf16 products",
                            passes=(SPLIT_CONTRACTIONS, CSE)))
    elif precision not in (None, "f32"):
        if precision not in LOW_TYPES:
            raise HlobridgeError(f"precision must be one of {', '.join(PRECISIONS)}, got '{precision}'")
        stages.append(precision_stage(precision))
    if tie_variables:
        stages.append(TIE_VARIABLES)
    if estimate_work:
        stages.append(ESTIMATE_WORK)
    if fusion not in (None, "iree"):
        if fusion not in FUSION_STAGES:
            raise HlobridgeError(f"fusion must be one of {', '.join(FUSION_MODES)}, got '{fusion}'")
        stages.append(FUSION_STAGES[fusion])
    return tuple(stages)


DEFAULT_STAGES: tuple[Stage, ...] = build()


def step_names(stages: Iterable[Stage] = DEFAULT_STAGES) -> list[str]:
    """Every name `run(stages)` can dump, in order (for --stage choices and --dump-pass)."""
    return [n for s in stages for n in s.step_names()]


def run(module: ir.Module, stages: Iterable[Stage] = DEFAULT_STAGES, dump=None,
        until: str | None = None) -> bool:
    """Run `stages` in order on `module` (inside its context), calling `dump(name, text)`
    after each pass and stage. With `until`, stop after the step of that qualified name
    ("simplify", "simplify.cse"); returns whether it was reached."""
    for stage in stages:
        if _run(stage, module, dump, "", until):
            return True
    return until is None


def _run(stage: Stage, module: ir.Module, dump, prefix: str, until: str | None) -> bool:
    name = prefix + stage.name
    if not prefix:
        progress.report("StableHLO passes", name)
    if stage.passes:
        for p in stage.passes:
            if _run(p, module, dump, name + ".", until):
                return True
    else:
        try:
            stage.run(module)
        except ir.MLIRError as e:  # MLIR verifies after each upstream pass; its diagnostics name nodes
            raise LoweringError(f"pass {name} failed: {e}") from None
    # A Dumper says which names it keeps: printing a large module costs more than most passes.
    if dump is not None and getattr(dump, "wants", lambda _: True)(name):
        dump(name, module.operation.get_asm())
    return name == until
