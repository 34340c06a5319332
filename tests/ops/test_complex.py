"""Complex numbers and FFTs: compiled on llvm-cpu, compared with their NumPy kernels (which
tests/ops/test_tf_references.py checks against TensorFlow's own results)."""

import numpy as np
import pytest
from iree.compiler import ir

from hlobridge.analysis.shape_inference import infer_specs
from hlobridge.errors import ShapeInferenceError
from hlobridge.frontend.graph_builder import GraphBuilder
from hlobridge.dialects import stablehlo as hlo
from hlobridge.ops.math import fft
from hlobridge.passes.ir.ir_helpers import constant_array, splat_value
from hlobridge.debug.testing import check_op, reference

from .cases import RNG, case, randn

C64, C128, F32, F64, I32 = (np.dtype(t) for t in (np.complex64, np.complex128, np.float32, np.float64, np.int32))


def crandn(*shape, dtype=np.complex64):
    return (RNG.randn(*shape) + 1j * RNG.randn(*shape)).astype(dtype)


Z, W = crandn(3, 4), crandn(3, 4)
Z128 = crandn(2, 5, dtype=np.complex128)
SPECIAL = np.array([0, -0.0, 1e30 + 1e30j, complex(np.inf, 1), complex(1, -np.inf), complex(np.nan, 0),
                    3 - 4j, -1e-30j], np.complex64)
TOL = dict(rtol=2e-5, atol=2e-5)  # DFTs sum n products in float32

CASES = [
    case("Real", [Z], {"T": C64, "Tout": F32}),
    case("Imag", [Z128], {"T": C128, "Tout": F64}, id="Imag-c128"),
    case("ComplexAbs", [Z], {"T": C64, "Tout": F32}),
    case("ComplexAbs", [SPECIAL], {"T": C64, "Tout": F32}, id="ComplexAbs-specials"),
    case("ComplexAbs", [Z128], {"T": C128, "Tout": F64}, id="ComplexAbs-c128"),
    case("Angle", [np.concatenate([Z[0], SPECIAL])], {"T": C64, "Tout": F32}),
    case("Complex", [randn(3, 4), randn(4)], {"T": F32, "Tout": C64}, id="Complex-broadcast"),
    case("Complex", [np.array([np.inf, -0.0, np.nan]), np.array([np.inf, 1, -np.inf])], {"T": F64, "Tout": C128},
         id="Complex-c128-specials"),
    case("Conj", [Z], {"T": C64}),
    case("Conj", [Z128], {"T": C128}, id="Conj-c128"),
    case("ConjugateTranspose", [crandn(2, 3, 4), np.array([2, 0, 1], np.int32)], {"T": C64, "Tperm": I32}),
    case("ConjugateTranspose", [randn(2, 3), np.array([1, 0], np.int32)], {"T": F32, "Tperm": I32}, id="ConjugateTranspose-real"),
    case("BroadcastArgs", [np.array([2, 1, 3], np.int32), np.array([4, 1], np.int32)], {"T": I32}),
    case("BroadcastArgs", [np.array([], np.int64), np.array([5, 0], np.int64)], {"T": np.dtype(np.int64)},
         id="BroadcastArgs-scalar-empty"),
    # elementwise ops, reductions and products on complex operands (the dtype tables)
    case("Mul", [Z, W[0]], {"T": C64}, id="Mul-c64-broadcast"),
    case("RealDiv", [Z128, Z128[::-1] + 1], {"T": C128}, id="RealDiv-c128"),
    case("Div", [Z, W], {"T": C64}, id="Div-c64"),
    case("Exp", [Z], {"T": C64}, id="Exp-c64", **TOL),
    case("Log", [Z], {"T": C64}, id="Log-c64", **TOL),
    case("Sqrt", [Z], {"T": C64}, id="Sqrt-c64", **TOL),
    case("Sum", [Z128, np.array([1], np.int32)], {"T": C128, "Tidx": I32, "keep_dims": False}, id="Sum-c128"),
    case("Mean", [Z, np.array([0], np.int32)], {"T": C64, "Tidx": I32, "keep_dims": True}, id="Mean-c64"),
    case("MatMul", [Z, crandn(4, 2)], {"T": C64, "transpose_a": False, "transpose_b": False}, id="MatMul-c64", **TOL),
    case("BatchMatMulV2", [crandn(2, 3, 4), crandn(4, 3)], {"T": C64, "adj_x": True, "adj_y": True},
         id="BatchMatMulV2-c64-adjoint", **TOL),
    case("Cast", [Z], {"SrcT": C64, "DstT": F32}, id="Cast-c64-f32"),
    case("Cast", [randn(3)], {"SrcT": F32, "DstT": C128}, id="Cast-f32-c128"),
    case("Cast", [Z], {"SrcT": C64, "DstT": C128}, id="Cast-c64-c128"),
    case("Equal", [Z, np.where(np.arange(4) % 2, Z, W)], {"T": C64, "incompatible_shape_error": True}, id="Equal-c64"),
]
# shape ops move complex values as they move any others
CASES += [
    case("Reshape", [Z, np.array([4, 3], np.int32)], {"T": C64, "Tshape": I32}, id="Reshape-c64"),
    case("Transpose", [Z128, np.array([1, 0], np.int32)], {"T": C128, "Tperm": I32}, id="Transpose-c128"),
    case("ConcatV2", [Z, W, np.int32(0)], {"T": C64, "N": 2, "Tidx": I32}, id="ConcatV2-c64", consts=(2,)),
    case("Slice", [Z, np.array([1, 1], np.int32), np.array([2, -1], np.int32)], {"T": C64, "Index": I32}, id="Slice-c64"),
    case("Pad", [Z, np.array([[1, 0], [0, 2]], np.int32)], {"T": C64, "Tpaddings": I32}, id="Pad-c64"),
    case("DynamicStitch", [np.array([0, 2], np.int32), np.array([1, 3], np.int32), Z[:2, :3], W[:2, :3]],
         {"T": C64, "N": 2}, id="DynamicStitch-c64", consts=(0, 1)),
    case("TensorScatterUpdate", [crandn(5, 3), np.array([[4], [0]], np.int32), crandn(2, 3)],
         {"T": C64, "Tindices": I32}, id="TensorScatterUpdate-c64"),
    case("OneHot", [np.array([0, 2, 1], np.int32), np.int32(3), np.complex64(1 + 1j), np.complex64(-1j)],
         {"T": C64, "TI": I32, "axis": -1}, id="OneHot-c64", consts=(1,)),
    case("MirrorPad", [Z, np.array([[1, 1], [2, 0]], np.int32)], {"T": C64, "Tpaddings": I32, "mode": "REFLECT"},
         id="MirrorPad-c64"),
    case("Fill", [np.array([2, 3], np.int32), np.complex128(1 - 2j)], {"T": C128, "index_type": I32}, id="Fill-c128"),
    case("Tile", [Z128, np.array([2, 1], np.int32)], {"T": C128, "Tmultiples": I32}, id="Tile-c128"),
    case("GatherV2", [Z, np.array([2, 0, 2], np.int32), np.int32(0)],
         {"Tparams": C64, "Tindices": I32, "Taxis": I32, "batch_dims": 0}, id="GatherV2-c64"),
    case("StridedSliceGrad", [np.array([4, 5], np.int32), np.array([1, 0], np.int32), np.array([3, 5], np.int32),
                              np.array([1, 2], np.int32), crandn(2, 3)],
         {"T": C64, "Index": I32, "begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0, "new_axis_mask": 0,
          "shrink_axis_mask": 0}, id="StridedSliceGrad-c64"),
    case("MatrixBandPart", [Z, np.int64(1), np.int64(0)], {"T": C64, "Tindex": np.dtype(np.int64)},
         id="MatrixBandPart-c64"),
    case("SelectV2", [np.array([True, False, True, True]), Z, np.complex64(0)], {"T": C64}, id="SelectV2-c64"),
    case("Pack", [Z, W], {"T": C64, "N": 2, "axis": 1}, id="Pack-c64"),
]

