"""XLA's RngBitGenerator bit streams, in NumPy: ThreeFry2x32 and Philox4x32-10 with the layouts of
xla/hlo/builder/lib/prng.cc as the rng_bit_generator expander calls them (the state's first
word is the key, the rest the counter).

- ThreeFry (state u64[2]): counter + linear index per element pair; for 32-bit outputs the
  shape is split in half along its first even dimension (else its largest), the two output
  words interleaved along it; 64-bit outputs join the two words (low first); narrower types
  take the low bits of the 32-bit stream. The counter advances by the number of pairs.
- Philox (state u64[3]: key, then the 128-bit counter low word first): counter + i for block i,
  the four words of each block laid out round robin; 64-bit outputs join words (0, 1) and
  (2, 3). The counter advances by the number of blocks.

This module is the kernel's oracle and the recipe the StableHLO lowering (rng.py) follows.
"""

from __future__ import annotations

import numpy as np

U32, U64 = np.uint32, np.uint64
_ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)


def _rotl(v, d: int):
    return (v << U32(d)) | (v >> U32(32 - d))


def threefry2x32(x0, x1, k0, k1):
    """The Threefry2x32-20 block function on uint32 arrays (x0, x1) and key words (k0, k1)."""
    ks = [U32(k0), U32(k1), U32(0x1BD11BDA) ^ U32(k0) ^ U32(k1)]
    x0, x1 = x0 + ks[0], x1 + ks[1]
    for i in range(5):
        for r in _ROTATIONS[4 * (i % 2):4 * (i % 2) + 4]:
            x0 = x0 + x1
            x1 = x0 ^ _rotl(x1, r)
        x0 = x0 + ks[(i + 1) % 3]
        x1 = x1 + ks[(i + 2) % 3] + U32(i + 1)
    return x0, x1


def split_dim(shape) -> int:
    """XLA's SplitShapeIntoHalves: the first even dimension, else the first largest."""
    for i, d in enumerate(shape):
        if d % 2 == 0:
            return i
    return int(np.argmax(shape))


def _words(u64):
    return (u64 & U64(0xFFFFFFFF)).astype(U32), (u64 >> U64(32)).astype(U32)


def threefry_bits(state: np.ndarray, shape, bits: int):
    """(new state, uint<bits> array of `shape`) of XLA's ThreeFry bit generator."""
    key, counter = U64(state[0]), U64(state[1])
    k0, k1 = _words(np.array(key, U64))
    shape = tuple(shape)
    if bits == 64:
        n = int(np.prod(shape, dtype=np.int64))
        x0, x1 = threefry2x32(*_words(counter + np.arange(n, dtype=U64)), k0, k1)
        out = (x0.astype(U64) | (x1.astype(U64) << U64(32))).reshape(shape)
    else:
        if shape:
            axis = split_dim(shape)
            half = list(shape)
            half[axis] = -(-shape[axis] // 2)
        else:
            axis, half = 0, [1]
        n = int(np.prod(half, dtype=np.int64))
        x0, x1 = threefry2x32(*_words(counter + np.arange(n, dtype=U64)), k0, k1)
        both = np.stack([x0.reshape(half), x1.reshape(half)], axis=axis + 1)
        merged = list(half)
        merged[axis] *= 2
        out = both.reshape(merged)
        out = out[tuple(slice(0, d) for d in shape)] if shape else out.reshape(-1)[0]
        out = out.astype(np.dtype(f"uint{bits}"))
    return np.array([key, counter + U64(n)], U64), out


_M_A, _M_B, _W_A, _W_B = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85


def philox4x32(words, k0, k1):
    """Philox4x32-10 on four uint32 arrays with key words (k0, k1)."""
    x0, x1, x2, x3 = words
    k0, k1 = U32(k0), U32(k1)
    for _ in range(10):
        p0 = x0.astype(U64) * U64(_M_A)
        p1 = x2.astype(U64) * U64(_M_B)
        x0, x1, x2, x3 = ((p1 >> U64(32)).astype(U32) ^ x1 ^ k0, p1.astype(U32),
                          (p0 >> U64(32)).astype(U32) ^ x3 ^ k1, p0.astype(U32))
        k0, k1 = k0 + U32(_W_A), k1 + U32(_W_B)
    return x0, x1, x2, x3


def philox_bits(state: np.ndarray, shape, bits: int):
    """(new state, uint<bits> array of `shape`) of XLA's Philox bit generator."""
    key, lo, hi = (U64(s) for s in state[:3])
    k0, k1 = _words(np.array(key, U64))
    n = int(np.prod(tuple(shape), dtype=np.int64))
    blocks = -(-(2 * n if bits == 64 else n) // 4)
    offsets = np.arange(blocks, dtype=U64)
    low = lo + offsets
    high = np.where(low < lo, hi + U64(1), hi).astype(U64)
    words = philox4x32([*_words(low), *_words(high)], k0, k1)
    if bits == 64:
        pairs = [w0.astype(U64) | (w1.astype(U64) << U64(32)) for w0, w1 in (words[:2], words[2:])]
        out = np.stack(pairs, axis=1).reshape(-1)[:n]
    else:
        out = np.stack(words, axis=1).reshape(-1)[:n].astype(np.dtype(f"uint{bits}"))
    new_lo = lo + U64(blocks)
    new_hi = hi + U64(1) if new_lo < lo else hi
    return np.array([key, new_lo, new_hi], U64), out.reshape(tuple(shape))
