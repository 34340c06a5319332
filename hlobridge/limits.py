"""Resource limits, checked before anything is allocated: a malformed or hostile graph gets an
error naming the node and the size, not a 5 GB allocation or a hang.

Three limits, all far above what real models use (the largest tensors of the Keras applications
are ~10^8 elements; their largest weights ~400 MB; recurrent loops run once per time step),
overridable in HLOBRIDGE_FLAGS:

- `--max-constant-bytes` (default 2 GiB): a constant decoded from a GraphDef (a splat of one
  value with a huge shape included), or a value computed at compile time;
- `--max-tensor-elements` (default 2**31): any tensor whose shape inference makes static (a
  Fill, Range, Tile or broadcast of 2**40 elements stops here, before a kernel or IREE sees it);
- `--max-loop-iterations` (default 10**6): the iterations one While may run in one run. A
  compiled loop cannot be interrupted inside IREE, so a While whose counter starts at -2**31
  would hold the process for hours, in TensorFlow too. Compiled loops check the limit on the
  device (ops/control/flow.py, ops/control/loop_bounds.py) and fail with `DEVICE_LIMIT_MARK` in
  IREE's message, which `device_limit_error` turns back into a ResourceLimitError; the
  reference kernels count in Python.
"""

from __future__ import annotations

from . import flags
from .errors import ResourceLimitError

DEFAULT_MAX_CONSTANT_BYTES = 2 ** 31
DEFAULT_MAX_TENSOR_ELEMENTS = 2 ** 31
DEFAULT_MAX_LOOP_ITERATIONS = 10 ** 6
# Compiled loops count in int32 (one more than the limit must fit).
_MAX_COMPILED_LOOP_LIMIT = 2 ** 31 - 2
DEVICE_LIMIT_MARK = "hlobridge limit: "


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


def max_loop_iterations() -> int:
    """The While iteration limit in force (HLOBRIDGE_FLAGS or the default)."""
    return flags.from_environment().max_loop_iterations or DEFAULT_MAX_LOOP_ITERATIONS


def compiled_loop_limit() -> int:
    """The iteration limit a compiled loop checks (the limit, capped to what int32 counts)."""
    return min(max_loop_iterations(), _MAX_COMPILED_LOOP_LIMIT)


def loop_limit_message(where: str, limit: int) -> str:
    """The error for a While that would run more than `limit` iterations; `where` names it."""
    return (f"{where}: the loop runs more than {limit:,} iterations, the limit (raise it with "
            f"HLOBRIDGE_FLAGS=--max-loop-iterations=N)")


def check_loop_iterations(count: int, where: str) -> None:
    """Refuse a While about to run its `count`-th iteration, over the limit."""
    limit = max_loop_iterations()
    if count > limit:
        raise ResourceLimitError(loop_limit_message(where, limit))


def device_limit_error(device_message: str) -> ResourceLimitError | None:
    """The ResourceLimitError a compiled limit check raised, from IREE's error text (the
    check's message follows DEVICE_LIMIT_MARK, up to IREE's ';'); None for other failures."""
    _, mark, rest = device_message.partition(DEVICE_LIMIT_MARK)
    return ResourceLimitError(rest.split(";")[0].strip()) if mark else None
