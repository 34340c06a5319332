"""Loading and calling compiled `.vmfb` modules.

    m = hlobridge.runtime.load("model.vmfb", device="cpu")
    m.input_names, m.output_names
    logits, probs = m.main(images)            # numpy in, numpy out, in signature order
    outs = m.run({"images:0": images})        # dict in, dict out

Devices: "cpu" uses IREE's `local-sync` driver (no thread hand-off per call: the
lowest latency for the small, latency-bound calls graphs make, see iree-notes);
"cpu-task" uses `local-task` (a thread pool, for large work); "cuda" an NVIDIA GPU.
Arguments are checked against the signature the compiler stored in the module. A warm call
does no more than that check and IREE's invocation: the expected shapes and dtypes are read
from the signature once, the order of `run`'s inputs is worked out once per set of names, and
only calls into the thread pool (local-task) move the calling thread (caller_affinity.py).
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import numpy as np
import iree.runtime as rt

from .. import dtypes, limits
from ..device_checks import device_check_error
from ..errors import HlobridgeError, InputError
from .buckets import with_buckets
from .caller_affinity import waiting_beside_the_pool
from .host import is_device_array, shape_of, to_host
from .straight_call import StraightCall
from .host_memory import keep_freed_buffers
from ..lowering.signature import SIGNATURE_KEY, Signature

DRIVERS = {"cpu": "local-sync", "cpu-sync": "local-sync", "cpu-task": "local-task",
           "local-sync": "local-sync", "local-task": "local-task", "cuda": "cuda"}


@lru_cache(maxsize=None)
def config(device: str) -> rt.Config:
    """One IREE instance/device per driver for the whole process (devices are costly)."""
    try:
        driver = DRIVERS[device]
    except KeyError:
        raise HlobridgeError(f"unknown device '{device}'; choose one of {', '.join(DRIVERS)}") from None
    if driver.startswith("local-"):
        keep_freed_buffers()  # IREE's CPU buffers come from malloc (host_memory.py)
    try:
        return rt.Config(driver)
    except (RuntimeError, ValueError) as e:
        raise HlobridgeError(f"device '{device}' (IREE driver {driver}) is not available: {e}") from None


def cuda_available() -> bool:
    """Whether IREE's cuda driver finds a GPU here."""
    try:
        config("cuda")
        return True
    except HlobridgeError:
        return False


def invoke_or_raise(invoke, args, what: str):
    """invoke(*args); an IREE runtime failure (an allocation the device refuses, ...) becomes an
    HlobridgeError naming `what`, with IREE's first line; a limit the compiled code checks (a
    While's iterations) becomes the ResourceLimitError it names, a compiled check (CheckNumerics)
    the error its kernel raises (device_checks.py)."""
    try:
        return invoke(*args)
    except RuntimeError as e:
        limit = limits.device_limit_error(str(e)) or device_check_error(str(e))
        if limit is not None:
            raise limit from None
        first = (str(e).strip("'\" \n").splitlines() or [type(e).__name__])[0]
        raise HlobridgeError(f"{what} failed on the device: {first.strip(chr(39))}") from None


def read_module(source) -> bytes:
    """A compiled module's bytes: `source` itself, or the file it names (an error names it)."""
    if not isinstance(source, (str, os.PathLike)):
        return source
    path = Path(source)
    try:
        return path.read_bytes()
    except OSError as e:
        raise HlobridgeError(f"{path}: cannot read: {e.strerror}") from None


