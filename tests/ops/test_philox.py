"""hlobridge.ops.random.philox against TensorFlow's recorded random streams.

tests/data/philox_reference.npz is written by tools/make_philox_reference.py (TensorFlow
2.21, CPU). Uniform and integer streams must be bit-exact. The normal ones go through
log/sin/cos, which TensorFlow takes from glibc's logf/sincosf: those are not correctly
rounded, so about 1.5% of float32 values differ from ours by one ulp (measured max abs
difference 2.4e-7 over 4M values); float64 matched exactly.
"""

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from hlobridge.ops.random.philox import GuardedPhilox, PhiloxRandom, fill, sample

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "philox_reference.npz"
EXACT_OPS = ("RandomUniform", "RandomUniformInt")
# (rtol, atol) for the normal distributions: a float32 ulp, or one rounding step of the
# narrower types when that ulp moves a value across a rounding boundary.
TOLERANCE = {"float32": (1e-6, 1e-6), "float64": (1e-12, 1e-12),
             "float16": (1e-3, 1e-3), "bfloat16": (8e-3, 8e-3)}


def _load():
    data = np.load(REFERENCE)
    return data, json.loads(str(data["index"]))


DATA, META = _load()


def _case_id(c):
    shapes = "_".join("x".join(map(str, s)) or "scalar" for s in c["shapes"])
    return f"{c['op']}-{c['dtype']}-s{c['seed']}_{c['seed2']}-{shapes}"


def _reference(run, dtype):
    ref = DATA[run["key"]]
    return ref.view(ml_dtypes.bfloat16) if dtype == "bfloat16" else ref


def _check(op, dtype, got, ref):
    if op in EXACT_OPS:
        np.testing.assert_array_equal(got.view(f"u{got.dtype.itemsize}"),
                                      ref.view(f"u{ref.dtype.itemsize}"))
    else:
        rtol, atol = TOLERANCE[dtype]
        np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64), rtol=rtol, atol=atol)


@pytest.mark.parametrize("c", META["cases"], ids=_case_id)
def test_matches_tensorflow(c):
    """Each run of one node continues the stream, also when the shape changes between runs."""
    state = GuardedPhilox(c["seed"], c["seed2"])
    for shape, run in zip(c["shapes"], c["runs"], strict=True):
        got = state.sample(c["op"], shape, c["dtype"], minval=c["minval"], maxval=c["maxval"])
        assert got.shape == tuple(run["shape"])
        assert got.dtype == np.dtype(c["dtype"])
        flat = got.reshape(-1)
        idx_key = run["key"] + "_idx"
        if idx_key in DATA:  # large output: a stored subset plus sums of the whole
            flat = flat[DATA[idx_key]]
            rtol = 1e-12 if c["op"] in EXACT_OPS else TOLERANCE[c["dtype"]][0]
            wide = got.astype(np.float64)
            assert abs(wide.sum() - run["sum"]) <= rtol * run["abs_sum"]
            assert np.abs(wide).sum() == pytest.approx(run["abs_sum"], rel=rtol)
        _check(c["op"], c["dtype"], flat, _reference(run, c["dtype"]))
    if c["twin"]:
        assert c["twin_equal"], "TF: two nodes with the same seeds give the same values"


def test_reference_covers_the_ops():
    covered = {(c["op"], c["dtype"]) for c in META["cases"]}
    for op in ("RandomUniform", "RandomStandardNormal", "TruncatedNormal"):
        for dtype in ("float32", "float64", "float16", "bfloat16"):
            assert (op, dtype) in covered
    assert {("RandomUniformInt", "int32"), ("RandomUniformInt", "int64")} <= covered


def _words(*words):
    return sum(w << (32 * i) for i, w in enumerate(words))


@pytest.mark.parametrize("counter,key,expected", [
    # Known-answer tests of Philox4x32-10 (Random123's kat_vectors).
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
])
def test_philox_known_answers(counter, key, expected):
    gen = PhiloxRandom(_words(*key), _words(*counter))
    assert tuple(int(x) for x in gen.blocks(1)[0]) == expected


