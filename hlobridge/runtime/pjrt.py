"""A portable StableHLO artifact (compile/xla.py) loaded on a device through PJRT and XLA.

    m = hlobridge.runtime.load("model.mlirbc", device="cpu")   # jaxlib's CPU plugin
    logits, probs = m.main(images)

Devices: "cpu" (and "cpu-sync", "cpu-task": XLA's CPU client has one thread pool of its own)
and "cuda" (jaxlib's GPU plugin: jax-cuda12-plugin or jax-cuda13-plugin). Loading compiles:
XLA builds the executable for the device from the artifact (kept per process, so a second
load of the same bytes on the same device is free).

Values are jax Arrays: they stay on the device between calls, as IREE's DeviceArrays do, and
come to the host through `runtime.host.to_host` (NumPy's `__array__`). A host argument is put
on the device per call. The arguments a function's reflection ties to results
(`tf.aliasing_output`, compile/xla_input.py) are donated: XLA writes the new value into their
buffer, and the Array passed in is deleted. A function with compiled checks returns their
flags last; `invoke` reads them and raises the check's error (device_checks.py, limits.py).

Nothing here imports jax until a module is loaded.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import cache

import numpy as np

from ..compile.xla_input import CHECKS_KEY, XLA_REFLECTION
from ..errors import HlobridgeError
from ..lowering.signature import SIGNATURE_KEY, Signature
from .host import to_host
from .module import CompiledFunction, ModuleFunctions, read_module

# hlobridge device names -> the jax platform whose PJRT plugin runs them
PLATFORMS = {"cpu": "cpu", "cpu-sync": "cpu", "cpu-task": "cpu", "local-sync": "cpu", "local-task": "cpu",
             "cuda": "cuda"}
DRIVER = "pjrt"  # what `module.driver` says (no IREE thread pool to wait beside)


@cache
def pjrt_device(device: str):
    """The jax Device (PJRT client and device 0) that hlobridge's `device` names."""
    if device not in PLATFORMS:
        raise HlobridgeError(f"unknown device '{device}'; choose one of {', '.join(PLATFORMS)}")
    try:
        from jax.extend import backend as jax_backend
        client = jax_backend.get_backend(PLATFORMS[device])
    except ImportError:
        raise HlobridgeError("backend 'xla' needs jax and jaxlib: pip install 'hlobridge[xla]'") from None
    except RuntimeError as e:
        raise HlobridgeError(f"device '{device}' has no PJRT plugin here: {str(e).splitlines()[0]}") from None
    return client.local_devices()[0]


def to_device(array, device: str):
    """`array` (host, or a device buffer of either backend) as a jax Array on `device`."""
    import jax
    dev = pjrt_device(device)
    if _is_jax_array(array) and array.devices() == {dev}:
        return array
    with jax.enable_x64(True):  # 64-bit values as they are: jax would make int64 int32 by default
        return jax.device_put(np.asarray(to_host(array)), dev)


def to_devices(arrays: list, device: str) -> list:
    """to_device of each, the host values put in one call (jax's put costs ~100 us a call)."""
    import jax
    dev = pjrt_device(device)
    host = [i for i, a in enumerate(arrays) if not (_is_jax_array(a) and a.devices() == {dev})]
    if host:
        with jax.enable_x64(True):
            put = jax.device_put([np.asarray(to_host(arrays[i])) for i in host], dev)
        arrays = list(arrays)
        for i, value in zip(host, put):
            arrays[i] = value
    return arrays


def _is_jax_array(value) -> bool:
    return type(value).__module__.startswith("jaxlib") and hasattr(value, "is_deleted")


@cache
def _mlir_context():
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import chlo, stablehlo
    ctx = ir.Context()
    stablehlo.register_dialect(ctx)
    chlo.register_dialect(ctx)
    ctx.load_all_available_dialects()
    return ctx


def reflections(artifact: bytes) -> dict[str, dict]:
    """{public function name: its reflection (key: text)} as the artifact records them."""
    from jax.extend import mlir as jax_mlir
    from jaxlib.mlir import ir
    try:
        module = jax_mlir.deserialize_portable_artifact(artifact, context=_mlir_context())
    except Exception as e:  # noqa: BLE001
        raise HlobridgeError(f"not a StableHLO portable artifact: {str(e).splitlines()[0][:200]}") from None
    found = {}
    for op in module.body.operations:
        op = op.operation
        if op.name != "func.func" or "sym_visibility" in op.attributes:
            continue
        name = ir.StringAttr(op.attributes["sym_name"]).value
        notes = {}
        if XLA_REFLECTION in op.attributes:
            notes = {e.name: ir.StringAttr(e.attr).value for e in ir.DictAttr(op.attributes[XLA_REFLECTION])}
        found[name] = notes
    return found


_EXECUTABLES: dict = {}  # (artifact sha256, device) -> XLA's loaded executable, per process


def compiled(artifact: bytes, device: str):
    """XLA's executable of the artifact's `main` for `device` (compiled once per process)."""
    key = (hashlib.sha256(artifact).hexdigest(), device)
    if key not in _EXECUTABLES:
        dev = pjrt_device(device)
        from jax._src.lib import _jax  # the client's CompileOptions and DeviceList (jaxlib)
        try:
            _EXECUTABLES[key] = dev.client.compile_and_load(artifact, _jax.DeviceList((dev,)), _jax.CompileOptions())
        except Exception as e:  # noqa: BLE001  (XlaRuntimeError: XLA's diagnostics)
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise HlobridgeError(f"XLA failed to compile for {device}: {first[:400]}") from None
    return _EXECUTABLES[key]


class PjrtInvoker:
    """Calls one executable with device buffers: host values are put on the device first,
    check flags are read and raised, results come back as a tuple of jax Arrays."""

    def __init__(self, executable, device: str, checks: list[str]):
        self.executable = executable
        self.device = device
        self.checks = checks

    def __call__(self, *args):
        bufs = to_devices(list(args), self.device)
        try:
            results = [r[0] for r in self.executable.execute_sharded(bufs).disassemble_into_single_device_arrays()]
        except Exception as e:  # noqa: BLE001  (XLA's runtime errors)
            raise RuntimeError(str(e)) from None
        if self.checks:
            flags = results[len(results) - len(self.checks):]
            results = results[:len(results) - len(self.checks)]
            for ok, message in zip(flags, self.checks):
                if not bool(np.asarray(ok)):
                    raise RuntimeError(message)
        return tuple(results)


class PjrtModule(ModuleFunctions):
    """An artifact loaded on a device; functions are attributes (`m.main`), as LoadedModule's."""

    driver = DRIVER

    def __init__(self, artifact: bytes | os.PathLike | str, device: str = "cpu"):
        artifact = read_module(artifact)
        self.device = device
        self.artifact = artifact
        self.functions = {}
        for name, notes in reflections(artifact).items():
            if name != "main":  # XLA compiles the entry function; hlobridge writes one
                continue
            sig = Signature.from_json(notes[SIGNATURE_KEY]) if SIGNATURE_KEY in notes else None
            checks = json.loads(notes.get(CHECKS_KEY, "[]"))
            invoker = PjrtInvoker(compiled(artifact, device), device, checks)
            self.functions[name] = CompiledFunction(self, name, invoker, sig, notes)
        if "main" not in self.functions:
            raise HlobridgeError("the artifact has no public 'main' function")


__all__ = ["PjrtModule", "to_device", "pjrt_device"]
