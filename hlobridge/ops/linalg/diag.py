"""Diagonals of the innermost matrices: MatrixDiag*, MatrixDiagPart*, MatrixSetDiag* (V1, V2, V3),
Diag and DiagPart. One rule for the whole family.

TensorFlow's V3 ops (tf.linalg.diag, diag_part, set_diag) address a band of diagonals
k = [k_lo, k_hi] of an M x N matrix; the bands are packed into a [num_diags, max_diag_len]
array, diagonal d (k_lo <= d <= k_hi) in row k_hi - d, where

    max_diag_len = min(M + min(k_hi, 0), N - max(k_lo, 0))
    diag_len(d)  = min(N - max(d, 0), M + min(d, 0))

A diagonal shorter than max_diag_len is aligned by `align` (SUPER_SUB, e.g. RIGHT_LEFT:
superdiagonals right-aligned, subdiagonals left-aligned; d = 0 counts as both), i.e. shifted by
offset = max_diag_len - diag_len(d), and element n of row k_hi - d is matrix element
(n + max(-d, 0) - offset, n + max(d, 0) - offset) where that lies in the matrix, padding
otherwise (tensorflow/core/kernels/linalg/matrix_diag_op.cc). V2 is V3 with LEFT_LEFT; V1 is
k = 0 with zero padding. A single diagonal (k_lo == k_hi) drops the num_diags dimension.

Since k and the matrix shape are compile-time constants, `band_map` works out once, in NumPy,
which packed element each matrix element is (and back). The kernel indexes with it; the
lowering is one stablehlo.gather with the same constant indices and a select: one map, two
backends.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ..helpers import ints, num_elements, out_spec, value_of
from ..registry import register

ALIGNS = ("LEFT_LEFT", "LEFT_RIGHT", "RIGHT_LEFT", "RIGHT_RIGHT")


@dataclass(frozen=True)
class BandMap:
    """Where the packed diagonals of an M x N matrix live, for k = [k_lo, k_hi].

    packed_src[m, n]: the flat matrix index (row * N + col) of packed element (m, n), -1 = padding;
    matrix_src[r, c]: the flat packed index (m * max_len + n) of matrix element (r, c), -1 = off the band.
    """
    rows: int
    cols: int
    k_lo: int
    k_hi: int
    packed_src: np.ndarray
    matrix_src: np.ndarray

    @property
    def num_diags(self) -> int:
        return self.k_hi - self.k_lo + 1

    @property
    def max_len(self) -> int:
        return self.packed_src.shape[1]

    def packed_shape(self) -> tuple:
        """The trailing dims of the packed diagonals: [num_diags, max_len], or [max_len] for one."""
        return (self.max_len,) if self.num_diags == 1 else (self.num_diags, self.max_len)


def band_map(rows: int, cols: int, k_lo: int, k_hi: int, align: str) -> BandMap:
    """The BandMap of an M x N matrix (see the module docstring for TF's formulas)."""
    max_len = max(0, min(rows + min(k_hi, 0), cols - max(k_lo, 0)))
    packed_src = np.full((k_hi - k_lo + 1, max_len), -1, np.int64)
    matrix_src = np.full((rows, cols), -1, np.int64)
    super_right, sub_right = (side == "RIGHT" for side in align.split("_"))
    for m in range(k_hi - k_lo + 1):
        d = k_hi - m
        diag_len = min(cols - max(d, 0), rows + min(d, 0))
        right = (super_right and d >= 0) or (sub_right and d <= 0)
        offset = max_len - diag_len if right else 0
        n = np.arange(max_len)
        r, c = n + max(-d, 0) - offset, n + max(d, 0) - offset
        ok = (r >= 0) & (r < rows) & (c >= 0) & (c < cols)
        packed_src[m, ok] = r[ok] * cols + c[ok]
        matrix_src[r[ok], c[ok]] = m * max_len + n[ok]
    return BandMap(rows, cols, k_lo, k_hi, packed_src, matrix_src)


# -- the family's variants: which inputs each op has --------------------------------------------


@dataclass(frozen=True)
class Variant:
    """One op of the family: what it does (`kind`: diag, part, set) and how its inputs read."""
    kind: str
    version: int            # 1: k = 0, no padding; 2: LEFT_LEFT; 3: the align attribute

    @property
    def k_input(self):
        if self.version == 1:
            return None
        return {"diag": 1, "part": 1, "set": 2}[self.kind]

    @property
    def const_inputs(self) -> tuple:
        if self.version == 1:
            return ()
        return (1, 2, 3) if self.kind == "diag" else (self.k_input,)

    @property
    def padding_input(self):
        if self.version == 1 or self.kind == "set":
            return None
        return 4 if self.kind == "diag" else 2


VARIANTS = {
    "MatrixDiag": Variant("diag", 1), "MatrixDiagV2": Variant("diag", 2), "MatrixDiagV3": Variant("diag", 3),
    "MatrixDiagPart": Variant("part", 1), "MatrixDiagPartV2": Variant("part", 2),
    "MatrixDiagPartV3": Variant("part", 3),
    "MatrixSetDiag": Variant("set", 1), "MatrixSetDiagV2": Variant("set", 2), "MatrixSetDiagV3": Variant("set", 3),
}


def _align(ctx, variant: Variant) -> str:
    if variant.version < 3:
        return "LEFT_LEFT"
    align = ctx.attr("align", "RIGHT_LEFT")
    align = align.decode() if isinstance(align, bytes) else align
    if align not in ALIGNS:
        raise ctx.error(f"align '{align}' is not one of {', '.join(ALIGNS)}")
    return align


def _k(ctx, variant: Variant):
    """(k_lo, k_hi), or None while k is not a known constant."""
    if variant.k_input is None:
        return 0, 0
    k = value_of(ctx, variant.k_input)
    if k is None:
        return None
    k = ints(k)
    if not 1 <= len(k) <= 2:
        raise ctx.error(f"k must be a scalar or a pair [k_lo, k_hi], got {len(k)} values")
    k_lo, k_hi = k[0], k[-1]
    if k_lo > k_hi:
        raise ctx.error(f"k_lo ({k_lo}) must not exceed k_hi ({k_hi})")
    return k_lo, k_hi


def _matrix_dims(ctx, variant: Variant, diag_shape, k_lo, k_hi):
    """(rows, cols) of the matrix MatrixDiag* builds, as TF derives them (num_rows/num_cols -1: derived)."""
    max_len = diag_shape[-1]
    rows = cols = -1
    if variant.version > 1:
        rows, cols = (ints(ctx.const(i))[0] for i in (2, 3))
    if max_len is None:
        return None, None
    min_rows, min_cols = max_len - min(k_hi, 0), max_len + max(k_lo, 0)
    if rows == -1 and cols == -1:
        rows = cols = max(min_rows, min_cols)
    elif rows == -1:
        rows = min_rows
    elif cols == -1:
        cols = min_cols
    if rows != min_rows and cols != min_cols:
        raise ctx.error(f"the number of rows or columns is not consistent with the diagonals: num_rows "
                        f"{rows} (least {min_rows}), num_cols {cols} (least {min_cols})")
    return rows, cols


def _setup(ctx, variant: Variant):
    """(batch dims, BandMap) from the inputs; raises for inconsistent shapes. BandMap None while unknown."""
    x = ctx.inputs[0]
    k = _k(ctx, variant)
    if x.shape is None or k is None:
        return None, None
    k_lo, k_hi = k
    packed_rank = 1 if k_lo == k_hi else 2
    if variant.kind == "diag":
        if len(x.shape) < packed_rank:
            raise ctx.error(f"diagonal must have rank >= {packed_rank}, got {x}")
        batch = x.shape[:len(x.shape) - packed_rank]
        if packed_rank == 2 and x.shape[-2] not in (None, k_hi - k_lo + 1):
            raise ctx.error(f"diagonal has {x.shape[-2]} diagonals, k = [{k_lo}, {k_hi}] asks for {k_hi - k_lo + 1}")
        rows, cols = _matrix_dims(ctx, variant, x.shape, k_lo, k_hi)
    else:
        if len(x.shape) < 2:
            raise ctx.error(f"input must have rank >= 2, got {x}")
        batch, (rows, cols) = x.shape[:-2], x.shape[-2:]
    if rows is None or cols is None:
        return batch, None
    if variant.kind != "diag" and not all(-rows < k < cols or k == 0 for k in (k_lo, k_hi)):
        raise ctx.error(f"k = [{k_lo}, {k_hi}] is out of bounds for a {rows} x {cols} matrix")
    return batch, band_map(rows, cols, k_lo, k_hi, _align(ctx, variant))


def _infer(ctx, variant: Variant):
    batch, band = _setup(ctx, variant)
    if batch is None:
        return [out_spec(ctx, None)]
    if variant.kind == "part":
        if band is None:
            return [out_spec(ctx, None)]
        return [out_spec(ctx, (*batch, *band.packed_shape()))]
    if variant.kind == "set":
        diag = ctx.inputs[1]
        if band is not None and diag.shape is not None:
            want = (*batch, *band.packed_shape())
            if len(diag.shape) != len(want) or any(a is not None and b is not None and a != b
                                                   for a, b in zip(diag.shape, want)):
                raise ctx.error(f"diagonal has shape {list(diag.shape)}, the input's band needs {list(want)}")
        return [out_spec(ctx, ctx.inputs[0].shape)]
    if band is None:
        return [out_spec(ctx, (*batch, None, None))]
    return [out_spec(ctx, (*batch, band.rows, band.cols))]


# -- one rule, two backends: `take` gathers along the flattened trailing dims ------------------------


class _NumpyOps:
    """The rule's few primitives on arrays (the kernel)."""
    reshape = staticmethod(np.reshape)

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)

    @staticmethod
    def take(flat, indices):
        return np.take(flat, np.maximum(indices, 0).reshape(-1), axis=-1)

    @staticmethod
    def select(mask, a, b):
        return np.where(mask, a, b)

    def fill(self, value, like):
        """`like`'s shape, every element `value` (a scalar input; None: zero)."""
        return np.broadcast_to(np.asarray(0 if value is None else value, self.dtype), like.shape)


