"""A compiled function's call without the Python layers of IREE's `FunctionInvoker`.

IREE's invoker, per call, builds an `Invocation` and an `InvokeContext`, packs the arguments,
invokes, and turns each result into a `DeviceArray` through a table of converters; bringing a
`DeviceArray` to the host asks the buffer again whether it is mappable, maps it and looks its
dtype up. For hlobridge's functions (tensors in, tensors out, no `iree.abi` reflection: the
invoker's dynamic mode) that is about 25 Python calls around the one that computes, more than
a small cluster's whole computation (benchmarks/call_overhead.py). A `StraightCall` keeps the
packing and the invocation (C++), and takes each result's buffer view as it is:
`device_arrays` wraps them as the invoker would, `host_arrays` maps them straight into NumPy
(local devices: the buffer is host memory, mapped without a copy; the array keeps the mapping
alive). A function whose results carry reflection types, or an IREE whose invoker is laid out
otherwise, keeps IREE's own invoker (`of` returns None).
"""

from __future__ import annotations

import numpy as np
from iree.runtime import DeviceArray, HalBufferView, HalElementType, VmVariantList
from iree.runtime._binding import InvokeContext

_DTYPES: dict = {}  # HAL element type -> NumPy dtype


def _dtype_of(element_type) -> np.dtype:
    dtype = _DTYPES.get(element_type)
    if dtype is None:
        dtype = _DTYPES[element_type] = np.dtype(HalElementType.map_to_dtype(element_type))
    return dtype


def _mapped_view(view) -> np.ndarray:
    """A local device's buffer view as NumPy, mapped (no copy); the array keeps the mapping alive."""
    return view.map().asarray(view.shape, _dtype_of(view.element_type))


def read_only_view(view) -> np.ndarray:
    """A local device's buffer view as read-only NumPy over its mapping (no copy), for a caller
    that copies it on (row_split.py joins the parts)."""
    return np.frombuffer(view.map(), _dtype_of(view.element_type)).reshape(view.shape)


def _copied_out(view) -> np.ndarray:
    """A local device's buffer view copied into an array of its own. Through NumPy's
    `frombuffer` over the mapping (read-only, hence the copy): 1.0 us a result, where IREE's
    `asarray` and a copy took 2.1 (a small cluster returns several)."""
    return read_only_view(view).copy()


class StraightCall:
    """`invoker`'s function, called with its arguments packed as IREE packs them."""

    def __init__(self, invoker, mappable: bool):
        self._pack = invoker._arg_packer.pack
        self._device = invoker._device
        self._vm_context = invoker._vm_context
        self._vm_function = invoker._vm_function
        self.mappable = mappable  # results are host memory (local-sync, local-task)

    @classmethod
    def of(cls, invoker, driver: str) -> StraightCall | None:
        if getattr(invoker, "_ret_descs", None) is not None:
            return None  # typed results: IREE's converters
        try:
            return cls(invoker, driver.startswith("local-"))
        except AttributeError:
            return None

    def prepare(self, args) -> tuple:
        """The packed arguments and an empty result list: what `invoke` takes. Packing holds
        the GIL; the invoke releases it (row_split.py packs on the calling thread and hands a
        worker only the invoke)."""
        return self._pack(InvokeContext(self._device), args, {}), VmVariantList(1)

    def invoke(self, prepared: tuple) -> None:
        """Run the function on prepared arguments; its results fill the prepared list."""
        self._vm_context.invoke(self._vm_function, *prepared)

    @staticmethod
    def result_views(prepared: tuple) -> list:
        """The buffer views of a prepared call's results, after its invoke."""
        results = prepared[1]
        return [results.get_as_object(i, HalBufferView) for i in range(len(results))]

    def views(self, args) -> list:
        """The results' buffer views (prepare, invoke and result_views, inline: the hot path of
        every call on the calling thread)."""
        arg_list = self._pack(InvokeContext(self._device), args, {})
        results = VmVariantList(1)
        self._vm_context.invoke(self._vm_function, arg_list, results)
        return [results.get_as_object(i, HalBufferView) for i in range(len(results))]

    def device_arrays(self, args) -> tuple:
        """The results as DeviceArrays, as IREE's invoker returns them in dynamic mode; on a
        local device each is marked host memory, so `mapped` brings it to NumPy without asking."""
        device = self._device
        arrays = tuple(DeviceArray(device, view, implicit_host_transfer=True) for view in self.views(args))
        if self.mappable:
            for a in arrays:
                a._hlobridge_host_memory = True
        return arrays

    def host_arrays(self, args) -> tuple:
        """The results as NumPy arrays: mapped where the device's memory is the host's."""
        if not self.mappable:
            return tuple(np.asarray(a.to_host()) for a in self.device_arrays(args))
        return tuple(_mapped_view(view) for view in self.views(args))

    def host_copies(self, args) -> list:
        """The results as NumPy arrays of their own (what a fetch hands the user, who may keep
        and write them): on a local device copied out of the mapped buffer, with no DeviceArray
        made on the way."""
        if not self.mappable:
            return [np.array(a.to_host()) for a in self.device_arrays(args)]
        return [_copied_out(view) for view in self.views(args)]


def mapped(array) -> np.ndarray | None:
    """A DeviceArray that `device_arrays` marked as host memory, as NumPy: its buffer mapped
    (no copy), kept on the array where IREE's own `to_host()` looks for it, without IREE's per-call
    mappability and dtype lookups (half of a small cluster's cost of fetching two results,
    benchmarks/call_overhead.py). None for any other value."""
    if not getattr(array, "_hlobridge_host_memory", False):
        return None
    if array._host_array is None:
        array._host_array = _mapped_view(array._buffer_view)
    return array._host_array
