"""What a user may pass to `Session.run` as a feed, turned into an array or refused with an error
naming the feed.

Anything array-like is accepted: NumPy arrays (non-contiguous and read-only ones too; they are
copied to a contiguous array only when needed), scalars, nested lists, `str`/`bytes` for string
tensors. A value of a numeric kind casts to the placeholder's dtype where NumPy's "same_kind"
rule allows it (or it is an integer or bool, as TF's feeds do); everything else (None, ragged
lists, Python objects, strings or complex numbers where reals are expected, a wrong rank or
shape) is an `InputError` that names the feed and says what was expected.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..errors import InputError
from ..spec import TensorSpec


def feed_array(name: str, value, spec: TensorSpec | None, op: str = "Placeholder") -> np.ndarray:
    """`value` as the array fed to tensor `name`, whose declared spec (a placeholder's, `op`) is
    `spec`."""
    if value is None:
        raise InputError(f"feed '{name}' is None; feed an array")
    try:
        array = np.asarray(value)
    except (ValueError, TypeError) as e:
        raise InputError(f"feed '{name}' is not a tensor: {_first_line(e)} (a ragged nested list?)") from None
    if array.dtype.kind in "US":  # Python str/bytes feed a tf.string tensor (a checkpoint path)
        array = _as_strings(array)
    elif array.dtype == np.object_ and not all(isinstance(v, (bytes, str)) for v in array.ravel()):
        kinds = sorted({type(v).__name__ for v in array.ravel() if not isinstance(v, (bytes, str, int, float, complex))})
        raise InputError(f"feed '{name}' holds Python objects ({', '.join(kinds)}), not numbers or strings")
    elif array.dtype == np.object_:
        array = _as_strings(array)
    if spec is None:
        return array
    want = spec.dtype
    if want not in (dtypes.RESOURCE, dtypes.VARIANT) and array.dtype != want:
        array = _cast(name, array, np.dtype(want))
    if spec.shape is not None and (len(spec.shape) != array.ndim or any(
            d is not None and d != s for d, s in zip(spec.shape, array.shape))):
        raise InputError(f"feed '{name}' ({op}): expected shape {TensorSpec(want, spec.shape)}, "
                         f"got {list(array.shape)}")
    return array if array.flags.c_contiguous or array.dtype == np.object_ else np.ascontiguousarray(array)


def _cast(name: str, array: np.ndarray, want: np.dtype) -> np.ndarray:
    strings = array.dtype == np.object_
    if strings != (want == np.object_):
        raise InputError(f"feed '{name}': expected {dtypes.name(want)}, got "
                         f"{'strings' if strings else dtypes.name(array.dtype)}")
    if np.can_cast(array.dtype, want, "same_kind") or array.dtype.kind in "iub":
        return array.astype(want)
    raise InputError(f"feed '{name}': expected {dtypes.name(want)}, got {dtypes.name(array.dtype)}")


def _as_strings(array: np.ndarray) -> np.ndarray:
    """An object array of bytes (UTF-8 for str), as TF holds string tensors."""
    items = [v.encode() if isinstance(v, str) else bytes(v) for v in array.ravel()]
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out.reshape(array.shape)


def _first_line(error: Exception) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__