class _HloOps:
    """The same primitives on StableHLO Values (the lowering); masks and indices are constants."""
    reshape = staticmethod(hlo.reshape)

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)

    def take(self, flat, indices):
        """stablehlo.gather of the constant `indices` along the last dim of a [B, F] Value."""
        b, f = hlo.shape_of(flat)
        k = indices.size
        if b * k == 0 or f == 0:  # nothing to gather (a zero-sized gather is no IR to give IREE)
            return hlo.splat(0, [b, k], self.dtype)
        idx = hlo.constant(np.maximum(indices, 0).reshape(k, 1).astype(np.int64))
        return hlo.gather(flat, idx, [b, k], offset_dims=[0], collapsed_slice_dims=[1], start_index_map=[1],
                          index_vector_dim=1, slice_sizes=[b, 1])

    @staticmethod
    def select(mask, a, b):
        return hlo.select(hlo.constant(np.broadcast_to(mask, hlo.shape_of(a))), a, b)

    def fill(self, value, like):
        shape = hlo.shape_of(like)
        return hlo.splat(0, shape, self.dtype) if value is None else hlo.broadcast_in_dim(value, shape, [])


def _apply(ops, ctx, variant: Variant, args):
    """The family's rule over `ops` (_NumpyOps or _HloOps); args are the op's inputs."""
    x = args[0]
    batch, band = _setup(ctx, variant)
    nb = num_elements(batch)
    pad = args[variant.padding_input] if variant.padding_input is not None else None
    if variant.kind == "part":
        src = band.packed_src.reshape(1, -1)
        got = ops.take(ops.reshape(x, (nb, band.rows * band.cols)), src)
        return ops.reshape(ops.select(src >= 0, got, ops.fill(pad, got)), (*batch, *band.packed_shape()))
    diag = x if variant.kind == "diag" else args[1]
    src = band.matrix_src.reshape(1, -1)
    got = ops.take(ops.reshape(diag, (nb, band.num_diags * band.max_len)), src)
    other = ops.fill(pad, got) if variant.kind == "diag" else ops.reshape(x, (nb, band.rows * band.cols))
    return ops.reshape(ops.select(src >= 0, got, other), (*batch, band.rows, band.cols))


