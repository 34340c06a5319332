"""Keeping freed host memory for the next step, as TensorFlow's BFC allocator keeps its pool.

On the CPU drivers IREE's buffers come from malloc. glibc serves a large block with a fresh
mmap and returns it to the OS on free (its dynamic threshold stops rising at 32 MiB), so a
training step that writes new buffers for its weights, slots and activations faults every page
of them in again, every step. Measured on ResNet-50 v1 training (64x64, batch 4, 2-core VM):
165 ms/step as glibc does it, 97 ms with blocks below 1 GiB served from the heap and the heap
not trimmed; the small graphs and inference are unchanged. The price is that the process keeps
its peak of freed memory for reuse instead of returning it.

`keep_freed_buffers()` runs once, when hlobridge opens a CPU device; HLOBRIDGE_FLAGS
`--release-host-memory` keeps glibc's defaults. Elsewhere than glibc on Linux it does nothing.
`child_environment()` gives a subprocess running IREE's tools (the profiler's replay) the same
settings, through glibc's environment variables: without them the replay of a ResNet-50
training step faulted in its outputs every call and ran at half the Session's speed.
"""

from __future__ import annotations

import ctypes
import sys
from functools import cache

from .. import flags

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
MMAP_THRESHOLD = 1 << 30  # blocks below this come from the heap, and go back to it
TRIM_THRESHOLD = 2 ** 31 - 1  # free memory at the heap's top kept up to this


@cache
def keep_freed_buffers() -> bool:
    """Tell glibc to keep large freed blocks for reuse; whether it took the settings."""
    if flags.from_environment().release_host_memory or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl, ...): nothing to tune
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))


def child_environment() -> dict:
    """The environment variables that give a child process this process's malloc settings
    (none where they are glibc's defaults)."""
    if not keep_freed_buffers():
        return {}
    return {"MALLOC_MMAP_THRESHOLD_": str(MMAP_THRESHOLD), "MALLOC_TRIM_THRESHOLD_": str(TRIM_THRESHOLD)}
