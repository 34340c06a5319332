"""The FFT family: FFT, IFFT, RFFT, IRFFT and their 2-D and 3-D forms (12 ops), on the
innermost 1, 2 or 3 dimensions, as TensorFlow defines them (fft_ops.cc; XLA: tf2xla's
fft_ops.cc).

Semantics:
  FFT/IFFT    complex -> complex of the same shape; IFFT divides by the product of the lengths;
  RFFT        real -> complex; fft_length (a compile-time constant, one entry per transformed
              dimension) crops or zero-pads each transformed input dimension, and the innermost
              output dimension is fft_length[-1] // 2 + 1 (the non-negative frequencies);
  IRFFT       complex -> real, inverse of RFFT: the innermost input dimension is cropped or
              zero-padded to fft_length[-1] // 2 + 1, the others to fft_length; the input is
              read as the non-negative half of a Hermitian spectrum, so the imaginary parts of
              the DC term (and, for an even length, of the Nyquist term) are ignored (pocketfft's
              and DUCC's c2r, which TF's CPU kernels run). The outer dimensions are inverted
              first, the innermost one last (numpy.fft.irfftn's order).
TF's CPU kernels refuse an input shorter than fft_length ("must have length of at least");
XLA zero-pads it, and so does hlobridge (kernel and lowering). A zero fft_length is refused
(TF's CPU kernel aborts the process on it).

Lowering, one transformed dimension at a time (a k-D transform is k 1-D ones):
  - IREE's own stablehlo.fft where it compiles: float32 parts and a power-of-two length (the
    dimension moved innermost, cropped or zero-padded, transformed, moved back). IREE 3.13
    refuses every other case: "failed to legalize operation 'stablehlo.fft'" for 2-D/3-D
    transforms and lengths such as 6, 400 or 257, and complex128 fails in codegen
    ("'arith.mulf' op requires the same type for all operands");
  - elsewhere a DFT: dot_generals of the real and imaginary parts with constant cosine and
    sine matrices (twiddles from the exact integer phase j*k mod n in float64), summed in
    float64 and rounded once. Cropping and zero-padding are just fewer matrix rows; the cost
    is O(n^2) per dimension, fine for audio frames.
Measured (llvm-cpu, 2-core x86, RFFT of 98 frames of 512 samples, float32; error in the worst
bin relative to max(|bin|, 1e-3 max|bin|), against float64 numpy.fft): stablehlo.fft 1.4 ms,
2e-5; the float64 DFT 28 ms, 6e-8 (numpy's float32 pocketfft: 4e-8); a float32 DFT would be
14 ms, 8e-5. docs/complex_and_fft.md has the whole table.
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ...spec import TensorSpec
from .complex_parts import PART_OF, PART_TYPES
from ..helpers import ints, value_of
from ..registry import register
from ..typesets import COMPLEX

FORWARD, INVERSE, REAL_FORWARD, REAL_INVERSE = "FFT", "IFFT", "RFFT", "IRFFT"
# op -> (kind, number of innermost dimensions transformed)
FFTS = {f"{kind}{suffix}": (kind, rank) for kind in (FORWARD, INVERSE, REAL_FORWARD, REAL_INVERSE)
        for suffix, rank in (("", 1), ("2D", 2), ("3D", 3))}


def _complex_dtype(ctx):
    return np.dtype(ctx.attr("Tcomplex", np.complex64))


def fft_lengths(ctx, kind: str, rank: int) -> list | None:
    """The transform's length per transformed dimension: fft_length for RFFT/IRFFT (None while
    it is not a constant), the input's own dimensions for FFT/IFFT."""
    if kind in (FORWARD, INVERSE):
        shape = ctx.inputs[0].shape
        return None if shape is None else list(shape[len(shape) - rank:])
    value = value_of(ctx, 1)
    return None if value is None else checked_lengths(ctx, value, rank)


def checked_lengths(ctx, value, rank: int) -> list:
    """fft_length as ints: one positive length per transformed dimension, else an error naming the node."""
    lengths = ints(value)
    if len(lengths) != rank:
        raise ctx.error(f"fft_length must have {rank} element(s), got {lengths}")
    if any(n <= 0 for n in lengths):
        raise ctx.error(f"fft_length must be positive, got {lengths}")
    return lengths