def _kernel(ctx, variant, *args):
    out = _apply(_NumpyOps(ctx.out().dtype), ctx, variant, [np.asarray(a) for a in args])
    return np.ascontiguousarray(out).astype(ctx.out().dtype)


def _lower(ctx, variant, *args):
    return _apply(_HloOps(ctx.out().dtype), ctx, variant, args)


def _attrs(variant: Variant) -> tuple:
    return ("T", "align") if variant.version == 3 else ("T",)


for _op, _variant in VARIANTS.items():
    register(_op, infer=lambda ctx, v=_variant: _infer(ctx, v), attrs=_attrs(_variant),
             const_inputs=_variant.const_inputs,
             lower=lambda ctx, *a, v=_variant: _lower(ctx, v, *a),
             kernel=lambda ctx, *a, v=_variant: _kernel(ctx, v, *a))


# -- Diag, DiagPart: the rank-2k tensor whose "diagonal" is a rank-k one -----------------------------
# Diag(x)[i..., j...] = x[i...] where i == j: MatrixDiag of the flattened x, reshaped to x.shape * 2.


def _diag_infer(ctx):
    s = ctx.inputs[0].shape
    if s is not None and not s:
        raise ctx.error("input must have rank >= 1")
    return [out_spec(ctx, None if s is None else (*s, *s))]


