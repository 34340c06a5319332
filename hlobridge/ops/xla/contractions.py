"""XlaDot/V2, XlaConv/V2 and XlaEinsum: XLA's dot_general and convolution with their
dimension numbers as serialized protos (protos.py), and the two-operand einsum
(tf2xla/kernels/xla_dot_op.cc, xla_conv_op.cc, einsum_op.cc).

The V2 forms take operands of two element types and a `preferred_element_type` for the result
(int8 x int8 -> int32, bf16 -> f32): the operands are converted to the result type first, which
is what XLA's CPU backend computes too (the products are exact in the wider type). The kernels
are NumPy's, in float64/int64 (helpers.acc_dtype), with XLA's window arithmetic for the
convolution: base (lhs) dilation, padding (negative crops), window strides and dilation,
feature and batch groups.
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ..helpers import acc_dtype, ints, out_spec, value_of
from ..registry import lookup, register
from . import protos


def _dims(ctx, schema):
    try:
        return protos.parse(ctx.attr("dimension_numbers"), schema)
    except protos.ProtoError as e:
        raise ctx.error(f"dimension_numbers is not a serialized XLA proto: {e}") from None


def _out_dtype(ctx):
    return ctx.attr("preferred_element_type", None) or ctx.inputs[0].dtype


def _as_out_type(ctx, *operands):
    """The operands in the result's element type (V2's preferred_element_type)."""
    dtype = np.dtype(_out_dtype(ctx))
    return [v if np.dtype(s.dtype) == dtype else hlo.convert(v, dtype) for v, s in zip(operands, ctx.inputs)]


# -- XlaDot / XlaDotV2 --------------------------------------------------------------------------------

def _dot_parts(dn, lhs_rank, rhs_rank):
    lb, rb = dn["lhs_batch_dimensions"], dn["rhs_batch_dimensions"]
    lc, rc = dn["lhs_contracting_dimensions"], dn["rhs_contracting_dimensions"]
    lf = [d for d in range(lhs_rank) if d not in lb and d not in lc]
    rf = [d for d in range(rhs_rank) if d not in rb and d not in rc]
    return lb, rb, lc, rc, lf, rf


def _dot_infer(ctx):
    dn = _dims(ctx, protos.DOT)
    lhs, rhs = ctx.inputs[0], ctx.inputs[1]
    if lhs.shape is None or rhs.shape is None:
        return [out_spec(ctx, None, dtype=_out_dtype(ctx))]
    lb, rb, lc, rc, lf, rf = _dot_parts(dn, lhs.rank, rhs.rank)
    if len(lb) != len(rb) or len(lc) != len(rc):
        raise ctx.error(f"batch {lb} / {rb} and contracting {lc} / {rc} dimensions must pair up")
    for a, b in [*zip(lb, rb), *zip(lc, rc)]:
        if None not in (lhs.shape[a], rhs.shape[b]) and lhs.shape[a] != rhs.shape[b]:
            raise ctx.error(f"lhs dimension {a} ({lhs.shape[a]}) does not match rhs dimension {b} ({rhs.shape[b]})")
    shape = [lhs.shape[d] for d in lb + lf] + [rhs.shape[d] for d in rf]
    return [out_spec(ctx, shape, dtype=_out_dtype(ctx))]


def _dot_lower(ctx, lhs, rhs):
    dn = _dims(ctx, protos.DOT)
    lhs, rhs = _as_out_type(ctx, lhs, rhs)
    return hlo.dot_general(lhs, rhs, ctx.out().shape, ctx.out().dtype, lhs_batch=dn["lhs_batch_dimensions"],
                           rhs_batch=dn["rhs_batch_dimensions"], lhs_contract=dn["lhs_contracting_dimensions"],
                           rhs_contract=dn["rhs_contracting_dimensions"],
                           precision=protos.precision(ctx.attr("precision_config", b"")))


def _dot_kernel(ctx, lhs, rhs):
    lb, rb, lc, rc, lf, rf = _dot_parts(_dims(ctx, protos.DOT), lhs.ndim, rhs.ndim)
    acc = acc_dtype(ctx.out().dtype)
    a = np.transpose(lhs, lb + lf + lc).astype(acc)
    b = np.transpose(rhs, rb + rc + rf).astype(acc)
    nb, nc = len(lb), len(lc)
    batch, free_a, free_b = a.shape[:nb], a.shape[nb:a.ndim - nc], b.shape[nb + nc:]
    k = int(np.prod(a.shape[a.ndim - nc:], dtype=np.int64))
    out = np.matmul(a.reshape(*batch, -1, k) if a.size else np.zeros((*batch, int(np.prod(free_a)), k), acc),
                    b.reshape(*batch, k, -1) if b.size else np.zeros((*batch, k, int(np.prod(free_b))), acc))
    return out.reshape(ctx.out().shape).astype(ctx.out().dtype)


_DOT_ATTRS = ("dimension_numbers", "precision_config")
register("XlaDot", infer=_dot_infer, lower=_dot_lower, kernel=_dot_kernel, attrs=("T", *_DOT_ATTRS))
register("XlaDotV2", infer=_dot_infer, lower=_dot_lower, kernel=_dot_kernel,
         attrs=("LhsT", "RhsT", "preferred_element_type", *_DOT_ATTRS),
         dtype_attrs=("LhsT", "RhsT", "preferred_element_type"))


# -- XlaConv / XlaConvV2(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, feature_group_count)

def _conv_geometry(ctx):
    """(strides, padding pairs, lhs dilation, rhs dilation, feature groups, batch groups)."""
    strides, lhs_dil, rhs_dil = (ints(ctx.const(i)) for i in (2, 4, 5))
    padding = [tuple(p) for p in np.asarray(ctx.const(3), np.int64).reshape(-1, 2).tolist()]
    n = len(strides)
    if not (len(padding) == len(lhs_dil) == len(rhs_dil) == n):
        raise ctx.error(f"window_strides {strides}, padding {padding}, lhs_dilation {lhs_dil} and rhs_dilation "
                        f"{rhs_dil} must have one entry per spatial dimension")
    groups = int(np.asarray(ctx.const(6)))
    return strides, padding, lhs_dil, rhs_dil, groups, ctx.attr("batch_group_count", 1)


def _window_out(size, k, stride, pad, lhs_dil, rhs_dil):
    padded = (size - 1) * lhs_dil + 1 + pad[0] + pad[1] if size else pad[0] + pad[1]
    eff = (k - 1) * rhs_dil + 1
    return max(0, (padded - eff) // stride + 1) if padded >= eff else 0


def _conv_infer(ctx):
    dn = _dims(ctx, protos.CONV)
    lhs, rhs = ctx.inputs[0], ctx.inputs[1]
    if lhs.shape is None or rhs.shape is None or any(value_of(ctx, i) is None for i in range(2, 7)) \
            or None in lhs.shape or None in rhs.shape:
        return [out_spec(ctx, None if lhs.shape is None else (None,) * lhs.rank, dtype=_out_dtype(ctx))]
    strides, padding, lhs_dil, rhs_dil, groups, batch_groups = _conv_geometry(ctx)
    shape = [0] * lhs.rank
    shape[dn["output_batch_dimension"]] = lhs.shape[dn["input_batch_dimension"]] // batch_groups
    shape[dn["output_feature_dimension"]] = rhs.shape[dn["kernel_output_feature_dimension"]]
    for i, (a, k, o) in enumerate(zip(dn["input_spatial_dimensions"], dn["kernel_spatial_dimensions"],
                                      dn["output_spatial_dimensions"])):
        shape[o] = _window_out(lhs.shape[a], rhs.shape[k], strides[i], padding[i], lhs_dil[i], rhs_dil[i])
    if lhs.shape[dn["input_feature_dimension"]] != rhs.shape[dn["kernel_input_feature_dimension"]] * groups:
        raise ctx.error(f"input features {lhs.shape[dn['input_feature_dimension']]} must be the kernel's input "
                        f"features {rhs.shape[dn['kernel_input_feature_dimension']]} x feature_group_count {groups}")
    return [out_spec(ctx, shape, dtype=_out_dtype(ctx))]


def _layout(dn) -> str:
    """StableHLO's short form of the dimension numbers, e.g. [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]."""
    def one(batch, feature, spatial, names):
        dims = [""] * (len(spatial) + 2)
        dims[batch], dims[feature] = names
        for i, d in enumerate(spatial):
            dims[d] = str(i)
        return "[" + ", ".join(dims) + "]"
    return (one(dn["input_batch_dimension"], dn["input_feature_dimension"], dn["input_spatial_dimensions"], "bf")
            + "x" + one(dn["kernel_input_feature_dimension"], dn["kernel_output_feature_dimension"],
                        dn["kernel_spatial_dimensions"], "io")
            + "->" + one(dn["output_batch_dimension"], dn["output_feature_dimension"],
                         dn["output_spatial_dimensions"], "bf"))