class CompiledFunction:
    """One exported function with its signature; callable with numpy arrays or DeviceArrays."""

    def __init__(self, module: "LoadedModule", name: str, invoker, signature: Signature | None,
                 reflection: dict | None = None):
        self.module = module
        self.name = name
        self.invoke = invoker
        self.signature = signature
        self.reflection = reflection or {}  # what the compiler noted on the function (iree.reflection)
        # (shape, dtype) of each input, as a NumPy argument's own would compare equal
        self._expected = [(tuple(spec.shape), np.dtype(spec.dtype)) for _, spec in signature.inputs] \
            if signature else None
        self._pool = module.driver == "local-task"
        self._what = f"{name}()"  # how a failure names it
        self._straight = StraightCall.of(invoker, module.driver)
        # call_unchecked(args): the results as a tuple of DeviceArrays, no signature check (the
        # Session's launches, whose arguments fit by construction)
        self.call_unchecked = self._straight.device_arrays if self._straight else self._invoke_tuple

    def _invoke_tuple(self, args) -> tuple:
        results = self.invoke(*args)
        return () if results is None else results if isinstance(results, tuple) else (results,)

    # `invoke(*args)`: the fast path for callers that already know their arguments fit (the
    # Session's cluster launches): IREE's own invoker, no signature check, results as IREE
    # returns them (a DeviceArray, a tuple of them, or None).

    @property
    def input_names(self) -> list[str]:
        """The inputs' tensor names, in argument order."""
        return [n for n, _ in self.signature.inputs] if self.signature else []

    @property
    def output_names(self) -> list[str]:
        """The outputs' tensor names, in result order."""
        return [n for n, _ in self.signature.outputs] if self.signature else []

    def _check(self, args) -> list:
        expected = self._expected
        if expected is None:
            return list(args)
        if len(args) != len(expected):
            return self._check_each(args)
        for a, (shape, dtype) in zip(args, expected):  # the common case: arrays that fit as they are
            if type(a) is not np.ndarray or a.shape != shape or a.dtype != dtype:
                return self._check_each(args)
        return list(args)

    def _check_each(self, args) -> list:
        """Each argument against the signature; an InputError names the first that does not fit."""
        sig = self.signature
        if len(args) != len(sig.inputs):
            raise InputError(f"{self.name}() takes {len(sig.inputs)} input(s) "
                             f"({', '.join(self.input_names)}), got {len(args)}")
        checked = []
        for arg, (name, spec) in zip(args, sig.inputs):
            if is_device_array(arg):
                shape, dtype = shape_of(arg), arg.dtype  # not arg.shape: that maps IREE's buffer
            else:
                arg = np.asarray(arg)
                shape, dtype = arg.shape, arg.dtype
            if not _fits(tuple(shape), tuple(spec.shape)):
                raise InputError(f"input '{name}': expected shape "
                                 f"[{', '.join('?' if d is None else str(d) for d in spec.shape)}], got {list(shape)}")
            if np.dtype(dtype) != np.dtype(spec.dtype):
                raise InputError(f"input '{name}': expected dtype {dtypes.name(spec.dtype)}, "
                                 f"got {dtypes.name(dtype)}")
            checked.append(arg)
        return checked

    def _call(self, call, args) -> tuple:
        args = self._check(args)
        if self._pool:
            with waiting_beside_the_pool(self.module.driver):
                return invoke_or_raise(call, (args,), self._what)
        return invoke_or_raise(call, (args,), self._what)

    def call_device(self, *args):
        """Call and keep results on the device (DeviceArrays), for chaining calls."""
        return self._call(self.call_unchecked, args)

    def __call__(self, *args):
        if self._straight is not None:
            results = self._call(self._straight.host_arrays, args)
        else:
            results = tuple(to_host(r) for r in self.call_device(*args))
        return results[0] if len(results) == 1 else results


def _fits(shape: tuple, want: tuple) -> bool:
    """Whether an argument's shape fits a signature's (None, `?`: any size)."""
    return shape == want or (len(shape) == len(want) and all(w is None or s == w for s, w in zip(shape, want)))


