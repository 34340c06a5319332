"""TensorFlow's `Fingerprint64`: FarmHash's `farmhashna::Hash64`, in pure Python.

`StringToHashBucketFast` (the OOV buckets of Keras' StringLookup, `tf.strings.
to_hash_bucket_fast`) buckets a string as `Fingerprint64(s) % num_buckets`, and TF's
`Fingerprint64` is `::util::Fingerprint64`, i.e. `farmhash::Fingerprint64`, which FarmHash
defines as `farmhashna::Hash64` (farmhash.cc, "NA" variant, little-endian reads, seedless).
Written here from that source so that hlobridge needs no compiled hash library; the tests
check it bit for bit against TensorFlow's buckets (tests/ops/test_tables.py) for every length
class (0, 1-3, 4-7, 8-16, 17-32, 33-64, and the 64-byte block loop).
"""

from __future__ import annotations

_MASK = (1 << 64) - 1
K0 = 0xC3A5C85C97CB3127
K1 = 0xB492B66FBE98F273
K2 = 0x9AE16A3B2F90404F


def _fetch64(s: bytes, i: int) -> int:
    return int.from_bytes(s[i:i + 8], "little")


def _fetch32(s: bytes, i: int) -> int:
    return int.from_bytes(s[i:i + 4], "little")


def _rotate(v: int, shift: int) -> int:
    """Rotate right, as FarmHash's Rotate64."""
    return v if shift == 0 else ((v >> shift) | (v << (64 - shift))) & _MASK


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def _hash_len16(u: int, v: int, mul: int) -> int:
    a = ((u ^ v) * mul) & _MASK
    a ^= a >> 47
    b = ((v ^ a) * mul) & _MASK
    b ^= b >> 47
    return (b * mul) & _MASK


def _hash_len0to16(s: bytes) -> int:
    n = len(s)
    if n >= 8:
        mul = K2 + n * 2
        a = (_fetch64(s, 0) + K2) & _MASK
        b = _fetch64(s, n - 8)
        c = (_rotate(b, 37) * mul + a) & _MASK
        d = ((_rotate(a, 25) + b) * mul) & _MASK
        return _hash_len16(c, d, mul)
    if n >= 4:
        mul = K2 + n * 2
        return _hash_len16(n + (_fetch32(s, 0) << 3), _fetch32(s, n - 4), mul)
    if n > 0:
        y = (s[0] + (s[n >> 1] << 8)) & 0xFFFFFFFF
        z = (n + (s[n - 1] << 2)) & 0xFFFFFFFF
        return (_shift_mix(((y * K2) ^ (z * K0)) & _MASK) * K2) & _MASK
    return K2


def _ends(s: bytes, mul: int, first_mul: int) -> tuple[int, int, int]:
    """What HashLen17to32 and HashLen33to64 share: (a, u, v) from the first 16 and last 16 bytes,
    u and v the two halves they mix with HashLen16."""
    n = len(s)
    a = (_fetch64(s, 0) * first_mul) & _MASK
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & _MASK
    d = (_fetch64(s, n - 16) * K2) & _MASK
    return a, (_rotate((a + b) & _MASK, 43) + _rotate(c, 30) + d) & _MASK, \
        (a + _rotate((b + K2) & _MASK, 18) + c) & _MASK


def _hash_len17to32(s: bytes) -> int:
    mul = K2 + len(s) * 2
    _, u, v = _ends(s, mul, K1)
    return _hash_len16(u, v, mul)


def _hash_len33to64(s: bytes) -> int:
    n = len(s)
    mul = K2 + n * 2
    a, y, v = _ends(s, mul, K2)
    z = _hash_len16(y, v, mul)
    e = (_fetch64(s, 16) * mul) & _MASK
    f = _fetch64(s, 24)
    g = ((y + _fetch64(s, n - 32)) * mul) & _MASK
    h = ((z + _fetch64(s, n - 24)) * mul) & _MASK
    return _hash_len16((_rotate((e + f) & _MASK, 43) + _rotate(g, 30) + h) & _MASK,
                       (e + _rotate((f + a) & _MASK, 18) + g) & _MASK, mul)


def _weak_hash_len32_with_seeds(s: bytes, i: int, a: int, b: int) -> tuple[int, int]:
    w, x, y, z = (_fetch64(s, i + k) for k in (0, 8, 16, 24))
    a = (a + w) & _MASK
    b = _rotate((b + a + z) & _MASK, 21)
    c = a
    a = (a + x + y) & _MASK
    b = (b + _rotate(a, 44)) & _MASK
    return (a + z) & _MASK, (b + c) & _MASK


def fingerprint64(s: bytes) -> int:
    """farmhashna::Hash64(s): TensorFlow's Fingerprint64, an unsigned 64-bit int."""
    n = len(s)
    if n <= 16:
        return _hash_len0to16(s)
    if n <= 32:
        return _hash_len17to32(s)
    if n <= 64:
        return _hash_len33to64(s)
    seed = 81
    x = seed
    y = (seed * K1 + 113) & _MASK
    z = (_shift_mix((y * K2 + 113) & _MASK) * K2) & _MASK
    v = (0, 0)
    w = (0, 0)
    x = (x * K2 + _fetch64(s, 0)) & _MASK
    end = ((n - 1) // 64) * 64
    last64 = end + ((n - 1) & 63) - 63
    i = 0
    while True:
        x = (_rotate((x + y + v[0] + _fetch64(s, i + 8)) & _MASK, 37) * K1) & _MASK
        y = (_rotate((y + v[1] + _fetch64(s, i + 48)) & _MASK, 42) * K1) & _MASK
        x ^= w[1]
        y = (y + v[0] + _fetch64(s, i + 40)) & _MASK
        z = (_rotate((z + w[0]) & _MASK, 33) * K1) & _MASK
        v = _weak_hash_len32_with_seeds(s, i, (v[1] * K1) & _MASK, (x + w[0]) & _MASK)
        w = _weak_hash_len32_with_seeds(s, i + 32, (z + w[1]) & _MASK, (y + _fetch64(s, i + 16)) & _MASK)
        z, x = x, z
        i += 64
        if i == end:
            break
    mul = K1 + ((z & 0xFF) << 1)
    i = last64
    w0 = (w[0] + ((n - 1) & 63)) & _MASK
    v0 = (v[0] + w0) & _MASK
    w0 = (w0 + v0) & _MASK
    v, w = (v0, v[1]), (w0, w[1])
    x = (_rotate((x + y + v[0] + _fetch64(s, i + 8)) & _MASK, 37) * mul) & _MASK
    y = (_rotate((y + v[1] + _fetch64(s, i + 48)) & _MASK, 42) * mul) & _MASK
    x ^= (w[1] * 9) & _MASK
    y = (y + v[0] * 9 + _fetch64(s, i + 40)) & _MASK
    z = (_rotate((z + w[0]) & _MASK, 33) * mul) & _MASK
    v = _weak_hash_len32_with_seeds(s, i, (v[1] * mul) & _MASK, (x + w[0]) & _MASK)
    w = _weak_hash_len32_with_seeds(s, i + 32, (z + w[1]) & _MASK, (y + _fetch64(s, i + 16)) & _MASK)
    z, x = x, z
    return _hash_len16((_hash_len16(v[0], w[0], mul) + _shift_mix(y) * K0 + z) & _MASK,
                       (_hash_len16(v[1], w[1], mul) + x) & _MASK, mul)
