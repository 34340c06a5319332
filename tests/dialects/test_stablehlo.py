"""The StableHLO builders (dialects/stablehlo.py)."""

import numpy as np
import pytest
from iree.compiler import ir

from hlobridge.dialects import stablehlo as sh


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_splat_constants_are_dense_not_a_segfault(dtype):
    # found by tools/fuzz_graphs.py: a uniform complex constant went through IntegerAttr.get,
    # which segfaults the process (a FusedBatchNormEx whose T was changed to DT_COMPLEX128)
    with ir.Context(), ir.Location.unknown():
        assert "complex" in str(sh.dense_attr(np.full((2, 3), 1 + 2j, dtype)))
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            v = sh.splat(0.5, [4], dtype)
        assert str(v.type) == f"tensor<4xcomplex<f{np.dtype(dtype).itemsize * 4}>>"


@pytest.mark.parametrize("dtype,text", [(np.complex64, "complex<f32>"), (np.complex128, "complex<f64>")])
def test_scalar_like_a_complex_value(dtype, text):
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            v = sh.scalar_like(2, sh.constant(np.array([1j, 2], dtype)))
        assert str(v.type) == f"tensor<2x{text}>"
