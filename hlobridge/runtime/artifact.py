"""`hlobridge.runtime.load`: a compiled module, whichever backend wrote it.

An IREE module (`.vmfb`, a FlatBuffer) loads on IREE's runtime (module.py); a StableHLO
portable artifact (`hlobridge-compile --backend xla`, MLIR bytecode: it starts with
b"ML\\xefR") loads through PJRT and XLA (pjrt.py, the `xla` extra). Both give the same
module interface: `m.main(...)`, `m.run({...})`, `m.input_names`.
"""

from __future__ import annotations

from .module import LoadedModule, read_module

MLIR_BYTECODE = b"ML\xefR"


def load(artifact, device: str = "cpu"):
    """Load a compiled module (path or bytes) on `device`: "cpu", "cpu-task" or "cuda"."""
    artifact = read_module(artifact)
    if bytes(artifact[:4]) == MLIR_BYTECODE:
        from .pjrt import PjrtModule
        return PjrtModule(bytes(artifact), device)
    return LoadedModule(artifact, device)