class ModuleFunctions:
    """What a loaded module offers by name, whichever backend loaded it: functions as
    attributes (`m.main`), `main`'s inputs and outputs, `run` with a dict. A subclass fills
    `functions` (name -> CompiledFunction)."""

    functions: dict

    def __getattr__(self, name: str) -> CompiledFunction:
        functions = self.__dict__.get("functions", {})
        if name in functions:
            return functions[name]
        raise AttributeError(f"module has no function '{name}' (has {', '.join(functions)})")

    @property
    def _main(self) -> CompiledFunction:
        if "main" not in self.functions:
            raise HlobridgeError(f"module has no 'main' function (has {', '.join(self.functions)})")
        return self.functions["main"]

    @property
    def input_names(self) -> list[str]:
        """`main`'s input names."""
        return self._main.input_names

    @property
    def output_names(self) -> list[str]:
        """`main`'s output names."""
        return self._main.output_names

    def run(self, feeds: dict) -> dict:
        """Call `main` with inputs by name ('x' or 'x:0'); returns outputs by name."""
        main = self._main
        results = main(*self.arguments(feeds))
        if len(main.output_names) == 1:
            results = (results,)
        return dict(zip(main.output_names, results))

    def arguments(self, feeds: dict) -> list:
        """`main`'s arguments in order from inputs by name ('x' or 'x:0'); an error names the
        missing and unknown ones. The order is worked out once per set of names."""
        known = self.__dict__.setdefault("_argument_order", {})  # input names -> argument positions
        order = known.get(tuple(feeds))
        if order is not None:
            values = list(feeds.values())
            return [values[i] for i in order]
        args = self._arguments(feeds)
        names = [_input_name(k, self._main.input_names) for k in feeds]
        if len(set(names)) == len(names):  # "x" and "x:0" both given: resolved each time
            known[tuple(feeds)] = [names.index(n) for n in self._main.input_names]
        return args

    def _arguments(self, feeds: dict) -> list:
        main = self._main
        norm = {_input_name(k, main.input_names): v for k, v in feeds.items()}
        missing = [n for n in main.input_names if n not in norm]
        extra = [k for k in norm if k not in main.input_names]
        if missing or extra:
            parts = []
            if missing:
                parts.append(f"missing input(s) {', '.join(missing)}")
            if extra:
                parts.append(f"unknown input(s) {', '.join(extra)}")
            raise InputError(f"{'; '.join(parts)} (inputs: {', '.join(main.input_names)})")
        return [norm[n] for n in main.input_names]


class LoadedModule(ModuleFunctions):
    """A vmfb loaded on IREE's runtime on a device. Functions are attributes (`m.main`).

    `vm_module`: the vmfb already loaded by another LoadedModule on the same device, whose
    memory (the module's read-only data: its constants) this one shares; each still has a VM
    context of its own (row_split.py: the parts of a call)."""

    def __init__(self, vmfb: bytes | os.PathLike | str, device: str = "cpu", vm_module=None):
        self.device = device
        self.config = config(device)
        self.driver = DRIVERS[device]
        vmfb = read_module(vmfb)
        try:
            self.vm_module = vm_module or rt.VmModule.copy_buffer(self.config.vm_instance, vmfb)
        except (RuntimeError, ValueError) as e:
            raise HlobridgeError(f"not a loadable IREE module: {e}") from None
        self.context = rt.SystemContext(config=self.config)
        try:
            self.context.add_vm_module(self.vm_module)
        except (RuntimeError, ValueError) as e:
            raise HlobridgeError(f"cannot load the module on device '{device}': {e}") from None
        self._bound = getattr(self.context.modules, self.vm_module.name)
        self.functions: dict[str, CompiledFunction] = {}
        for fname in self.vm_module.function_names:
            if fname.startswith("__"):
                continue
            fn = self.vm_module.lookup_function(fname)
            reflection = dict(fn.reflection)
            sig_text = reflection.get(SIGNATURE_KEY)
            sig = Signature.from_json(sig_text) if sig_text else None
            self.functions[fname] = CompiledFunction(self, fname, self._bound[fname], sig, reflection)
        self.functions = with_buckets(self.functions)  # `main` picks main_b8 for a batch of 8


def _input_name(key: str, names: list[str]) -> str:
    """The input `key` feeds: itself, or "x" and "x:0" as one (a module compiled from a
    SavedModel names its inputs by the signature's keys, others by tensor names)."""
    if key in names:
        return key
    other = key.removesuffix(":0") if key.endswith(":0") else f"{key}:0"
    return other if other in names else (key if ":" in key else f"{key}:0")


def load(vmfb, device: str = "cpu") -> LoadedModule:
    """Load an IREE module (path or bytes) on `device`: "cpu", "cpu-task" or "cuda"
    (hlobridge.runtime.load, runtime/artifact.py, takes XLA's artifacts too)."""
    return LoadedModule(vmfb, device)
