"""Resource limits, checked before anything is allocated: a malformed or hostile graph gets an
error naming the node and the size, not a 5 GB allocation or a hang.

Two limits, both far above what real models use (the largest tensors of the Keras applications
are ~10^8 elements; their largest weights ~400 MB), overridable in HLOBRIDGE_FLAGS:

- `--max-constant-bytes` (default 2 GiB): a constant decoded from a GraphDef (a splat of one
  value with a huge shape included), or a value computed at compile time;
- `--max-tensor-elements` (default 2**31): any tensor whose shape inference makes static (a
  Fill, Range, Tile or broadcast of 2**40 elements stops here, before a kernel or IREE sees it).
"""

from __future__ import annotations

from . import flags
from .errors import ResourceLimitError

DEFAULT_MAX_CONSTANT_BYTES = 2 ** 31
DEFAULT_MAX_TENSOR_ELEMENTS = 2 ** 31


def max_constant_bytes() -> int:
    """The constant-size limit in force (HLOBRIDGE_FLAGS or the default)."""
    return flags.from_environment().max_constant_bytes or DEFAULT_MAX_CONSTANT_BYTES


def max_tensor_elements() -> int:
    """The tensor-size limit in force (HLOBRIDGE_FLAGS or the default)."""
    return flags.from_environment().max_tensor_elements or DEFAULT_MAX_TENSOR_ELEMENTS


def check_constant_bytes(nbytes: int, where: str) -> None:
    """Refuse a constant of `nbytes` bytes over the limit; `where` names the node or attr."""
    limit = max_constant_bytes()
    if nbytes > limit:
        raise ResourceLimitError(f"{where}: a constant of {nbytes:,} bytes is over the limit of {limit:,} "
                                 f"(raise it with HLOBRIDGE_FLAGS=--max-constant-bytes=N)")


def check_tensor_elements(count: int, where: str) -> None:
    """Refuse a tensor of `count` elements over the limit; `where` names the node and output."""
    limit = max_tensor_elements()
    if count > limit:
        raise ResourceLimitError(f"{where}: a tensor of {count:,} elements is over the limit of {limit:,} "
                                 f"(raise it with HLOBRIDGE_FLAGS=--max-tensor-elements=N)")