def _fft_infer(ctx, kind: str, rank: int):
    x = ctx.inputs[0]
    if x.shape is not None and len(x.shape) < rank:
        raise ctx.error(f"input must have rank >= {rank}, got {x}")
    real_input = kind == REAL_FORWARD
    if (np.dtype(x.dtype).kind == "c") == real_input:
        raise ctx.error(f"expects a {'real' if real_input else 'complex'} input, got {np.dtype(x.dtype).name}")
    lengths = fft_lengths(ctx, kind, rank)
    if kind == REAL_FORWARD:
        dtype = _complex_dtype(ctx)
    elif kind == REAL_INVERSE:
        dtype = np.dtype(ctx.attr("Treal", PART_OF[np.dtype(x.dtype)]))
    else:
        dtype = x.dtype
    if x.shape is None:
        return [TensorSpec(dtype, None)]
    inner = (None,) * rank if lengths is None else tuple(lengths)
    if kind == REAL_FORWARD and lengths is not None:
        inner = inner[:-1] + (inner[-1] // 2 + 1,)
    return [TensorSpec(dtype, tuple(x.shape[:len(x.shape) - rank]) + inner)]


# -- the NumPy kernel: numpy.fft in float64, after XLA's cropping and zero-padding ---------------


def _fft_kernel(ctx, x, fft_length=None, *, kind: str, rank: int):
    out = ctx.out()
    axes = tuple(range(x.ndim - rank, x.ndim))
    lengths = None if fft_length is None else checked_lengths(ctx, fft_length, rank)
    if x.size == 0:  # (numpy refuses zero-length transforms; zero-padding an empty input gives 0)
        inner = list(x.shape[x.ndim - rank:]) if lengths is None else list(lengths)
        if kind == REAL_FORWARD:
            inner[-1] = inner[-1] // 2 + 1
        return np.zeros(x.shape[:x.ndim - rank] + tuple(inner), out.dtype)
    if kind in (FORWARD, INVERSE):
        fn = np.fft.fftn if kind == FORWARD else np.fft.ifftn
        return fn(x.astype(np.complex128), axes=axes).astype(out.dtype)
    if kind == REAL_FORWARD:
        return np.fft.rfftn(x.astype(np.float64), s=lengths, axes=axes).astype(out.dtype)
    return np.fft.irfftn(x.astype(np.complex128), s=lengths, axes=axes).astype(out.dtype)


# -- the lowering: stablehlo.fft or a DFT (dot_generals with twiddle constants) per dimension ------


def dft_matrix(rows: int, length: int, columns: int, inverse: bool, hermitian: bool = False) -> np.ndarray:
    """[rows, columns] complex128: exp(-+2 pi i j k / length) for input index j < rows and output
    index k < columns (fewer rows than `length`: the input is zero-padded). inverse: the sign +
    and the factor 1 / length. hermitian (IRFFT's last dimension; rows are frequencies, at most
    length // 2 + 1): each frequency but DC and Nyquist counts twice, for its mirror image."""
    jk = np.outer(np.arange(rows, dtype=np.int64), np.arange(columns, dtype=np.int64)) % length
    angle = 2 * np.pi * jk / length
    cos, sin = np.cos(angle), np.sin(angle)
    quarter = (4 * jk) % length == 0  # whole quarter turns exactly (sin(pi) is 1.2e-16 in float64)
    turns = (4 * jk // length)[quarter] % 4
    cos[quarter], sin[quarter] = np.array([1.0, 0.0, -1.0, 0.0])[turns], np.array([0.0, 1.0, 0.0, -1.0])[turns]
    w = cos + (1j if inverse else -1j) * sin
    if inverse:
        w /= length
    if hermitian:
        twice = np.full(rows, 2.0)
        twice[0] = 1.0
        if length % 2 == 0 and rows > length // 2:
            twice[length // 2] = 1.0
        w *= twice[:, None]
    return w


def _contract(x, axis: int, matrix: np.ndarray):
    """x's dimension `axis` multiplied into the real float64 [n, m] `matrix`: that dimension
    becomes m. Summed in float64: float32 sums of n products lose about sqrt(n) bits (1e-4
    relative error in the smallest bins of a 512-point spectrum), float64 keeps float32 exact."""
    shape = hlo.shape_of(x)
    x = hlo.convert(x, np.float64) if _part_dtype(x) != np.float64 else x
    out = shape[:axis] + shape[axis + 1:] + [matrix.shape[1]]
    y = hlo.dot_general(x, hlo.constant(matrix), out, np.float64, lhs_contract=[axis], rhs_contract=[0])
    y = hlo.add(y, hlo.scalar_like(0.0, y))  # -0 + +0: a zero bin is +0, as TF's (the DC term's imaginary part)
    last = len(shape) - 1
    return hlo.transpose(y, list(range(axis)) + [last] + list(range(axis, last)))


def _dft(re, im, axis: int, length: int, step: str):
    """One dimension's transform of re + i im (im None: zero) as a DFT on real Values: (re', im'),
    im' None after REAL_INVERSE. The dimension is cropped to the rows the matrix reads."""
    hermitian = step == REAL_INVERSE
    rows = min(hlo.shape_of(re)[axis], length // 2 + 1 if hermitian else length)
    if hlo.shape_of(re)[axis] > rows:
        re, im = (None if v is None else _fit(v, axis, rows) for v in (re, im))
    columns = length // 2 + 1 if step == REAL_FORWARD else length
    w = dft_matrix(rows, length, columns, step in (INVERSE, REAL_INVERSE), hermitian)
    # (re + i im)(wr + i wi) = (re wr - im wi) + i (re wi + im wr)
    out_re = _contract(re, axis, w.real)
    if im is not None:
        out_re = hlo.subtract(out_re, _contract(im, axis, w.imag))
    if hermitian:
        return out_re, None
    out_im = _contract(re, axis, w.imag)
    if im is not None:
        out_im = hlo.add(out_im, _contract(im, axis, w.real))
    return out_re, out_im


def _fit(x, axis: int, size: int):
    """x cropped or zero-padded to `size` along `axis`."""
    shape = hlo.shape_of(x)
    if shape[axis] >= size:
        return hlo.slice(x, [0] * len(shape), shape[:axis] + [size] + shape[axis + 1:])
    high = [0] * len(shape)
    high[axis] = size - shape[axis]
    return hlo.pad(x, hlo.constant(np.zeros((), _part_dtype(x))), [0] * len(shape), high)


def _part_dtype(x):
    return np.dtype({"f32": np.float32, "f64": np.float64}[str(hlo.element_type_of(x))])


def _native(re, length: int) -> bool:
    """Whether IREE's own stablehlo.fft compiles this dimension: float32 parts, a power of two
    from 2 (a length-1 one among others made iree-compile 3.13 emit an invalid linalg.yield)."""
    return _part_dtype(re) == np.float32 and length >= 2 and length & (length - 1) == 0


def _native_fft(re, im, axis: int, length: int, step: str):
    """One dimension's transform with stablehlo.fft: the dimension moved innermost, fitted to
    the length the transform reads, transformed, and moved back."""
    rank = len(hlo.shape_of(re))
    perm = [d for d in range(rank) if d != axis] + [axis]
    back = list(np.argsort(perm))
    re, im = (None if v is None else _fit(hlo.transpose(v, perm), rank - 1,
                                          length // 2 + 1 if step == REAL_INVERSE else length) for v in (re, im))
    x = re if step == REAL_FORWARD else hlo.complex_(re, im if im is not None else hlo.scalar_like(0, re))
    shape = hlo.shape_of(x)[:-1] + [length // 2 + 1 if step == REAL_FORWARD else length]
    y = hlo.fft(x, step, [length], shape, np.float32 if step == REAL_INVERSE else np.complex64)
    if step == REAL_INVERSE:
        return hlo.transpose(y, back), None
    return hlo.transpose(hlo.real(y), back), hlo.transpose(hlo.imag(y), back)


def _transform(re, im, axis: int, length: int, step: str):
    """One dimension's transform (FORWARD, INVERSE, REAL_FORWARD from a real re, REAL_INVERSE to
    a real result): IREE's stablehlo.fft where it compiles, else a DFT."""
    return (_native_fft if _native(re, length) else _dft)(re, im, axis, length, step)


def _fft_lower(ctx, x, *_, kind: str, rank: int):
    lengths = fft_lengths(ctx, kind, rank)
    if lengths is None:
        raise ctx.lowering_error("fft_length (input 1) must be a compile-time constant")
    ndim = len(hlo.shape_of(x))
    axes = list(range(ndim - rank, ndim))
    if kind == REAL_FORWARD:  # the innermost dimension real -> complex first, then the others
        re, im = _transform(x, None, axes[-1], lengths[-1], REAL_FORWARD)
        for axis, n in zip(axes[:-1], lengths[:-1]):
            re, im = _transform(re, im, axis, n, FORWARD)
        return _result(ctx, re, im)
    re, im = hlo.real(x), hlo.imag(x)
    outer = axes if kind in (FORWARD, INVERSE) else axes[:-1]
    for axis, n in zip(outer, lengths):
        re, im = _transform(re, im, axis, n, FORWARD if kind == FORWARD else INVERSE)
    if kind == REAL_INVERSE:  # the others complex -> complex first, the innermost one -> real last
        re, im = _transform(re, im, axes[-1], lengths[-1], REAL_INVERSE)
    return _result(ctx, re, im)


def _result(ctx, re, im):
    """The output from its parts, rounded once to the output's part type."""
    dtype = np.dtype(ctx.out().dtype)
    part = PART_OF.get(dtype, dtype)
    re, im = (v if v is None or _part_dtype(v) == part else hlo.convert(v, part) for v in (re, im))
    return re if im is None else hlo.complex_(re, im)


for _op, (_kind, _rank) in FFTS.items():
    _real = _kind in (REAL_FORWARD, REAL_INVERSE)
    register(_op, infer=lambda ctx, k=_kind, r=_rank: _fft_infer(ctx, k, r),
             attrs=("Treal", "Tcomplex") if _real else ("Tcomplex",),
             const_inputs=(1,) if _real else (), dtype_attrs=("Treal", "Tcomplex") if _real else ("Tcomplex",),
             dtypes=COMPLEX + PART_TYPES if _real else COMPLEX,
             lower=lambda ctx, *xs, k=_kind, r=_rank: _fft_lower(ctx, *xs, kind=k, rank=r),
             kernel=lambda ctx, *xs, k=_kind, r=_rank: _fft_kernel(ctx, *xs, kind=k, rank=r))
