"""Running iree-compile: StableHLO text or bytecode -> vmfb bytes.

IREE runs as the `iree-compile` subprocess (`compile_str`), so a crash inside IREE is an error
message, not a dead Python process (see iree-notes). Its phases can be dumped, its dispatch
statistics collected (iree_stats.py), and a module whose hlobridge dispatch regions IREE
rejects is compiled again without them, with a warning.
"""

from __future__ import annotations

import contextlib
import logging
import re
import tempfile
import threading
import warnings
from pathlib import Path

from iree.compiler import CompilerToolError, compile_str

from hlobridge.passes.ir.dispatch_regions import without_regions
from hlobridge.passes.ir.pack_barriers import add_pack_barriers, drop_pack_barriers

from ..debug import progress
from ..debug.dump import Dumper
from ..errors import CompileError, FusionFallbackWarning
from . import gpu_kernels, iree_stats
from .options import DATA_TILING_FLAG, OPTIONAL_CPU_FLAGS, TILING_FLAGS, CompileOptions

log = logging.getLogger(__name__)

# IREE's compilation phases, dumped as iree-<phase> (--compile-to accepts each).
IREE_PHASES = ("input", "abi", "preprocessing", "global-optimization", "dispatch-creation", "flow",
               "stream", "executable-sources", "executable-configurations", "executable-targets",
               "hal", "vm")

def compile_mlir(source: str | bytes, options: CompileOptions, dump: Dumper | None = None,
                 stats: dict | None = None, kernels: dict | None = None) -> bytes:
    """StableHLO text or bytecode -> vmfb bytes, in the iree-compile subprocess; a `stats`
    dict receives IREE's dispatch statistics (iree_stats.py), a `kernels` dict what IREE made
    of each CUDA dispatch (gpu_kernels.py: pipeline, work, tensor-core instructions)."""
    tmp = None
    extra = options.iree_flags()
    stats_dir = tempfile.TemporaryDirectory(prefix="hlobridge-stats-") if stats is not None else None
    if stats_dir is not None:
        extra += iree_stats.flags(Path(stats_dir.name) / "stats.json")
    kernel_dir = tempfile.TemporaryDirectory(prefix="hlobridge-kernels-") if kernels is not None else None
    if kernel_dir is not None:
        extra += gpu_kernels.dump_flags(kernel_dir.name)
    if dump is not None and dump.directory and any(dump.wants(f"iree-{p}") for p in IREE_PHASES):
        tmp = tempfile.mkdtemp(prefix="iree-phases-", dir=dump.directory)
        extra.append(f"--dump-compilation-phases-to={tmp}")
    try:
        with _phases_shown(extra):
            vmfb = _iree_compile(source, options, extra, dropped := [])
        if dropped and stats is not None:
            stats["dropped_flags"] = dropped
    finally:
        if stats_dir is not None:
            stats_file = Path(stats_dir.name) / "stats.json"
            if stats_file.exists():
                stats.update(iree_stats.read(stats_file))
            stats_dir.cleanup()
        if kernel_dir is not None:
            kernels.update(gpu_kernels.read_dump(kernel_dir.name))
            kernel_dir.cleanup()
    if tmp:
        phases = sorted(Path(tmp).glob("*.mlir"), key=lambda p: int(p.name.rsplit(".", 3)[1]))
        for p in phases:
            dump(f"iree-{p.name.rsplit('.', 3)[2]}", p.read_text())
            p.unlink()
        Path(tmp).rmdir()
    return vmfb


@contextlib.contextmanager
def _phases_shown(extra: list[str]):
    """While a progress line shows (debug/progress.py), the phase iree-compile is in: it dumps
    each phase as it finishes (constants elided: the dumps only say how far it got) into a
    directory a thread watches. Costs about a tenth of a small module's compile, so only on a
    terminal; the binary is the same."""
    if not progress.showing() or any(f.startswith("--dump-compilation-phases-to=") for f in extra):
        yield
        return
    with tempfile.TemporaryDirectory(prefix="hlobridge-phases-") as tmp:
        extra += [f"--dump-compilation-phases-to={tmp}", "--mlir-elide-elementsattrs-if-larger=16",
                  "--mlir-elide-resource-strings-if-larger=16"]
        stop = threading.Event()

        def watch() -> None:
            while True:  # files are <module>.<n>.<phase>.mlir, n from 1; shown from the start
                done = max((int(p.name.rsplit(".", 3)[1]) for p in Path(tmp).glob("*.mlir")), default=0)
                progress.phase(IREE_PHASES[min(done, len(IREE_PHASES) - 1)])
                if stop.wait(0.25):
                    return
        watcher = threading.Thread(target=watch, name="hlobridge-iree-phases", daemon=True)
        watcher.start()
        try:
            yield
        finally:
            stop.set()
            watcher.join()


