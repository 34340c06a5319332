"""Xla* ops that annotate rather than compute, on the one device a hlobridge session runs:
sharding and SPMD partitioning marks, dynamic-size bounds, the optimization barrier, the
replica id (tf2xla/kernels/sharding_op.cc, spmd_manual_sharding_ops.cc, dynamic_*_ops.cc,
xla_optimization_barrier_op.cc, replica_id_op.cc).

Each is a generic rule plus a row of a table: which input passes through, and when the op
cannot mean "the same tensor" on one device, why (the node is refused with that reason):

- XlaSharding: XLA's CPU and GPU compilers drop sharding annotations when there is one
  partition (TF's own CPU JIT returns the input for a tiled sharding too): identity.
- XlaSpmdFullToShardShape / XlaSpmdShardToFullShape: identity when the manual sharding has one
  tile; a sharding over several devices changes the shape (TF's CPU JIT fails on it too).
- XlaSetBound: a bound for XLA's dynamic padder; the value passes through.
- XlaSetDynamicDimensionSize(input, dim, size): TF returns the first `size` entries of `dim`.
  With a constant size that is a static slice, which compiles; a size computed at run time
  makes the output's shape data-dependent, so the node runs on its kernel.
- XlaRemoveDynamicDimensionSize: makes a dynamic dimension static again, padding included.
  hlobridge's tensors have no dynamic dimensions: identity. (After an XlaSetDynamicDimensionSize
  XLA gives back the padded tensor, hlobridge the sliced one: docs/xla_ops.md.)
- XlaOptimizationBarrier: keeps XLA from moving computation across it; identity (IREE has no
  such barrier in its input dialects; values are what matter).
- XlaReplicaId: 0, the only replica. (TF 2.21's CPU JIT aborts the process on it.)
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ...spec import TensorSpec
from ..helpers import out_spec
from ..registry import register
from . import protos


def _one_tile(attr: str):
    """A check: the sharding in `attr` has one tile (else the reason)."""
    def check(ctx):
        try:
            tiles = protos.parse(ctx.attr(attr, b"") or b"", protos.SHARDING)["tile_assignment_dimensions"]
        except protos.ProtoError as e:
            raise ctx.error(f"{attr} is not a serialized OpSharding: {e}") from None
        devices = int(np.prod(tiles)) if tiles else 1
        if devices > 1:
            raise ctx.error(f"the sharding splits the tensor over {devices} devices ({attr}: tiles {tiles}); "
                            f"hlobridge runs one device per session")
    return check


def _full_shape_matches(ctx):
    full = ctx.attr("full_shape")
    if full is not None and ctx.inputs[0].shape is not None and tuple(full) != tuple(ctx.inputs[0].shape):
        raise ctx.error(f"full_shape {list(full)} differs from the shard's {ctx.inputs[0]}: a sharding over "
                        f"several devices; hlobridge runs one device per session")


def _no_check(ctx):
    return None


# op -> (attrs, check of the node)
_PASS_THROUGH = {
    "XlaSharding": (("T", "sharding", "unspecified_dims"), _no_check),
    "XlaSpmdFullToShardShape": (("T", "manual_sharding", "dim", "unspecified_dims"), _one_tile("manual_sharding")),
    "XlaSpmdShardToFullShape": (("T", "manual_sharding", "full_shape", "dim", "unspecified_dims"),
                                lambda ctx: (_one_tile("manual_sharding")(ctx), _full_shape_matches(ctx))),
    "XlaSetBound": ((), _no_check),
    "XlaRemoveDynamicDimensionSize": (("T",), _no_check),
}


def _pass_through(check):
    def infer(ctx):
        check(ctx)
        return [ctx.inputs[0]]
    return infer


for _op, (_attrs, _check) in _PASS_THROUGH.items():
    register(_op, infer=_pass_through(_check), lower=lambda ctx, x, *_: x, kernel=lambda ctx, x, *_: x,
             attrs=_attrs)

register("XlaOptimizationBarrier", infer=lambda ctx: list(ctx.inputs), lower=lambda ctx, *xs: list(xs),
         kernel=lambda ctx, *xs: list(xs), attrs=("T",))
register("XlaReplicaId", infer=lambda ctx: [TensorSpec(np.dtype(np.int32), ())],
         lower=lambda ctx: hlo.constant(np.array(0, np.int32)), kernel=lambda ctx: np.array(0, np.int32))


# -- XlaSetDynamicDimensionSize(input, dim_index, size) -------------------------------------------

def _dynamic_size(ctx):
    """(dim, size): size None when it is computed at run time."""
    dim = ctx.inputs[1].value
    if dim is None:
        raise ctx.error("dim_index must be a compile-time constant")
    dim, rank = int(np.asarray(dim)), ctx.inputs[0].rank
    if rank is not None and not 0 <= dim < rank:
        raise ctx.error(f"dim_index {dim} is out of range for {ctx.inputs[0]}")
    size = ctx.inputs[2].value
    return dim, None if size is None else int(np.asarray(size))


def _set_size_infer(ctx):
    x = ctx.inputs[0]
    dim, size = _dynamic_size(ctx)
    if x.shape is None:
        return [x]
    bound = x.shape[dim]
    if size is not None and bound is not None and not 0 <= size <= bound:
        raise ctx.error(f"size {size} is out of range for a dimension of {bound}")
    return [out_spec(ctx, [size if i == dim else d for i, d in enumerate(x.shape)])]


def _set_size_lower(ctx, x, *_):
    shape = ctx.out().shape
    if shape is None or None in shape:
        raise ctx.lowering_error("the size is computed at run time, so the output's shape depends on a value "
                                 "(XLA's dynamic dimension); hlobridge compiles static shapes: it runs on its kernel")
    return hlo.slice(x, [0] * len(shape), list(shape))


def _set_size_kernel(ctx, x, dim, size):
    index = [slice(None)] * x.ndim
    index[int(dim)] = slice(0, int(size))
    return x[tuple(index)].copy()


register("XlaSetDynamicDimensionSize", infer=_set_size_infer, lower=_set_size_lower, kernel=_set_size_kernel,
         attrs=("T",))
