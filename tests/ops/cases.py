"""Shared helpers for the per-family op tests.

Each tests/ops/test_<family>.py defines CASES: a list of `case(op, inputs, attrs, ...)`.
test_coverage.py checks that every op in the registry that compiles has at least one case.
"""

import numpy as np
import pytest

RNG = np.random.RandomState(1234)


def case(op, inputs, attrs=None, *, id=None, consts=(), rtol=1e-5, atol=1e-6):
    return pytest.param(op, inputs, attrs or {}, dict(consts=consts, rtol=rtol, atol=atol),
                        id=id or op)


def randn(*shape, dtype=np.float32):
    return RNG.randn(*shape).astype(dtype)


def positive(*shape, dtype=np.float32):
    return (RNG.rand(*shape) + 0.1).astype(dtype)