# The FFT family: odd and even lengths, cropping and zero-padding, 2-D and 3-D, complex128;
# power-of-two float32 dimensions go to stablehlo.fft, the others to a DFT (ops/math/fft.py).
REAL_OF = {"complex64": F32, "complex128": F64}


def _fft_case(op, x, lengths=None, id=None, **kw):
    complex_dtype = x.dtype if x.dtype.kind == "c" else {F32: C64, F64: C128}[x.dtype]
    attrs = {"Tcomplex": complex_dtype}
    inputs = [x]
    if lengths is not None:
        attrs["Treal"] = REAL_OF[complex_dtype.name]
        inputs.append(np.array(lengths, np.int32))
    return case(op, inputs, attrs, id=id or f"{op}-{'x'.join(map(str, x.shape))}-{lengths}", **{**TOL, **kw})


CASES += [
    _fft_case("FFT", crandn(2, 8)),
    _fft_case("FFT", crandn(3, 7)),
    _fft_case("IFFT", crandn(2, 6)),
    _fft_case("FFT2D", crandn(2, 3, 4)),
    _fft_case("FFT2D", crandn(2, 4, 8)),  # (both dimensions on stablehlo.fft)
    _fft_case("RFFT2D", randn(3, 8, 16), [4, 32], id="RFFT2D-native-crop-pad"),
    _fft_case("IFFT2D", crandn(5, 4)),
    _fft_case("FFT3D", crandn(2, 3, 5)),
    _fft_case("IFFT3D", crandn(2, 2, 3, 4)),
    _fft_case("FFT", crandn(2, 5, dtype=np.complex128), id="FFT-c128", rtol=1e-12, atol=1e-12),
    _fft_case("RFFT", randn(3, 16), [16]),
    _fft_case("RFFT", randn(3, 9), [9]),
    _fft_case("RFFT", randn(2, 10), [6], id="RFFT-crop"),
    _fft_case("RFFT", randn(2, 5), [8], id="RFFT-zero-pad"),
    _fft_case("RFFT", randn(0, 8), [8], id="RFFT-empty-batch"),
    _fft_case("RFFT", randn(2, 0), [8], id="RFFT-empty-signal"),
    _fft_case("IFFT2D", crandn(0, 3, 4), id="IFFT2D-empty"),
    _fft_case("RFFT2D", randn(2, 4, 6), [3, 7]),
    _fft_case("RFFT3D", randn(2, 3, 4), [2, 3, 5]),
    _fft_case("RFFT", RNG.randn(2, 7), [7], id="RFFT-f64", rtol=1e-12, atol=1e-12),
    _fft_case("IRFFT", crandn(3, 9), [16]),
    _fft_case("IRFFT", crandn(3, 5), [9]),
    _fft_case("IRFFT", crandn(2, 7), [6], id="IRFFT-crop"),
    _fft_case("IRFFT", crandn(2, 3), [8], id="IRFFT-zero-pad"),
    _fft_case("IRFFT2D", crandn(2, 4, 4), [4, 6]),
    _fft_case("IRFFT3D", crandn(2, 3, 3), [2, 3, 4]),
    _fft_case("IRFFT3D", crandn(2, 1, 4, 3), [1, 4, 8], id="IRFFT3D-length-1"),
    _fft_case("IRFFT", crandn(2, 4, dtype=np.complex128), [7], id="IRFFT-c128", rtol=1e-12, atol=1e-12),
]


