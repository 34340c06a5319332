"""Record TensorFlow's seeded random streams for tests/ops/test_philox.py.

Runs the stateful random ops (RandomUniform, RandomStandardNormal, TruncatedNormal,
RandomUniformInt) in a TF1 graph with explicit (seed, seed2) attrs. Every op is run
several times in one session, so the later runs record how the kernel's stream continues
(GuardedPhiloxRandom reserves num_elements * 256 blocks per run); the shape is fed per run,
so some cases change shape between runs. One case builds two nodes with the same seeds,
which in TensorFlow produce the same values (each kernel owns its generator).

Writes tests/data/philox_reference.npz: a JSON index under "index" (no pickle needed)
and, per run, either the whole output or, for large outputs, the values at stored indices
plus float64 sums of the whole output. bfloat16 values are stored as their uint16 bits.

TensorFlow is a development tool only; run with its separate environment:

    .tfvenv/bin/python tools/make_philox_reference.py [--out PATH]
"""

import os

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import argparse
import json
from pathlib import Path

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()
v1 = tf.compat.v1

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "tests" / "data" / "philox_reference.npz"
MAX_BYTES = 150 * 1024
FULL_LIMIT = 512  # outputs with more elements are stored as a subset


def subset_indices(n: int) -> np.ndarray:
    """Which flat indices of a large output to keep: both ends and a stride in between."""
    stride = max(1, n // 256)
    return np.unique(np.r_[np.arange(64), np.arange(n - 64, n), np.arange(0, n, stride)]).astype(np.int64)


def case(op, dtype, shapes, seed, seed2, minval=None, maxval=None, twin=False):
    return {"op": op, "dtype": dtype, "shapes": [list(s) for s in shapes], "seed": seed,
            "seed2": seed2, "minval": minval, "maxval": maxval, "twin": twin}


def build_cases():
    cases = []
    float_ops = ("RandomUniform", "RandomStandardNormal", "TruncatedNormal")
    # float32: the type that matters. Same shape twice (stream continuation) ...
    for op in float_ops:
        for seed, seed2 in ((1, 2), (87654321, 0)):
            for shape in ((7,), (3, 5), (1000,), (784, 10)):
                cases.append(case(op, "float32", [shape, shape], seed, seed2))
        # ... other seeds (seed == 0, negative and > 32-bit values) and a changing shape.
        for seed, seed2 in ((0, 5), (-1, 123456789012), (2**40 + 3, -(2**35))):
            cases.append(case(op, "float32", [(7,), (3, 5), (1,)], seed, seed2))
        cases.append(case(op, "float32", [(2, 3)], 42, 7, twin=True))
    # many rejection-sampling groups
    cases.append(case("TruncatedNormal", "float32", [(100000,), (5,)], 3, 4))
    cases.append(case("RandomStandardNormal", "float32", [(100000,)], 3, 4))
    # other float types
    for dtype in ("float64", "float16", "bfloat16"):
        for op in float_ops:
            cases.append(case(op, dtype, [(3, 5), (3, 5), (1000,)], 11, 12))
    # integers
    cases.append(case("RandomUniformInt", "int32", [(7,), (3, 5)], 5, 6, minval=-5, maxval=17))
    cases.append(case("RandomUniformInt", "int32", [(1000,)], 5, 6, minval=-2**31, maxval=2**31 - 1))
    cases.append(case("RandomUniformInt", "int64", [(7,), (3, 5)], 5, 6, minval=-10, maxval=10))
    cases.append(case("RandomUniformInt", "int64", [(1000,)], 5, 6, minval=-2**40, maxval=2**50 + 3))
    return cases


def make_op(c, shape_t):
    kw = {"seed": c["seed"], "seed2": c["seed2"]}
    if c["op"] == "RandomUniformInt":
        dt = tf.as_dtype(c["dtype"])
        return tf.raw_ops.RandomUniformInt(shape=shape_t, minval=tf.constant(c["minval"], dt),
                                           maxval=tf.constant(c["maxval"], dt), **kw)
    return getattr(tf.raw_ops, c["op"])(shape=shape_t, dtype=tf.as_dtype(c["dtype"]), **kw)


def storable(value: np.ndarray, dtype: str) -> np.ndarray:
    return value.view(np.uint16) if dtype == "bfloat16" else value


def record(c, index, arrays):
    graph = tf.Graph()
    with graph.as_default():
        shape_t = v1.placeholder(tf.int64, [None], name="shape")
        nodes = [make_op(c, shape_t)]
        if c["twin"]:
            nodes.append(make_op(c, shape_t))
    runs = []
    with v1.Session(graph=graph) as sess:
        for shape in c["shapes"]:
            runs.append(sess.run(nodes, {shape_t: shape}))
    entry = dict(c, runs=[])
    cid = len(index)
    for k, values in enumerate(runs):
        value = values[0]
        if c["twin"]:
            entry["twin_equal"] = bool(np.array_equal(storable(values[0], c["dtype"]),
                                                      storable(values[1], c["dtype"])))
        key = f"c{cid:03d}_r{k}"
        run = {"key": key, "shape": list(value.shape)}
        flat = value.reshape(-1)
        if flat.size > FULL_LIMIT:
            idx = subset_indices(flat.size)
            arrays[key + "_idx"] = idx
            flat = flat[idx]
            wide = value.astype(np.float64)
            run["sum"], run["abs_sum"] = float(wide.sum()), float(np.abs(wide).sum())
        arrays[key] = storable(np.ascontiguousarray(flat), c["dtype"])
        entry["runs"].append(run)
    index.append(entry)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    index, arrays = [], {}
    for c in build_cases():
        record(c, index, arrays)
    meta = {"tensorflow": tf.__version__, "full_limit": FULL_LIMIT, "cases": index}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, index=np.array(json.dumps(meta)), **arrays)
    size = args.out.stat().st_size
    print(f"wrote {args.out} ({len(index)} cases, {size / 1024:.1f} KiB)")
    if size > MAX_BYTES:
        raise SystemExit(f"{args.out} is over {MAX_BYTES} bytes: store fewer or smaller cases")


if __name__ == "__main__":
    main()
