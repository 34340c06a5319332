"""A dot whose few rows fill IREE's CPU matmul tiles badly, cut into row pieces that fit them.

With data tiling on, IREE packs a matmul's M rows into tiles of M0 rows (x86 with AVX-512, f32:
16; AVX2 and Arm: 8) and runs every tile in full, so the rows past the last multiple of M0 cost
a whole tile. A matrix of fewer than M0 rows gets the narrowest tile that holds it (1, 2, 4, 8 or
M0 rows): 9 rows run as 16. The 1x1 convolutions at the end of Keras MobileNetV2 at 96x96 are
such dots, 3x3 = 9 rows per image, and the 6x6 stage's 36 rows run as 48. Measured on this
2-core Zen 4 (iree-benchmark-module, local-sync, a dot with a bias and a ReLU after it):

| rows x K x N | whole | pieces | time |
|---|---|---|---|
| 9 x 160 x 960 | 0.049 ms | 8 + 1 | 0.036 ms |
| 9 x 320 x 1280 | 0.123 ms | 8 + 1 | 0.089 ms |
| 36 x 96 x 576 | 0.063 ms | 32 + 4 | 0.044 ms |
| 18 x 160 x 960 | 0.131 ms | 16 + 2 | 0.061 ms |
| 27 x 160 x 960 | 0.092 ms | 16 + 8 + 2 + 1 | 0.091 ms (kept whole: too little padding) |
| 108 x 96 x 576 | 0.117 ms | 96 + 8 + 4 | 0.32 ms (kept whole: 64 rows or more) |

So an f32 dot with constant weights, fewer than MAX_ROWS rows and at least a quarter of its
tiled rows padding is rewritten as one dot per piece (the whole tiles, then the remainder as
powers of two, each a narrow tile of its own) over row slices of its input, joined by a
concatenate. Each row's sum is computed as before: bit for bit. The whole MobileNetV2 batch-1
module went from 1.75-1.81 to 1.48-1.52 ms. CompileOptions runs the pass only where these tiles
are the ones IREE uses: llvm-cpu for this host's CPU, data tiling not off.
"""

from __future__ import annotations

import math

from iree.compiler import ir

from hlobridge.compile.host_cpu import has_feature
from hlobridge.dialects import stablehlo as hlo

from .ir_helpers import dot_dimensions, element_type_name, erase_dead_ops, numpy_dtype, ops_named, replace, shape

MAX_ROWS = 64  # measured: 72 and 108 rows ran 1.6-2.9x slower cut (module docstring)
MIN_SAVED = 0.25  # the share of the tiled rows that must be padding
MIN_WORK = 1 << 19  # multiply-adds: below, an extra dispatch costs more than the padding
_FLOATS = ("f32",)  # the tile heights above are f32's


def host_row_tile() -> int:
    """IREE's f32 matmul tile height (M0) on this CPU: 16 with AVX-512, else 8."""
    return 16 if has_feature("avx512f") else 8


def _tiled_rows(rows: int, tile: int) -> int:
    """The rows IREE computes for `rows`: the narrowest power-of-two tile below `tile`, else
    whole tiles."""
    return 1 << (rows - 1).bit_length() if rows < tile else -(-rows // tile) * tile


def row_pieces(rows: int, tile: int) -> list[int] | None:
    """The row pieces for a dot of `rows` rows (whole tiles, then powers of two), or None where
    it stays whole: too many rows, or too little of its tiled work padding."""
    if rows >= MAX_ROWS or rows % tile == 0:
        return None
    whole, rest = divmod(rows, tile)
    pieces = [whole * tile] if whole else []
    while rest:
        pieces.append(1 << (rest.bit_length() - 1))
        rest -= pieces[-1]
    if len(pieces) < 2 or 1 - rows / _tiled_rows(rows, tile) < MIN_SAVED:
        return None
    return pieces


def _rows_and_depth(op: ir.Operation) -> tuple[list[int], int] | None:
    """(the lhs's free dims, K) for a dot of rows by a constant [K, N] matrix: no batch dims, the
    lhs contracted along its last dim, the rhs along its first; None otherwise."""
    dims = dot_dimensions(op)
    lhs, rhs = (shape(v) for v in op.operands)
    if dims["lhs_batching_dimensions"] or len(rhs) != 2 or any(d < 0 for d in lhs + rhs):
        return None
    if dims["lhs_contracting_dimensions"] != [len(lhs) - 1] or dims["rhs_contracting_dimensions"] != [0]:
        return None
    if element_type_name(op.results[0]) not in _FLOATS or not hlo.is_constant(op.operands[1]):
        return None
    return lhs[:-1], lhs[-1]


def _split(op: ir.Operation, tile: int) -> bool:
    found = _rows_and_depth(op)
    if found is None:
        return False
    free, depth = found
    rows, width = math.prod(free), shape(op.operands[1])[1]
    pieces = row_pieces(rows, tile)
    if pieces is None or rows * depth * width < MIN_WORK:
        return False
    dtype = numpy_dtype(element_type_name(op.results[0]))
    with ir.InsertionPoint(op), op.location:
        lhs = hlo.reshape(op.operands[0], [rows, depth])
        parts, start = [], 0
        for n in pieces:
            piece = hlo.slice(lhs, [start, 0], [start + n, depth])
            part = hlo.dot_general(piece, op.operands[1], [n, width], dtype, lhs_contract=[1], rhs_contract=[0])
            if "precision_config" in op.attributes:
                part.owner.attributes["precision_config"] = op.attributes["precision_config"]
            parts.append(part)
            start += n
        result = hlo.reshape(hlo.concatenate(parts, 0), [*free, width])
    replace(op, result)
    return True


def split_narrow_rows(module: ir.Module, tile: int | None = None) -> int:
    """Cut every dot whose rows fill the CPU's matmul tiles badly (module docstring); returns how
    many. `tile`: IREE's M0 (None: this host's, `host_row_tile`)."""
    tile = tile or host_row_tile()
    split = sum(_split(op, tile) for op in ops_named(module, ("stablehlo.dot_general",)))
    if split:
        erase_dead_ops(module)
    return split