@pytest.mark.parametrize("op,inputs,attrs,kw", CASES)
def test_complex_op_matches_kernel(op, inputs, attrs, kw):
    check_op(op, inputs, attrs, **kw)


@pytest.mark.parametrize("length", [1, 2, 5, 8, 12, 400, 512])
def test_dft_matrices_invert_each_other(length):
    forward = fft.dft_matrix(length, length, length, inverse=False)
    backward = fft.dft_matrix(length, length, length, inverse=True)
    np.testing.assert_allclose(forward @ backward, np.eye(length), atol=1e-12)
    x = np.random.RandomState(length).randn(length)
    np.testing.assert_allclose(x @ fft.dft_matrix(length, length, length // 2 + 1, inverse=False),
                               np.fft.rfft(x), atol=1e-10)


def test_irfft_ignores_the_imaginary_parts_of_dc_and_nyquist():
    """What a Hermitian spectrum cannot hold (pocketfft's c2r, TF's CPU kernel, numpy)."""
    x = crandn(2, 5)
    clean = x.copy()
    clean[:, 0] = clean[:, 0].real
    clean[:, 4] = clean[:, 4].real
    attrs = {"Tcomplex": C64, "Treal": F32}
    (a,) = check_op("IRFFT", [x, np.array([8], np.int32)], attrs, **TOL)
    (b,) = reference("IRFFT", [clean, np.array([8], np.int32)], attrs)
    np.testing.assert_allclose(a, b, **TOL)


@pytest.mark.parametrize("op,lengths,message", [
    ("RFFT", [0], "fft_length must be positive"),
    ("RFFT", [4, 4], "fft_length must have 1 element"),
    ("RFFT2D", [4, 4], "input must have rank >= 2"),
])
def test_bad_fft_lengths_are_errors_naming_the_node(op, lengths, message):
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (4,))
    b.op(op, [x, b.const("n", np.array(lengths, np.int32))], name="f", Treal=F32, Tcomplex=C64)
    with pytest.raises(ShapeInferenceError, match=rf"node 'f' \({op}\): {message}"):
        infer_specs(b.graph())


def test_complex_constants_are_built_from_real_parts_and_not_read_by_folders():
    """iree-compile 3.13 cannot lower a uniform complex<f64> constant (an i128 splat), and the
    bindings cannot read complex attributes: hlo.constant builds stablehlo.complex of two real
    constants, and the IR helpers that fold constants leave a complex one alone."""
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            c = hlo.constant(np.full((2, 3), 1 - 2j, np.complex128))
            raw = hlo._one("stablehlo.constant", [], attrs={"value": hlo.dense_attr(np.full(3, 1j, np.complex64))})
        assert c.owner.name == "stablehlo.complex" and str(c.type) == "tensor<2x3xcomplex<f64>>"
        assert splat_value(raw) is None and constant_array(raw, 100) is None


def test_a_fed_zero_fft_length_is_an_error_naming_the_node():
    """TF's CPU kernel aborts the process on it; hlobridge's kernel says which node."""
    from hlobridge.runtime.session import Session

    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (2, 8))
    n = b.placeholder("n", np.int32, (1,))
    b.op("RFFT", [x, n], name="f", Treal=F32, Tcomplex=C64)
    session = Session(b.graph(), jit="off", cache_dir=False)
    feeds = {"x:0": np.ones((2, 8), np.float32)}
    np.testing.assert_allclose(session.run("f:0", {**feeds, "n:0": np.array([4], np.int32)}),
                               np.fft.rfft(np.ones((2, 4))), atol=1e-6)
    with pytest.raises(ShapeInferenceError, match=r"node 'f' \(RFFT\): fft_length must be positive"):
        session.run("f:0", {**feeds, "n:0": np.array([0], np.int32)})
