"""The one error family hlobridge raises for user-facing problems.

Every error names what the user can act on: a file and line, a node, a cluster or an
input. The CLIs print `str(err)` and exit non-zero; they never show a traceback from
the parser's or MLIR's insides.
"""

from __future__ import annotations


class HlobridgeError(Exception):
    """Base class: a problem with the user's graph, inputs or options."""


class GraphDefError(HlobridgeError):
    """The file is not a readable GraphDef (syntax, wrong field, truncated bytes, ...)."""


class GraphError(HlobridgeError):
    """The GraphDef parsed but does not form a valid graph (dangling input, cycle, ...)."""


class UnsupportedOpsError(HlobridgeError):
    """One or more nodes use ops hlobridge cannot handle; lists all of them at once."""

    def __init__(self, nodes: list[tuple[str, str]], what: str = "compile"):
        self.nodes = nodes
        by_op: dict[str, list[str]] = {}
        for name, op in nodes:
            by_op.setdefault(op, []).append(name)
        lines = [f"cannot {what} {len(nodes)} node(s) with {len(by_op)} unsupported op type(s):"]
        for op, names in sorted(by_op.items()):
            shown = ", ".join(names[:8]) + (f", ... ({len(names) - 8} more)" if len(names) > 8 else "")
            lines.append(f"  {op}: {shown}")
        super().__init__("\n".join(lines))


class ShapeInferenceError(HlobridgeError):
    """A node's output shape or dtype could not be determined."""


class LoweringError(HlobridgeError):
    """A node could not be lowered to StableHLO, or the IR failed verification."""


class CompileError(HlobridgeError):
    """IREE rejected the module."""


class InputError(HlobridgeError):
    """A runtime argument has the wrong count, name, shape or dtype."""


class ResourceLimitError(HlobridgeError):
    """A tensor or constant is over a size limit (limits.py): refused before allocation."""


class AssertionFailedError(HlobridgeError):
    """An Assert op's condition was false: the run stops with the assertion's message."""


class CheckNumericsError(HlobridgeError):
    """A CheckNumerics op found a NaN or an infinity: the run stops with the op's message."""


class FusionFallbackWarning(UserWarning):
    """IREE could not compile hlobridge's dispatch regions; IREE formed the dispatches itself."""


class JitFallbackWarning(UserWarning):
    """A cluster did not compile and ran on reference kernels (TensorFlow does this silently)."""


class RecompilationWarning(UserWarning):
    """A cluster keeps meeting new input signatures, and compiles each one."""


class CheckpointError(HlobridgeError):
    """A checkpoint (TensorBundle) is missing, truncated or corrupt, or lacks a tensor."""


class SavedModelError(HlobridgeError):
    """A SavedModel directory cannot be loaded: no saved_model.pb, no such tags or signature."""


class CacheWarning(UserWarning):
    """The disk cache could not be used (an unwritable or full disk, a corrupt entry): compiles
    go on, kept in memory or compiled again."""