def _iree_compile(source: str | bytes, options: CompileOptions, extra: list[str], dropped: list) -> bytes:
    """compile_str; if that fails with data tiling or pad fusion on, again without them (named
    in `dropped` and logged: a whole module, static bucket functions included, loses them); if
    IREE cannot compile hlobridge's dispatch regions (passes/ir/fusion.py), warn and compile the
    same module without them, as fusion="iree" would."""
    def compile_once(src):
        try:
            return compile_str(src, input_type="stablehlo", target_backends=[options.target], extra_args=extra)
        except CompilerToolError as e:
            raise CompileError(f"IREE failed to compile for {options.target}:\n{_short_diagnostics(str(e))}") from None

    if set(TILING_FLAGS) & set(extra) and _has_static_batched_dot(source):
        extra = [f for f in extra if f not in TILING_FLAGS]
    if (DATA_TILING_FLAG not in extra or options.target != "llvm-cpu") and isinstance(source, str):
        source = drop_pack_barriers(source)  # (they are for the CPU's packing dispatches)
    try:
        return compile_once(source)
    except CompileError as e:
        error = e
    if DATA_TILING_FLAG in extra and options.target == "llvm-cpu" and isinstance(source, str) \
            and (held := add_pack_barriers(source)):
        try:  # the packs in dispatches of their own (passes/ir/pack_barriers.py)
            vmfb = compile_once(held)
            log.info("IREE failed to data-tile the module; compiled with its matmul operands behind barriers")
            return vmfb
        except CompileError:
            pass
    if set(OPTIONAL_CPU_FLAGS) & set(extra):  # IREE 3.13 fails on some packs (options.py): plainer
        dropped += [f for f in extra if f in OPTIONAL_CPU_FLAGS]
        log.info("IREE failed with %s; compiling without them", " ".join(dropped))
        extra = [f for f in extra if f not in OPTIONAL_CPU_FLAGS]
        source = drop_pack_barriers(source) if isinstance(source, str) else source
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


_BATCHED_DOT = re.compile(r"stablehlo\.dot_general[^\n]*batching_dims = \[\d[^\n]*")


def _has_static_batched_dot(source: str | bytes) -> bool:
    """Whether the module has a dot_general with batch dimensions (BatchMatMul, Einsum) over
    static shapes only.

    IREE 3.13 miscompiles such a dot with data tiling on when its operand comes from a
    reduction over the operand's last dimension broadcast back (a softmax: Keras's Attention,
    AdditiveAttention and Dot(normalize=True) layers): the rows of every batch after the
    first come out wrong (found by the Keras layer sweep; the 12-line reproducer is in
    docs/keras-sweep.md). Such modules compile untiled. One over `?` dimensions has its
    operands behind barriers (dialects/dynamic_shapes.py, BATCHED_DOT_BARRIERS), which data
    tiling compiles right."""
    text = source if isinstance(source, str) else source.decode("utf-8", "ignore")
    return any("?" not in m.group(0) for m in _BATCHED_DOT.finditer(text))


def _short_diagnostics(text: str, limit: int = 40) -> str:
    """IREE's own diagnostics out of a CompilerToolError's text (errors and notes first), and
    how iree-compile ended when a signal killed it (an out-of-memory kill, a crash)."""
    head, _, rest = text.partition("Diagnostics:")
    diagnostics = rest.split("Invoked with:")[0] if rest else text
    lines = [ln for ln in diagnostics.splitlines() if ln.strip()]
    keep = [ln for ln in lines if "error" in ln.lower() or "note" in ln.lower()] or lines
    code = re.search(r"Error code: (-?\d+)", head)
    if code and int(code.group(1)) < 0:
        keep.insert(0, f"iree-compile was killed by signal {-int(code.group(1))}")
    return "\n".join(keep[:limit])
