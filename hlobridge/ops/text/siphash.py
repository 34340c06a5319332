"""SipHash-2-4, as TensorFlow's `StrongKeyedHash` (highwayhash::SipHash) computes it for
`StringToHashBucketStrong`: a 128-bit key given as two uint64s (k0, k1), the input's bytes
read little-endian, the standard 2 compression and 4 finalization rounds. Checked against
TensorFlow's buckets in tests/ops/test_tables.py.
"""

from __future__ import annotations

_MASK = (1 << 64) - 1


def _rotl(v: int, b: int) -> int:
    return ((v << b) | (v >> (64 - b))) & _MASK


def _round(v0, v1, v2, v3):
    v0 = (v0 + v1) & _MASK
    v1 = _rotl(v1, 13) ^ v0
    v0 = _rotl(v0, 32)
    v2 = (v2 + v3) & _MASK
    v3 = _rotl(v3, 16) ^ v2
    v0 = (v0 + v3) & _MASK
    v3 = _rotl(v3, 21) ^ v0
    v2 = (v2 + v1) & _MASK
    v1 = _rotl(v1, 17) ^ v2
    v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


def siphash24(k0: int, k1: int, data: bytes) -> int:
    """SipHash-2-4 of `data` under key (k0, k1): an unsigned 64-bit int."""
    v0 = k0 ^ 0x736F6D6570736575
    v1 = k1 ^ 0x646F72616E646F6D
    v2 = k0 ^ 0x6C7967656E657261
    v3 = k1 ^ 0x7465646279746573
    n = len(data)
    tail = n - n % 8
    for i in range(0, tail, 8):
        m = int.from_bytes(data[i:i + 8], "little")
        v3 ^= m
        v0, v1, v2, v3 = _round(*_round(v0, v1, v2, v3))
        v0 ^= m
    m = ((n & 0xFF) << 56) | int.from_bytes(data[tail:], "little")
    v3 ^= m
    v0, v1, v2, v3 = _round(*_round(v0, v1, v2, v3))
    v0 ^= m
    v2 ^= 0xFF
    for _ in range(4):
        v0, v1, v2, v3 = _round(v0, v1, v2, v3)
    return v0 ^ v1 ^ v2 ^ v3
