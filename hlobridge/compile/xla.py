"""XLA through PJRT: a module's StableHLO -> a portable artifact, which XLA compiles on load.

The artifact is StableHLO's portable form: the module (after compile/xla_input.py took out
what only IREE reads) serialized as versioned VHLO bytecode by jaxlib's
`jax.extend.mlir.serialize_portable_artifact`, targeting the StableHLO version
`WEEK_12` of jaxlib's compatibility window names. So the MLIR build inside IREE's bindings,
which lowered the module, and the one inside jaxlib never need to agree: the text crosses in
MLIR's generic op form and the bytes are readable by any jaxlib (any PJRT plugin) whose
StableHLO is at least that version, for years (StableHLO's compatibility guarantees).
Each function keeps its signature and notes under `hlobridge.reflection`, so an artifact
file describes itself (runtime/pjrt.py reads it back).

Compiling for a device is XLA's work and happens when the artifact is loaded
(`PJRT_Client_Compile` through jaxlib's client): the artifact is device-neutral, the same
bytes run on XLA's CPU plugin and on a GPU plugin.

jax and jaxlib are imported here only when a module is compiled or loaded for XLA: the core
never imports them.
"""

from __future__ import annotations

from functools import cache

from ..errors import CompileError
from .options import CompileOptions
from .xla_input import for_xla

# the file suffix hlobridge-compile suggests for an artifact (MLIR bytecode)
ARTIFACT_SUFFIX = ".mlirbc"
BYTECODE_MAGIC = b"ML\xefR"  # every MLIR bytecode file starts with it


@cache
def target_version() -> str:
    """The StableHLO version artifacts are written in: jaxlib's WEEK_12 compatibility target
    (readable by a consumer up to about 12 weeks older), else its current version."""
    from jaxlib.mlir.dialects import stablehlo
    requirement = getattr(stablehlo.StablehloCompatibilityRequirement, "WEEK_12", None)
    if requirement is None:
        return stablehlo.get_current_version()
    return stablehlo.get_version_from_compatibility_requirement(requirement)


def portable_artifact(source: str | bytes, exact_f32: bool = True) -> bytes:
    """StableHLO text or bytecode (IREE's MLIR) -> a portable artifact (versioned bytecode);
    `exact_f32` False leaves f32 products at DEFAULT precision (TF32 on a GPU)."""
    from jax.extend import mlir as jax_mlir
    text = for_xla(source, exact_f32)
    try:
        return jax_mlir.serialize_portable_artifact(text, target_version())
    except Exception as e:  # noqa: BLE001  (jaxlib raises plain errors with MLIR's diagnostics)
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise CompileError(f"jaxlib cannot read the module as StableHLO: {first[:400]}") from None


@cache
def _jaxlib_version() -> str:
    from importlib.metadata import version
    return version("jaxlib")


class XlaBackend:
    """XLA through PJRT (see the module docstring and compile/backend.py)."""

    name = "xla"

    def version(self) -> str:
        return f"jaxlib {_jaxlib_version()} stablehlo {target_version()}"

    def compile(self, source, options: CompileOptions, dump=None, stats=None, kernels=None) -> bytes:
        """The portable artifact (XLA compiles it at load: no stats, no kernels to report)."""
        if options.matmul_precision not in ("highest", "tf32"):
            raise CompileError(f"matmul_precision must be highest or tf32, got '{options.matmul_precision}'")
        exact = options.matmul_precision == "highest"
        artifact = portable_artifact(source, exact)
        if dump is not None and dump.wants("xla-input"):
            dump("xla-input", for_xla(source, exact))
        return artifact

    def load(self, artifact: bytes, device: str):
        from ..runtime.pjrt import PjrtModule
        return PjrtModule(artifact, device)

    def to_device(self, array, device: str):
        from ..runtime.pjrt import to_device
        return to_device(array, device)

    def to_host(self, buffer):
        from ..runtime.host import to_host
        return to_host(buffer)
