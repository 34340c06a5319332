"""Backends: who compiles a module's StableHLO and runs it on a device.

Everything up to a cluster's StableHLO is backend-neutral; a backend is the rest, behind one
small interface that the runtime (plans, launches, variables in place, the compile cache,
profiles, timelines, the fallback to reference kernels) talks to:

    compile(source, options, dump, stats) -> bytes   the artifact the cache keeps
    load(artifact, device) -> module                 module.functions["main"].invoke(*args)
                                                     takes device buffers (or host arrays)
                                                     and donates the arguments the function's
                                                     reflection ties to results
    to_device(array, device) / to_host(buffer)       moving values
    version()                                        what keys the compile cache besides flags

Two exist: IREE (compile/iree.py and runtime/module.py: the default, and the only one the core
install has) and XLA through PJRT (compile/xla.py and runtime/pjrt.py: the `xla` extra,
jax and jaxlib, imported only when a module is compiled or loaded for it). A third backend
is one new pair of modules and a row in `_FACTORIES`.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from typing import Protocol

from ..errors import HlobridgeError
from .options import BACKENDS, CompileOptions

# backend="auto": which backend each target gets when the xla extra is installed, from the
# measured tables in docs/backends.md (the CPU model table; benchmarks/gpu_check.py's GPU table).
AUTO_CHOICE = {"llvm-cpu": "iree", "cuda": "xla"}


class Backend(Protocol):
    """What the runtime needs of a backend (see the module docstring)."""

    name: str

    def version(self) -> str: ...

    def compile(self, source: str | bytes, options: CompileOptions, dump=None, stats: dict | None = None,
                kernels: dict | None = None) -> bytes:
        """The artifact; `stats` and `kernels` (what each CUDA dispatch became, for the GPU report)
        receive what the backend can tell of its compile."""

    def load(self, artifact: bytes, device: str): ...

    def to_device(self, array, device: str): ...

    def to_host(self, buffer): ...


class IreeBackend:
    """IREE: iree-compile in a subprocess -> vmfb; the IREE runtime's DeviceArrays."""

    name = "iree"

    def version(self) -> str:
        return _version("iree-base-compiler")

    def compile(self, source, options, dump=None, stats=None, kernels=None) -> bytes:
        from .iree import compile_mlir
        return compile_mlir(source, options, dump, stats=stats, kernels=kernels)

    def load(self, artifact: bytes, device: str):
        from ..runtime.module import LoadedModule
        return LoadedModule(artifact, device)

    def to_device(self, array, device: str):
        import iree.runtime as rt
        from ..runtime.module import config
        return rt.asdevicearray(config(device).device, array)

    def to_host(self, buffer):
        from ..runtime.host import to_host
        return to_host(buffer)


def xla_available() -> bool:
    """Whether the `xla` extra (jax and jaxlib) is installed; nothing is imported."""
    return importlib.util.find_spec("jaxlib") is not None and importlib.util.find_spec("jax") is not None


def _xla_backend():
    if not xla_available():
        raise HlobridgeError("backend 'xla' needs jax and jaxlib: pip install 'hlobridge[xla]'")
    from .xla import XlaBackend
    return XlaBackend()


_FACTORIES = {"iree": IreeBackend, "xla": _xla_backend}


@cache
def backend_named(name: str) -> Backend:
    """The backend called `name` ("iree" or "xla"; "auto" must be resolved first)."""
    if name not in _FACTORIES:
        raise HlobridgeError(f"unknown backend '{name}'; choose one of {', '.join(BACKENDS)}")
    return _FACTORIES[name]()


def backend_of(options: CompileOptions) -> Backend:
    """The backend `options` compile with."""
    return backend_named(resolve(options.backend, options.target))


def resolve(name: str, target: str) -> str:
    """"auto" -> the backend AUTO_CHOICE names for `target` if it is installed, else IREE;
    "iree"/"xla" as they are (an unknown name is an error)."""
    if name == "auto":
        choice = AUTO_CHOICE.get(target, "iree")
        return choice if choice == "iree" or xla_available() else "iree"
    if name not in BACKENDS:
        raise HlobridgeError(f"unknown backend '{name}'; choose one of {', '.join(BACKENDS)}")
    return name


def _version(package: str) -> str:
    try:
        from importlib.metadata import version
        return version(package)
    except Exception:  # noqa: BLE001  (an unusual install: the flags still key the cache)
        return "unknown"
