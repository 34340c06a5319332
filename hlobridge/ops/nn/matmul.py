"""Matrix products and bias: MatMul, BatchMatMul/V2/V3, BiasAdd/V1, BiasAddGrad.

MatMul is rank 2; BatchMatMul needs equal batch dims, V2 and V3 broadcast them, V3 may widen
(int8 x int8 -> int32). BiasAdd adds along the channel axis (axis 1 for NCHW, the last axis
otherwise); BiasAddGrad sums over every other axis.
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ... import dtypes
from ...spec import TensorSpec
from ..helpers import acc_dtype, broadcast_shapes, known_dims, require_rank, same_as_input, scalar
from ..registry import register
from ..typesets import COMPLEX, FLOAT, NUMBER, SIGNED

# -- MatMul and BatchMatMul -------------------------------------------------------------------------


def _matmul_dims(ctx, a, b, ta: bool, tb: bool):
    m, k1 = (a[-1], a[-2]) if ta else (a[-2], a[-1])
    k2, n = (b[-1], b[-2]) if tb else (b[-2], b[-1])
    if k1 is not None and k2 is not None and k1 != k2:
        raise ctx.error(f"inner dimensions differ: {k1} vs {k2} (shapes {list(a)} and {list(b)})")
    return m, n


_RANK_2 = ("MatMul", "_FusedMatMul", "SparseMatMul")


def _matmul_flags(ctx):
    if ctx.op in _RANK_2:
        return bool(ctx.attr("transpose_a", False)), bool(ctx.attr("transpose_b", False))
    return bool(ctx.attr("adj_x", False)), bool(ctx.attr("adj_y", False))


def _matmul_out_dtype(ctx):
    if ctx.op == "SparseMatMul":  # float32 whatever Ta and Tb (float32 or bfloat16) are
        return np.dtype(np.float32)
    return ctx.attr("Tout") if ctx.op == "BatchMatMulV3" else ctx.inputs[0].dtype


def batch_matmul_infer(ctx):
    """MatMul: rank 2. BatchMatMul: equal batch dims. V2/V3: batch dims broadcast."""
    a, b = ctx.inputs[:2]
    ta, tb = _matmul_flags(ctx)
    if ctx.op in _RANK_2:
        require_rank(ctx, 0, (2,))
        require_rank(ctx, 1, (2,))
        m, n = _matmul_dims(ctx, known_dims(a, 2), known_dims(b, 2), ta, tb)
        return [TensorSpec(_matmul_out_dtype(ctx), (m, n))]
    if a.shape is None or b.shape is None:
        return [TensorSpec(_matmul_out_dtype(ctx), None)]
    if len(a.shape) < 2 or len(b.shape) < 2:
        raise ctx.error(f"operands must have rank >= 2, got {list(a.shape)} and {list(b.shape)}")
    m, n = _matmul_dims(ctx, a.shape, b.shape, ta, tb)
    if ctx.op == "BatchMatMul":
        if len(a.shape) != len(b.shape):
            raise ctx.error(f"operands must have the same rank, got {list(a.shape)} and {list(b.shape)}")
        batch = broadcast_shapes(ctx, a.shape[:-2], b.shape[:-2])
    else:
        batch = broadcast_shapes(ctx, a.shape[:-2], b.shape[:-2])
    return [TensorSpec(_matmul_out_dtype(ctx), tuple(batch) + (m, n))]


# TensorFlow's CPU MatMul (Eigen's contraction) sums the products in blocks of this many along
# the contracted dimension, each block from zero, and adds the blocks' sums in order. IREE
# sums all K products into one accumulator. Over a long K the two differ by many ulps, and a
# training loop can amplify that: seed_mnist_softmax (K = 784) leaves TF's loss trajectory by
# 41x its tolerance with one accumulator, and stays within it in blocks (docs/numerics.md).
CONTRACTION_BLOCK = 256


def _k_slice(x, axis: int, lo: int, hi: int):
    """x's elements lo:hi along the contracted `axis`."""
    shape = hlo.shape_of(x)
    return hlo.slice(x, [lo if d == axis else 0 for d in range(len(shape))],
                     [hi if d == axis else n for d, n in enumerate(shape)])


def dot(ctx, a, b, out_shape, dtype):
    """dot_general over broadcast batch dims; a/b contract on their (maybe transposed) inner dims.

    Floating-point products longer than CONTRACTION_BLOCK are summed in TF's blocks: one
    dot_general per block of K (slices of both operands, which IREE reads in place), added in
    order. Measured against one batched dot_general over the blocks and a reduce, which IREE
    runs through its slower batch_matmul codegen: never slower, 0.4-0.5x the time on cnn_train's
    fc1 products (benchmarks/matmul_blocks.py, its table in benchmarks/README.md)."""
    ta, tb = _matmul_flags(ctx)
    batch = list(out_shape[:-2])
    nb = len(batch)
    a = hlo.broadcast_to(a, batch + hlo.shape_of(a)[-2:])
    b = hlo.broadcast_to(b, batch + hlo.shape_of(b)[-2:])
    a_k, b_k = (nb if ta else nb + 1), (nb + 1 if tb else nb)
    k = hlo.shape_of(a)[a_k]
    dims = dict(lhs_batch=range(nb), rhs_batch=range(nb), lhs_contract=[a_k], rhs_contract=[b_k])
    # TF's GPU MatMul is cuBLAS, which has no such blocks: for CUDA the product is one dot_general;
    # a K known at run time only (attention over a `?` sequence length) is one dot_general too
    if k is None or k <= CONTRACTION_BLOCK or not dtypes.is_floating(dtype) or ctx.target == "cuda":
        return hlo.dot_general(a, b, out_shape, dtype, **dims)
    total = None
    for lo in range(0, k, CONTRACTION_BLOCK):
        hi = min(k, lo + CONTRACTION_BLOCK)
        block = hlo.dot_general(_k_slice(a, a_k, lo, hi), _k_slice(b, b_k, lo, hi), out_shape, dtype, **dims)
        total = block if total is None else hlo.add(total, block)
    return total


