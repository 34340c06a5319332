"""`_HlobridgeAllReduce`: one bucket of gradients averaged over the ranks of the world.

Not a TensorFlow op (hence the leading underscore, as TF's own internal `_Send`/`_Recv`):
a data-parallel Session inserts one per bucket between the nodes that compute gradients and
the optimizer ops that apply them (hlobridge/distributed/data_parallel.py). Its inputs are
the bucket's gradients, its outputs the same tensors averaged: the bucket goes over the wire
as one flat buffer (one `Iallreduce` per bucket, as Horovod's tensor fusion and PyTorch DDP's
buckets do), summed, then divided by the world size, which is TF's `final_op=Div` and gives
every rank the same bits.
"""

from __future__ import annotations

import numpy as np

from ...distributed import world as worlds
from ...spec import TensorSpec
from ..registry import register

OP = "_HlobridgeAllReduce"


def flat_mean(world, arrays: list, what: str) -> list:
    """`arrays` (one dtype) averaged over the world's ranks, as one flat all-reduce."""
    arrays = [np.asarray(a) for a in arrays]
    flat = np.concatenate([a.reshape(-1) for a in arrays]) if arrays else np.zeros(0)
    total = world.allreduce(flat, what)
    mean = (total / np.asarray(world.size, total.dtype)).astype(flat.dtype)
    out, at = [], 0
    for a in arrays:
        out.append(mean[at: at + a.size].reshape(a.shape))
        at += a.size
    return out


def _kernel(ctx, *grads):
    return flat_mean(worlds.current(), list(grads), f"node '{ctx.name}' ({OP}, gradient bucket "
                                                   f"{ctx.attr('bucket')}, {len(grads)} tensor(s))")


register(OP, infer=lambda ctx: [TensorSpec(s.dtype, s.shape) for s in ctx.inputs],
         kernel=_kernel, attrs=("T", "bucket"), stateful=True)
