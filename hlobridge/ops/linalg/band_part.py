"""Matrix ops on the last two dimensions: MatrixBandPart (attention masks, triangular parts).

MatrixBandPart(input, num_lower, num_upper) keeps element (i, j) of each innermost matrix
where (num_lower < 0 or i - j <= num_lower) and (num_upper < 0 or j - i <= num_upper), and
zeroes the rest. The bands are compile-time constants; the mask is built from iotas.
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ..helpers import ints, same_as_input
from ..registry import register


def _band_infer(ctx):
    x = ctx.inputs[0]
    if x.shape is not None and len(x.shape) < 2:
        raise ctx.error(f"input must have rank >= 2, got {x}")
    return same_as_input(ctx)


def _band_lower(ctx, x, *_):
    lower, upper = ints(ctx.const(1))[0], ints(ctx.const(2))[0]
    shape = hlo.shape_of(x)
    rank = len(shape)
    i, j = hlo.iota(shape, np.int64, rank - 2), hlo.iota(shape, np.int64, rank - 1)
    keep = None
    if lower >= 0:
        keep = hlo.compare("LE", hlo.subtract(i, j), hlo.scalar_like(lower, i))
    if upper >= 0:
        above = hlo.compare("LE", hlo.subtract(j, i), hlo.scalar_like(upper, i))
        keep = above if keep is None else hlo.binary("and", keep, above)
    if keep is None:
        return x
    return hlo.select(keep, x, hlo.broadcast_in_dim(hlo.constant(np.zeros((), ctx.out().dtype)), shape, []))


def _band_kernel(ctx, x, lower, upper):
    lower, upper = ints(lower)[0], ints(upper)[0]
    i = np.arange(x.shape[-2])[:, None]
    j = np.arange(x.shape[-1])[None, :]
    keep = ((lower < 0) | (i - j <= lower)) & ((upper < 0) | (j - i <= upper))
    return np.where(keep, x, np.zeros((), x.dtype))


register("MatrixBandPart", infer=_band_infer, lower=_band_lower, kernel=_band_kernel, const_inputs=(1, 2),
         attrs=("T", "Tindex"))