def test_blocks_follow_the_128_bit_counter():
    """Block i is philox(counter + i) with carries through all four words."""
    start = (1 << 128) - 2  # wraps to 0 after two blocks
    gen = PhiloxRandom(7, start)
    blocks = gen.blocks(4)
    for i in range(4):
        one = PhiloxRandom(7, (start + i) % (1 << 128)).blocks(1)[0]
        np.testing.assert_array_equal(blocks[i], one)
    np.testing.assert_array_equal(gen.skip(3).blocks(1)[0], blocks[3])


def test_skip_matches_tensorflow_word_arithmetic():
    gen = PhiloxRandom(0, _words(0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 5))
    assert gen.skip(1).counter == _words(0, 0, 0, 6)
    assert gen.skip(1 << 32).counter == _words(0xFFFFFFFF, 0, 0, 6)
    # TF's Skip drops the carry from the low word when the count's high word is all ones.
    assert PhiloxRandom(0, _words(1, 0, 0, 0)).skip(_words(0xFFFFFFFF, 0xFFFFFFFF)).counter == \
        _words(0, 0, 0, 0)


def test_seeds_map_to_key_and_counter():
    gen = PhiloxRandom.from_seeds(-1, 2**33 + 5)
    assert gen.key == (1 << 64) - 1
    assert gen.counter == _words(0, 0, 5, 2)


def test_functional_sample_carries_the_offset():
    state = GuardedPhilox(3, 4)
    first, offset = sample("TruncatedNormal", (3, 5), np.float32, 3, 4)
    assert offset == 15 * 256
    second, offset2 = sample("TruncatedNormal", (2,), np.float32, 3, 4, offset)
    assert offset2 == offset + 2 * 256
    np.testing.assert_array_equal(first, state.sample("TruncatedNormal", (3, 5)))
    np.testing.assert_array_equal(second, state.sample("TruncatedNormal", (2,)))
    assert state.offset == offset2


def test_reserve_returns_the_stream_before_the_skip():
    state = GuardedPhilox(9, 10)
    gen = state.reserve(7)
    assert gen == PhiloxRandom.from_seeds(9, 10)
    assert state.offset == 7 * 256
    assert state.reserve(1) == PhiloxRandom.from_seeds(9, 10).skip(7 * 256)


def test_unseeded_is_random_but_continues_its_stream():
    a, b = GuardedPhilox(0, 0), GuardedPhilox(0, 0)
    assert (a.seed, a.seed2) != (b.seed, b.seed2)
    first = a.sample("RandomUniform", (64,))
    again = GuardedPhilox(a.seed, a.seed2)
    np.testing.assert_array_equal(again.sample("RandomUniform", (64,)), first)
    assert not np.array_equal(a.sample("RandomUniform", (64,)), first)
    x, _ = sample("RandomUniform", (64,), np.float32, 0, 0)
    y, _ = sample("RandomUniform", (64,), np.float32, 0, 0)
    assert not np.array_equal(x, y)


@pytest.mark.parametrize("op", ["RandomUniform", "RandomStandardNormal", "TruncatedNormal"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16])
def test_shapes_and_ranges(op, dtype):
    gen = PhiloxRandom.from_seeds(1, 2)
    assert fill(op, gen, (), dtype).shape == ()
    assert fill(op, gen, (0, 3), dtype).shape == (0, 3)
    x = fill(op, gen, (4097,), dtype).astype(np.float64)
    assert np.isfinite(x).all()
    if op == "RandomUniform":
        assert x.min() >= 0 and x.max() < 1
    elif op == "TruncatedNormal":
        assert np.abs(x).max() <= 2


def test_uniform_int_ranges_and_errors():
    gen = PhiloxRandom.from_seeds(1, 2)
    x = fill("RandomUniformInt", gen, (1000,), np.int64, minval=-3, maxval=4)
    assert x.dtype == np.int64 and x.min() == -3 and x.max() == 3
    with pytest.raises(ValueError, match="minval < maxval"):
        fill("RandomUniformInt", gen, (2,), np.int32, minval=5, maxval=5)
    with pytest.raises(ValueError, match="unsupported random op"):
        fill("Multinomial", gen, (2,), np.float32)
    with pytest.raises(ValueError, match="unsupported dtype"):
        fill("RandomUniform", gen, (2,), np.int32)


def test_invalid_arguments_do_not_advance_the_stream():
    state = GuardedPhilox(1, 2)
    with pytest.raises(ValueError):
        state.sample("RandomUniformInt", (3,), np.int32, minval=2, maxval=1)
    assert state.offset == 0
