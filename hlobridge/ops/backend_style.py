"""Which backend a lowering is for, where a rule lowers differently for it.

The StableHLO is the contract between hlobridge and every backend, but one op's best form
differs between them: IREE 3.13 runs `stablehlo.convolution` at 1-2 GFLOP/s on the CPU, so
ops/nn/conv.py lowers NHWC convolutions to im2col matmuls for it; XLA maps
`stablehlo.convolution` onto its own convolution kernels (cuDNN on a GPU, oneDNN on the CPU),
and im2col copies would only cost it memory. The compile paths (compile/driver.py, the
Session's cluster launches) set the backend around the lowering with `lowering_for`; a rule
asks `lowering_backend()`. The default is IREE, so a lowering that never says is IREE's.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

_BACKEND: ContextVar[str] = ContextVar("hlobridge_lowering_backend", default="iree")


def lowering_backend() -> str:
    """"iree" or "xla": whom the lowering under way is for."""
    return _BACKEND.get()


@contextmanager
def lowering_for(backend: str):
    """Lower for `backend` inside the block."""
    token = _BACKEND.set(backend)
    try:
        yield
    finally:
        _BACKEND.reset(token)