def _conv_lower(ctx, lhs, rhs, *_):
    dn = _dims(ctx, protos.CONV)
    strides, padding, lhs_dil, rhs_dil, groups, batch_groups = _conv_geometry(ctx)
    lhs, rhs = _as_out_type(ctx, lhs, rhs)
    return hlo.convolution(lhs, rhs, ctx.out().shape, ctx.out().dtype, layout=_layout(dn), strides=strides,
                           padding=padding, lhs_dilation=lhs_dil, rhs_dilation=rhs_dil,
                           feature_group_count=groups, batch_group_count=batch_groups)


def _conv_kernel(ctx, lhs, rhs, *_):
    dn = _dims(ctx, protos.CONV)
    strides, padding, lhs_dil, rhs_dil, groups, batch_groups = _conv_geometry(ctx)
    acc = acc_dtype(ctx.out().dtype)
    x = np.transpose(lhs, [dn["input_batch_dimension"], dn["input_feature_dimension"],
                           *dn["input_spatial_dimensions"]]).astype(acc)
    w = np.transpose(rhs, [dn["kernel_output_feature_dimension"], dn["kernel_input_feature_dimension"],
                           *dn["kernel_spatial_dimensions"]]).astype(acc)
    n = len(strides)
    dilated = np.zeros(x.shape[:2] + tuple((d - 1) * s + 1 if d else 0 for d, s in zip(x.shape[2:], lhs_dil)), acc)
    dilated[(slice(None), slice(None), *(slice(None, None, s) for s in lhs_dil))] = x
    x = np.pad(dilated, [(0, 0), (0, 0), *[(max(lo, 0), max(hi, 0)) for lo, hi in padding]])
    x = x[(slice(None), slice(None), *(slice(-min(lo, 0), x.shape[2 + i] + min(hi, 0))
                                         for i, (lo, hi) in enumerate(padding)))]
    eff = [(k - 1) * d + 1 for k, d in zip(w.shape[2:], rhs_dil)]
    out_sizes = [max(0, (p - e) // s + 1) if p >= e else 0 for p, e, s in zip(x.shape[2:], eff, strides)]
    out = np.zeros((x.shape[0] // batch_groups, w.shape[0], *out_sizes), acc)
    groups_all = groups * batch_groups
    co = w.shape[0] // groups_all
    for g in range(groups_all):
        fg, bg = (g, 0) if groups > 1 else (0, g)
        xs = x[bg * out.shape[0]:(bg + 1) * out.shape[0], fg * w.shape[1]:(fg + 1) * w.shape[1]]
        ws = w[g * co:(g + 1) * co]
        for pos in np.ndindex(*out_sizes):
            window = xs[(slice(None), slice(None), *(slice(p * s, p * s + e, d) for p, s, e, d
                                                      in zip(pos, strides, eff, rhs_dil)))]
            out[(slice(None), slice(g * co, (g + 1) * co), *pos)] = np.tensordot(
                window, ws, axes=([1, *range(2, 2 + n)], [1, *range(2, 2 + n)]))
    perm = [dn["output_batch_dimension"], dn["output_feature_dimension"], *dn["output_spatial_dimensions"]]
    return np.transpose(out, np.argsort(perm)).astype(ctx.out().dtype)


_CONV_ATTRS = ("Tindices", "dimension_numbers", "precision_config")
register("XlaConv", infer=_conv_infer, lower=_conv_lower, kernel=_conv_kernel, attrs=("T", *_CONV_ATTRS),
         const_inputs=(2, 3, 4, 5, 6))
register("XlaConvV2", infer=_conv_infer, lower=_conv_lower, kernel=_conv_kernel,
         attrs=("LhsT", "RhsT", "preferred_element_type", "batch_group_count", *_CONV_ATTRS),
         const_inputs=(2, 3, 4, 5, 6), dtype_attrs=("LhsT", "RhsT", "preferred_element_type"))


# -- XlaEinsum(a, b): Einsum's rules (ops/linalg/einsum.py) for two operands ----------------------------------

_einsum = lookup("Einsum")
register("XlaEinsum", infer=_einsum.infer, lower=_einsum.lower, kernel=_einsum.kernel, attrs=("equation", "T"))