def _diag_part_infer(ctx):
    s = ctx.inputs[0].shape
    if s is None:
        return [out_spec(ctx, None)]
    half = len(s) // 2
    if len(s) % 2 or not s:
        raise ctx.error(f"input must have an even, nonzero rank, got {list(s)}")
    for a, b in zip(s[:half], s[half:]):
        if a is not None and b is not None and a != b:
            raise ctx.error(f"dimensions {list(s[:half])} and {list(s[half:])} should be equal")
    return [out_spec(ctx, s[:half])]


def _diag_rule(ops, shape, x, build: bool):
    n = num_elements(shape)
    band = band_map(n, n, 0, 0, "LEFT_LEFT")
    if build:
        src = band.matrix_src.reshape(1, -1)
        got = ops.take(ops.reshape(x, (1, n)), src)
        return ops.reshape(ops.select(src >= 0, got, ops.fill(None, got)), (*shape, *shape))
    return ops.reshape(ops.take(ops.reshape(x, (1, n * n)), band.packed_src.reshape(1, -1)), tuple(shape))


def _diag_shape(ctx):
    s = ctx.out().shape
    return s[:len(s) // 2] if ctx.op == "Diag" else s


for _op, _infer_fn in (("Diag", _diag_infer), ("DiagPart", _diag_part_infer)):
    register(_op, infer=_infer_fn, attrs=("T",),
             lower=lambda ctx, x, b=_op == "Diag": _diag_rule(_HloOps(ctx.out().dtype), _diag_shape(ctx), x, b),
             kernel=lambda ctx, x, b=_op == "Diag": np.ascontiguousarray(
                 _diag_rule(_NumpyOps(ctx.out().dtype), _diag_shape(ctx), np.asarray(x), b)))