def _adjoints(ctx):
    """BatchMatMul's adj_x/adj_y take the adjoint: complex operands are conjugated as well as
    transposed (MatMul's transpose_a/b only transpose)."""
    if ctx.op in ("MatMul", "_FusedMatMul"):
        return False, False
    return _matmul_flags(ctx)


def _batch_matmul_lower(ctx, a, b):
    out = ctx.out()
    if ctx.op in ("BatchMatMulV3", "SparseMatMul"):  # Ta, Tb may differ from Tout (e.g. int8 x int8 -> int32)
        a, b = (v if s.dtype == out.dtype else hlo.convert(v, out.dtype) for v, s in zip((a, b), ctx.inputs))
    a, b = (hlo.conj(v) if adjoint else v for v, adjoint in zip((a, b), _adjoints(ctx)))
    return dot(ctx, a, b, out.shape, out.dtype)


def batch_matmul_kernel(ctx, a, b):
    """NumPy reference of the matmul family, accumulating in float64 (int64 for integers)."""
    ta, tb = _matmul_flags(ctx)
    acc = acc_dtype(ctx.out().dtype)
    a, b = (np.conj(v) if adjoint else v for v, adjoint in zip((a, b), _adjoints(ctx)))
    a = np.swapaxes(a, -1, -2) if ta else a
    b = np.swapaxes(b, -1, -2) if tb else b
    return np.matmul(a.astype(acc), b.astype(acc)).astype(ctx.out().dtype)


_MATMUL_ATTRS = {
    "MatMul": ("T", "transpose_a", "transpose_b", "grad_a", "grad_b"),
    "BatchMatMul": ("T", "adj_x", "adj_y", "grad_x", "grad_y"),
    "BatchMatMulV2": ("T", "adj_x", "adj_y", "grad_x", "grad_y"),
    "BatchMatMulV3": ("Ta", "Tb", "Tout", "adj_x", "adj_y", "grad_x", "grad_y"),
}
_MATMUL_DTYPES = FLOAT + ("int32", "int64") + COMPLEX
for _op, _attrs in _MATMUL_ATTRS.items():
    register(_op, infer=batch_matmul_infer, lower=_batch_matmul_lower, kernel=batch_matmul_kernel,
             attrs=_attrs, dtypes=FLOAT + SIGNED + ("uint8",) if _op == "BatchMatMulV3" else _MATMUL_DTYPES)
# MatMul with sparsity hints TF's CPU kernel uses and XLA ignores (tf2xla matmul_op.cc).
register("SparseMatMul", infer=batch_matmul_infer, lower=_batch_matmul_lower, kernel=batch_matmul_kernel,
         attrs=("Ta", "Tb", "transpose_a", "transpose_b", "a_is_sparse", "b_is_sparse"),
         dtypes=("float32", "bfloat16"), dtype_attrs=("Ta", "Tb"))


# -- BiasAdd ----------------------------------------------------------------------------------------


def _bias_axis(ctx, rank: int) -> int:
    """NCHW puts the bias on axis 1 (any rank >= 3, like TF); otherwise the last axis."""
    if ctx.op != "BiasAddV1" and ctx.attr("data_format", "NHWC") == "NCHW" and rank >= 3:
        return 1
    return rank - 1


def _bias_add_infer(ctx):
    x, b = ctx.inputs
    if x.shape is not None:
        if len(x.shape) < 2:
            raise ctx.error(f"value must have rank >= 2, got {list(x.shape)}")
        c, bc = x.shape[_bias_axis(ctx, len(x.shape))], known_dims(b, 1)[0]
        if c is not None and bc is not None and c != bc:
            raise ctx.error(f"bias has {bc} elements, the channel dimension is {c}")
    return same_as_input(ctx)


def _add_bias(ctx, x, bias):
    shape = hlo.shape_of(x)
    return hlo.add(x, hlo.broadcast_in_dim(bias, shape, [_bias_axis(ctx, len(shape))]))


def _np_add_bias(ctx, x, bias):
    axis = _bias_axis(ctx, x.ndim)
    return (x + bias.reshape((-1,) + (1,) * (x.ndim - 1 - axis))).astype(x.dtype)


register("BiasAdd", infer=_bias_add_infer, attrs=("T", "data_format"), dtypes=NUMBER,
         lower=_add_bias, kernel=_np_add_bias)
register("BiasAddV1", infer=_bias_add_infer, attrs=("T",), lower=_add_bias, kernel=_np_add_bias,
         dtypes=NUMBER)


def _bias_add_grad_infer(ctx):
    g = ctx.inputs[0]
    c = None if g.shape is None else g.shape[_bias_axis(ctx, len(g.shape))]
    return [TensorSpec(g.dtype, (c,))]


def _bias_add_grad_lower(ctx, g):
    rank = len(hlo.shape_of(g))
    axis = _bias_axis(ctx, rank)
    return hlo.reduce(g, scalar(0, ctx.out().dtype), [d for d in range(rank) if d != axis])


def _bias_add_grad_kernel(ctx, g):
    axis = _bias_axis(ctx, g.ndim)
    return g.sum(axis=tuple(d for d in range(g.ndim) if d != axis), dtype=acc_dtype(g.dtype)).astype(g.dtype)


register("BiasAddGrad", infer=_bias_add_grad_infer, attrs=("T", "data_format"), dtypes=NUMBER,
         lower=_bias_add_grad_lower, kernel=_bias_add_grad_kernel)
