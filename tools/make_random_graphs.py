#!/usr/bin/env python3
"""Write seeded random graphs with TensorFlow's results, for differential testing of hlobridge.

Three kinds, in the corpus format of ../shared/graphs (see its README.md), written by
tools/tf_corpus.py and checked by tests/e2e/test_random_differential.py:

- inference: a random DAG of ops hlobridge compiles (elementwise unary and binary with
  broadcasting, reductions over random axes, MatMul/BatchMatMul, reshape/transpose/concat/
  slice/gather/pad/tile, softmax, Conv2D/depthwise/pooling on small NHWC inputs, casts,
  comparisons and selects) on random small shapes (size-1 dimensions, sometimes an empty one)
  and dtypes (float32 mostly, some int32 and float64);
- control flow: a `tf.while_loop` or `tf.cond` with random bodies, in v1 form (Enter/Merge/Switch,
  control_flow_v2 disabled) or v2 form (StatelessWhile/StatelessIf), around random DAGs;
  each case also runs the loop zero times or takes the other branch;
- train: a random MLP or small conv stack on resource variables, a random loss, gradients by
  `tf.gradients` (directly, sometimes clipped, or through `minimize`) and one of
  GradientDescent, Momentum, Adam, RMSProp and Adagrad, trained a few steps by the corpus
  `train` protocol (TF's initial values are recorded and fed).

Case i of a run uses seed SEED+i, so a case is the same whichever run writes it:

    .tfvenv/bin/python tools/make_random_graphs.py --seed 0 --count 300 --out tests/random_graphs --compact
    .tfvenv/bin/python tools/make_random_graphs.py --seed 1000 --count 3000 --out /tmp/rg

Well-conditioned by construction and by a check: log, sqrt, division, pow and reciprocal see
positive arguments, exp a clipped one, and an inference case is kept only if TensorFlow's own
outputs move by less than the case's tolerance when every float feed is perturbed by 1e-6
relative (twice, with different perturbations); otherwise the case is drawn again from the
next stream of its seed. That leaves out graphs where float rounding alone (a different
summation order, a 1-ulp exp) decides a floor, a comparison or an argmax, or where cancellation
amplifies it beyond the tolerance.

`--compact` (used for the committed cases) drops graph.pbtxt, ops.json and case.json's protocol
texts, and gzips graph.pb: case.json then says "graph_pbtxt": null, "graph_pb": "graph.pb.gz".
"""

import argparse
import gzip
import json
import sys
import warnings
from pathlib import Path

import numpy as np

# tf_corpus sets the reference environment before it imports TensorFlow: import it first.
from tf_corpus import GRAPH_SEED, run_graph_def, session, write_case

import tensorflow as tf
from conformance_cases.models import train_builder
from conformance_cases.registry import (TOL_ELEMENTWISE, TOL_MODEL, TOL_SUMS, TOL_TRAIN, STYLE_V1,
                                        STYLE_V1_CF1, CaseDef, v1_graph)
from make_conformance_corpus import run_inference

v1 = tf.compat.v1
warnings.filterwarnings("ignore")

MAX_ELEMENTS = 512          # no intermediate tensor is larger
CASE_MAX_BYTES = 160 * 1024  # any one file of a case (graph.pb before --compact gzips it)
KINDS = (("inference", 0.50), ("control_flow", 0.22), ("train", 0.28))


class Reject(Exception):
    """This draw does not make a good case (shapes that do not fit, ill-conditioned results)."""


# ============================================================================================
# random DAGs


class Dag:
    """A random DAG under construction: a pool of tensors (with static shapes) to draw operands
    from, the placeholders with their values, and what was built (for the description)."""

    def __init__(self, rng, allow_empty=False, dtypes=("float32",)):
        self.rng = rng
        self.allow_empty = allow_empty
        self.pool = []
        self.inputs = {}       # placeholder tensor -> value of run 0
        self.ops = []
        self.dtypes = dtypes
        self.in_body = False   # inside a loop body or branch: no new placeholders

    # -- drawing ---------------------------------------------------------------------------
    def choice(self, seq):
        return seq[self.rng.integers(len(seq))]

    def chance(self, p):
        return self.rng.random() < p

    def shape(self, rank=None, max_dim=5):
        rank = self.choice([0, 1, 1, 2, 2, 2, 3, 3, 4]) if rank is None else rank
        dims = [int(self.rng.integers(1, max_dim + 1)) for _ in range(rank)]
        if self.allow_empty and dims and self.chance(0.3):
            dims[self.rng.integers(len(dims))] = 0
        return dims

    def value(self, shape, dtype):
        if dtype == "int32":
            return self.rng.integers(-4, 5, size=shape).astype(np.int32)
        return self.rng.standard_normal(shape).astype(dtype)

    def input(self, shape, dtype="float32"):
        t = v1.placeholder(dtype, shape, name=f"in{len(self.inputs)}")
        self.inputs[t] = self.value(shape, dtype)
        self.pool.append(t)
        return t

    def const(self, shape, dtype="float32", scale=1.0):
        v = self.value(shape, dtype)
        if dtype != "int32":
            v = (v * scale).astype(dtype)
        return tf.constant(v)

    def operand(self, shape, dtype):
        """A tensor of `shape` and `dtype`: one from the pool, else a new input or constant."""
        fits = [t for t in self.pool if t.shape.as_list() == list(shape) and t.dtype.name == dtype]
        if fits and self.chance(0.6):
            return self.choice(fits)
        new_input = self.chance(0.5) and not self.in_body
        return self.input(shape, dtype) if new_input else self.const(shape, dtype)

    def broadcastable(self, shape):
        """A shape that broadcasts against `shape`: some dims 1, maybe fewer leading dims."""
        s = [1 if self.chance(0.3) else d for d in shape]
        if s and self.chance(0.3):
            s = s[self.rng.integers(len(s) + 1):]
        return s

    # -- building --------------------------------------------------------------------------
    def add(self, t, what):
        shape = t.shape.as_list()
        if None in shape or int(np.prod(shape)) > MAX_ELEMENTS or (0 in shape and not self.allow_empty):
            raise Reject(f"{what}: shape {shape}")
        self.pool.append(t)
        self.ops.append(what)
        return t

    def grow(self, n_ops, families=None):
        families = families or FAMILIES
        for _ in range(n_ops * 4):
            if len(self.ops) >= n_ops:
                break
            fam = self.choice(families)
            t = self.pick(fam)
            if t is None:
                continue
            try:
                fam(self, t)
            except Reject:
                continue

    def pick(self, family):
        # Prefer recent tensors, so that graphs get deep rather than wide.
        ok = [t for t in self.pool if t.dtype.name in ("float32", "float64", "int32")
              and FAMILY_ACCEPTS.get(family, _any)(t)]
        if not ok:
            return None
        weights = np.arange(1, len(ok) + 1, dtype=float) ** 2
        return ok[self.rng.choice(len(ok), p=weights / weights.sum())]

    def outputs(self, k_max=3):
        """Fetches: the newest tensor and up to k_max-1 others, each through an Identity."""
        built = [t for t in self.pool if t.op.type != "Placeholder"]
        if not built:
            raise Reject("nothing built")
        chosen = [built[-1]]
        others = [t for t in built[:-1] if t is not built[-1]]
        for _ in range(int(self.rng.integers(0, k_max))):
            if others:
                t = self.choice(others)
                if all(t is not c for c in chosen):
                    chosen.append(t)
        return [tf.identity(t, name=f"out{i}") for i, t in enumerate(chosen)]


def _any(t):
    return True


def _float(t):
    return t.dtype.is_floating


def _rank(lo, hi=9, floating=True):
    return lambda t: (not floating or t.dtype.is_floating) and lo <= t.shape.rank <= hi


def _size(t):
    return int(np.prod(t.shape.as_list()))


def _pos(x):
    return tf.abs(x) + 0.5


F32_UNARY = {
    "abs": tf.abs, "neg": tf.negative, "square": tf.square, "tanh": tf.tanh, "sigmoid": tf.sigmoid,
    "relu": tf.nn.relu, "relu6": tf.nn.relu6, "elu": tf.nn.elu, "selu": tf.nn.selu,
    "softplus": tf.nn.softplus, "softsign": tf.nn.softsign, "sin": tf.sin, "cos": tf.cos,
    "exp": lambda x: tf.exp(tf.clip_by_value(x, -4.0, 4.0)), "log": lambda x: tf.math.log(_pos(x)),
    "sqrt": lambda x: tf.sqrt(tf.abs(x)), "rsqrt": lambda x: tf.math.rsqrt(_pos(x)),
    "reciprocal": lambda x: tf.math.reciprocal(_pos(x)), "floor": tf.floor, "ceil": tf.math.ceil,
    "round": tf.round, "sign": tf.sign, "erf": tf.math.erf, "leaky_relu": tf.nn.leaky_relu,
    "log1p": lambda x: tf.math.log1p(tf.abs(x)), "expm1": lambda x: tf.math.expm1(tf.clip_by_value(x, -3.0, 3.0)),
    "atan": tf.atan, "sinh": lambda x: tf.sinh(tf.clip_by_value(x, -3.0, 3.0)),
}
# float64: what hlobridge declares for it (llvm-cpu links no libm: no tanh, sin, cos, atan)
F64_UNARY = ("abs neg square sigmoid relu relu6 elu selu softplus softsign exp log sqrt rsqrt reciprocal "
             "floor ceil round sign erf leaky_relu log1p expm1 sinh").split()
INT_UNARY = {"abs": tf.abs, "neg": tf.negative, "square": tf.square, "sign": tf.sign}

F_BINARY = {
    "add": tf.add, "sub": tf.subtract, "mul": tf.multiply, "maximum": tf.maximum, "minimum": tf.minimum,
    "div": lambda a, b: a / _pos(b), "squared_difference": tf.math.squared_difference,
    "pow": lambda a, b: tf.pow(_pos(a), tf.clip_by_value(b, -2.0, 2.0)),
    "atan2": tf.atan2, "addn": lambda a, b: tf.add_n([a, tf.broadcast_to(b, tf.shape(a)), a]),
    "floordiv": lambda a, b: tf.math.floordiv(a, _pos(b)),
}
F64_BINARY = "add sub mul maximum minimum div squared_difference pow floordiv".split()
INT_BINARY = {
    "add": tf.add, "sub": tf.subtract, "mul": tf.multiply, "maximum": tf.maximum, "minimum": tf.minimum,
    "floordiv": lambda a, b: tf.math.floordiv(a, tf.abs(b) + 1),
    "floormod": lambda a, b: tf.math.floormod(a, tf.abs(b) + 1),
}


def unary(g, t):
    dt = t.dtype.name
    if dt == "int32":
        name = g.choice(sorted(INT_UNARY))
        return g.add(INT_UNARY[name](t), name)
    name = g.choice(sorted(F32_UNARY) if dt == "float32" else F64_UNARY)
    return g.add(F32_UNARY[name](t), name)


def binary(g, t):
    dt = t.dtype.name
    table = INT_BINARY if dt == "int32" else F_BINARY
    names = sorted(INT_BINARY) if dt == "int32" else sorted(F_BINARY) if dt == "float32" else F64_BINARY
    name = g.choice(names)
    other = g.operand(g.broadcastable(t.shape.as_list()), dt)
    a, b = (t, other) if name == "addn" or g.chance(0.7) else (other, t)
    return g.add(table[name](a, b), f"{name}{'(bcast)' if a.shape != b.shape else ''}")


def reduction(g, t):
    rank = t.shape.rank
    axes = None if g.chance(0.2) else sorted(g.rng.choice(rank, int(g.rng.integers(1, rank + 1)), replace=False).tolist())
    keep = bool(g.chance(0.4))
    ops = {"sum": tf.reduce_sum, "max": tf.reduce_max, "min": tf.reduce_min}
    if t.dtype.is_floating:
        ops.update({"mean": tf.reduce_mean, "prod": lambda x, **k: tf.reduce_prod(tf.tanh(x) + 1.0, **k),
                    "logsumexp": tf.reduce_logsumexp, "euclidean_norm": tf.math.reduce_euclidean_norm})
        if t.dtype.name != "float32":
            del ops["logsumexp"]
    name = g.choice(sorted(ops))
    if name in ("max", "min", "logsumexp") and 0 in t.shape.as_list():
        raise Reject("max of an empty set")  # +-inf identities: not generated (see docs/testing.md)
    if g.chance(0.15) and rank >= 1:
        axis = int(g.rng.integers(rank))
        if t.shape[axis] == 0:
            raise Reject("argmax of an empty axis")
        fn = tf.argmax if g.chance(0.5) else tf.argmin
        return g.add(fn(t, axis=axis, output_type=g.choice([tf.int32, tf.int64])), f"{fn.__name__}(axis={axis})")
    return g.add(ops[name](t, axis=axes, keepdims=keep), f"reduce_{name}(axes={axes}, keepdims={keep})")


def matmul(g, t):
    if t.shape.rank == 2:
        ta, tb = bool(g.chance(0.3)), bool(g.chance(0.3))
        k = t.shape[0] if ta else t.shape[1]
        n = int(g.rng.integers(1, 6))
        b = g.const([n, k] if tb else [k, n], t.dtype.name, scale=1 / np.sqrt(max(k, 1)))
        return g.add(tf.matmul(t, b, transpose_a=ta, transpose_b=tb), f"matmul(ta={ta}, tb={tb})")
    ax, ay = bool(g.chance(0.3)), bool(g.chance(0.3))
    shape = t.shape.as_list()
    k = shape[-2] if ax else shape[-1]
    n = int(g.rng.integers(1, 5))
    batch = g.broadcastable(shape[:-2])
    b = g.const(batch + ([n, k] if ay else [k, n]), t.dtype.name, scale=1 / np.sqrt(max(k, 1)))
    return g.add(tf.linalg.matmul(t, b, adjoint_a=ax, adjoint_b=ay), f"batch_matmul(adj_x={ax}, adj_y={ay}, b={b.shape})")


def reshape(g, t):
    shape = t.shape.as_list()
    n = _size(t)
    if n == 0:
        new = shape[::-1] if g.chance(0.5) else [0, int(np.prod([d for d in shape if d] or [1]))]
        return g.add(tf.reshape(t, new), f"reshape({new})")
    factors = [p for p in _prime_factors(n)]
    g.rng.shuffle(factors)
    rank = int(g.rng.integers(1, 5))
    dims = [1] * rank
    for f in factors:
        dims[g.rng.integers(rank)] *= f
    if g.chance(0.3):
        dims[g.rng.integers(rank)] = -1
    return g.add(tf.reshape(t, dims), f"reshape({dims})")


def _prime_factors(n):
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


def transpose(g, t):
    perm = g.rng.permutation(t.shape.rank).tolist()
    return g.add(tf.transpose(t, perm), f"transpose({perm})")


def concat(g, t):
    rank = t.shape.rank
    axis = int(g.rng.integers(rank))
    shape = t.shape.as_list()
    pieces = [t]
    for _ in range(int(g.rng.integers(1, 3))):
        s = list(shape)
        s[axis] = int(g.rng.integers(0 if g.allow_empty else 1, 4))
        pieces.append(g.operand(s, t.dtype.name))
    g.rng.shuffle(pieces)
    if g.chance(0.3):
        return g.add(tf.stack([t, g.operand(shape, t.dtype.name)], axis=int(g.rng.integers(rank + 1))), "stack")
    return g.add(tf.concat(pieces, axis=axis - rank if g.chance(0.3) else axis), f"concat(axis={axis}, n={len(pieces)})")


def slice_(g, t):
    shape = t.shape.as_list()
    if g.chance(0.4):
        begin = [int(g.rng.integers(0, d + 1)) for d in shape]
        size = [int(g.rng.integers(0 if g.allow_empty else min(1, d - b), d - b + 1)) if g.chance(0.7) else -1
                for d, b in zip(shape, begin)]
        return g.add(tf.slice(t, begin, size), f"slice({begin}, {size})")
    index = []
    for d in shape:
        r = g.rng.random()
        if r < 0.3:
            index.append(slice(None))
        elif r < 0.45 and d > 0:
            index.append(int(g.rng.integers(-d, d)))
        else:
            step = g.choice([1, 1, 2, -1, -2])
            a, b = (int(x) for x in g.rng.integers(-d - 1, d + 2, size=2))
            index.append(slice(a, b, step))
    if g.chance(0.2):
        index.insert(int(g.rng.integers(len(index) + 1)), tf.newaxis)
    return g.add(t[tuple(index)], f"strided_slice({index})")


def gather(g, t):
    shape = t.shape.as_list()
    axis = int(g.rng.integers(len(shape)))
    if shape[axis] == 0:
        raise Reject("gather from an empty axis")
    ishape = g.shape(rank=int(g.rng.integers(0, 3)), max_dim=4)
    idx = tf.constant(g.rng.integers(0, shape[axis], size=ishape).astype(g.choice([np.int32, np.int64])))
    return g.add(tf.gather(t, idx, axis=axis), f"gather(axis={axis}, indices={ishape})")


def pad_tile(g, t):
    rank = t.shape.rank
    r = g.rng.random()
    if r < 0.4:
        pads = g.rng.integers(0, 3, size=(rank, 2)).tolist()
        mode = g.choice(["CONSTANT", "CONSTANT", "REFLECT", "SYMMETRIC"])
        if mode != "CONSTANT":
            limit = [d - (mode == "REFLECT") for d in t.shape.as_list()]
            pads = [[min(a, m), min(b, m)] for (a, b), m in zip(pads, limit)]
            if min(limit) < 0:
                raise Reject("mirror pad of an empty dim")
        return g.add(tf.pad(t, pads, mode=mode, constant_values=0 if mode != "CONSTANT" else 1.5 if t.dtype.is_floating else 2),
                     f"pad({pads}, {mode})")
    if r < 0.7:
        mult = g.rng.integers(1, 3, size=rank).tolist()
        return g.add(tf.tile(t, mult), f"tile({mult})")
    if r < 0.85:
        axis = int(g.rng.integers(-rank - 1, rank + 1))
        return g.add(tf.expand_dims(t, axis), f"expand_dims({axis})")
    ones = [i for i, d in enumerate(t.shape.as_list()) if d == 1]
    if not ones:
        return g.add(tf.reverse(t, [int(g.rng.integers(rank))]), "reverse")
    return g.add(tf.squeeze(t, [g.choice(ones)] if g.chance(0.5) else None), "squeeze")


def softmax(g, t):
    if t.shape[-1] == 0:
        raise Reject("softmax over an empty axis")
    fn = g.choice([tf.nn.softmax, tf.nn.log_softmax])
    if t.shape.rank >= 2 and g.chance(0.3):
        return g.add(fn(t, axis=0), f"{fn.__name__}(axis=0)")
    return g.add(fn(t), fn.__name__)


def conv(g, t):
    n, h, w, c = t.shape.as_list()
    if 0 in (h, w, c):
        raise Reject("conv on an empty image")
    r = g.rng.random()
    stride = int(g.choice([1, 1, 2]))
    padding = g.choice(["SAME", "VALID"])
    kh, kw = int(g.rng.integers(1, min(h, 3) + 1)), int(g.rng.integers(1, min(w, 3) + 1))
    if r < 0.45:
        cout = int(g.rng.integers(1, 5))
        f = g.const([kh, kw, c, cout], t.dtype.name, scale=1 / np.sqrt(kh * kw * c))
        dil = 1 if stride > 1 or g.chance(0.7) else 2
        if padding == "VALID" and (dil * (kh - 1) + 1 > h or dil * (kw - 1) + 1 > w):
            dil = 1
        return g.add(tf.nn.conv2d(t, f, stride, padding, dilations=dil), f"conv2d(k={kh}x{kw}, s={stride}, {padding}, d={dil})")
    if r < 0.6:
        f = g.const([kh, kw, c, int(g.rng.integers(1, 3))], t.dtype.name, scale=1 / np.sqrt(kh * kw))
        return g.add(tf.nn.depthwise_conv2d(t, f, [1, stride, stride, 1], padding), f"depthwise(k={kh}x{kw}, s={stride}, {padding})")
    fn = g.choice([tf.nn.max_pool2d, tf.nn.avg_pool2d])
    return g.add(fn(t, [kh, kw], stride, padding), f"{fn.__name__}(k={kh}x{kw}, s={stride}, {padding})")


def bias_add(g, t):
    b = g.const([t.shape[-1]], t.dtype.name)
    return g.add(tf.nn.bias_add(t, b), "bias_add")


def cast(g, t):
    dt = t.dtype.name
    if dt == "int32":
        return g.add(tf.cast(t, g.choice([tf.float32, tf.float32, tf.float64])), "cast(int32->float)")
    if dt == "float64":
        return g.add(tf.cast(t, tf.float32), "cast(float64->float32)")
    if g.chance(0.4):
        return g.add(tf.cast(t * 3.0, tf.int32), "cast(3x float32->int32)")
    if "float64" in g.dtypes and g.chance(0.5):
        return g.add(tf.cast(t, tf.float64), "cast(float32->float64)")
    return g.add(tf.cast(tf.cast(t, tf.bool), tf.float32), "cast(float32->bool->float32)")


def select(g, t):
    shape = t.shape.as_list()
    other = g.operand(g.broadcastable(shape), t.dtype.name)
    cmp = g.choice([tf.greater, tf.less, tf.greater_equal, tf.less_equal, tf.equal, tf.not_equal])
    pred = cmp(t, other)
    if g.chance(0.3):
        pred = g.choice([tf.logical_and, tf.logical_or, tf.math.logical_xor])(pred, tf.logical_not(pred[..., :1] if pred.shape.rank else pred))
    if g.chance(0.3) and pred.shape.as_list() == shape:
        return g.add(v1.where(pred, t, g.operand(shape, t.dtype.name)), f"select({cmp.__name__})")
    y = g.operand(g.broadcastable(shape), t.dtype.name)
    return g.add(tf.where(pred, t, y), f"select_v2({cmp.__name__})")


FAMILIES = [unary, unary, unary, binary, binary, binary, reduction, reduction, matmul, reshape, transpose,
            concat, slice_, gather, pad_tile, softmax, conv, bias_add, cast, select]
FAMILY_ACCEPTS = {
    unary: _any, binary: _any, reduction: _rank(1, 9, floating=False), matmul: _rank(2, 4),
    reshape: _any, transpose: _rank(2, 9, floating=False), concat: _rank(1, 9, floating=False),
    slice_: _rank(1, 9, floating=False), gather: _rank(1, 9, floating=False),
    pad_tile: _rank(1, 9, floating=False), softmax: _rank(1, 4), conv: lambda t: _float(t) and t.shape.rank == 4,
    bias_add: _rank(2, 4), cast: _any, select: _any,
}
# Shape-preserving families, for loop bodies.
BODY_FAMILIES = [unary, unary, binary, binary, select]


def dag_inputs(g):
    """One to three inputs; an NHWC image input in a quarter of the graphs."""
    dt = g.dtypes[0]
    if g.chance(0.25) and dt != "int32":
        g.input([int(g.rng.integers(1, 3)), int(g.rng.integers(1, 7)), int(g.rng.integers(1, 7)),
                 int(g.rng.integers(1, 4))], dt)
    for _ in range(int(g.rng.integers(1, 3))):
        g.input(g.shape(), dt)


def inference_graph(rng):
    """A random DAG: (fetches, runs, description)."""
    r = rng.random()
    dtypes = ("float32",) if r < 0.7 else ("int32", "float32") if r < 0.85 else ("float64", "float32")
    g = Dag(rng, allow_empty=rng.random() < 0.1, dtypes=dtypes)
    dag_inputs(g)
    g.grow(int(rng.integers(3, 11)))
    fetches = g.outputs()
    return g, fetches, [("run0", dict(g.inputs)), ("run1", {t: g.value(v.shape, v.dtype.name) for t, v in g.inputs.items()})]


# ============================================================================================
# control flow


def body_chain(g, x, n_ops):
    """A random shape- and dtype-preserving chain on x, operands drawn from the pool (which
    holds what the body may capture). Bounded: ends in tanh or a scaled sum."""
    sub = Dag(g.rng, dtypes=g.dtypes)
    sub.in_body = True
    sub.pool = list(g.pool) + [x]
    sub.inputs = g.inputs
    start = len(sub.ops)
    for _ in range(n_ops * 4):
        if len(sub.ops) - start >= n_ops:
            break
        cur = sub.pool[-1]
        try:
            y = sub.choice(BODY_FAMILIES)(sub, cur)
        except Reject:
            continue
        if y.shape.as_list() != x.shape.as_list() or y.dtype != x.dtype:
            sub.pool.pop()
            sub.ops.pop()
    y = sub.pool[-1] if len(sub.ops) > start else x
    if y.dtype.is_floating:
        y = tf.tanh(y) if g.chance(0.5) else 0.5 * y + 0.25
    else:
        y = tf.math.floormod(y + 1, 7)
    g.ops += sub.ops
    return y


def control_flow_graph(rng, v1_style):
    dtypes = ("float32",) if rng.random() < 0.85 else ("int32",)
    g = Dag(rng, dtypes=dtypes)
    dag_inputs(g)
    g.grow(int(rng.integers(0, 4)))
    x = g.pick(_any)
    if x.shape.rank == 4 and x.dtype.is_floating and g.chance(0.5):
        x = g.add(tf.reduce_mean(x, axis=[1, 2]), "reduce_mean(hw)")
    runs_extra = []
    if g.chance(0.55):
        n = v1.placeholder(tf.int32, [], name="n")
        i0 = tf.constant(0)
        carried = [x]
        if g.chance(0.5):  # a second loop variable, updated from the first
            carried.append(tf.zeros_like(x))

        def cond(i, *vs):
            return i < n

        def body(i, *vs):
            y = body_chain(g, vs[0], int(g.rng.integers(1, 4)))
            if len(vs) > 1:
                return [i + 1, y, vs[1] + y]
            return [i + 1, y]

        if g.chance(0.3):
            inner = body

            def body(i, *vs):  # noqa: F811  a cond inside the loop body
                out = inner(i, *vs)
                nxt = tf.cond(tf.equal(tf.math.floormod(i, 2), 0), lambda: out[1], lambda: vs[0])
                return [out[0], nxt, *out[2:]]
            g.ops.append("cond in body")
        res = tf.while_loop(cond, body, [i0, *carried], maximum_iterations=None if g.chance(0.6) else 6)
        g.ops.append(f"while_loop({len(carried)} vars)")
        for r in res[1:]:
            g.add(r, "loop output")
        g.inputs[n] = np.int32(rng.integers(1, 5))
        runs_extra = [("zero_trip", {n: np.int32(0)}), ("more", {n: np.int32(rng.integers(5, 8))})]
    else:
        p = v1.placeholder(tf.bool, [], name="p")
        if g.chance(0.4) and x.dtype.is_floating:
            pred = tf.math.logical_xor(p, tf.reduce_sum(x) > 0.0)
        else:
            pred = p
        res = tf.cond(pred, lambda: body_chain(g, x, int(g.rng.integers(1, 4))),
                      lambda: body_chain(g, x, int(g.rng.integers(0, 3))))
        g.ops.append("cond")
        g.add(res, "cond output")
        g.inputs[p] = np.bool_(True)
        runs_extra = [("other_branch", {p: np.bool_(False)})]
    g.grow(len(g.ops) + int(rng.integers(0, 3)))
    fetches = g.outputs()
    runs = [("run0", dict(g.inputs))] + [(name, {**g.inputs, **over}) for name, over in runs_extra]
    return g, fetches, runs


# ============================================================================================
# training


ACTIVATIONS = {"relu": tf.nn.relu, "tanh": tf.tanh, "sigmoid": tf.sigmoid, "elu": tf.nn.elu,
               "softplus": tf.nn.softplus, "leaky_relu": tf.nn.leaky_relu, "none": tf.identity}


def optimizer(rng):
    r = int(rng.integers(5))
    if r == 0:
        lr = float(rng.choice([0.05, 0.1, 0.2]))
        return v1.train.GradientDescentOptimizer(lr), {"optimizer": "GradientDescent", "learning_rate": lr}
    if r == 1:
        lr, nesterov = float(rng.choice([0.02, 0.05])), bool(rng.random() < 0.5)
        return v1.train.MomentumOptimizer(lr, 0.9, use_nesterov=nesterov), \
            {"optimizer": "Momentum", "learning_rate": lr, "momentum": 0.9, "nesterov": nesterov}
    if r == 2:
        lr = float(rng.choice([0.01, 0.03]))
        return v1.train.AdamOptimizer(lr), {"optimizer": "Adam", "learning_rate": lr}
    if r == 3:
        lr, mom, centered = float(rng.choice([0.005, 0.01])), float(rng.choice([0.0, 0.5])), bool(rng.random() < 0.5)
        return v1.train.RMSPropOptimizer(lr, decay=0.9, momentum=mom, centered=centered), \
            {"optimizer": "RMSProp", "learning_rate": lr, "momentum": mom, "centered": centered}
    lr = float(rng.choice([0.05, 0.1]))
    return v1.train.AdagradOptimizer(lr), {"optimizer": "Adagrad", "learning_rate": lr}


def train_spec(rng):
    """A random model and training setup: (build_graph, pool_fn, batch, steps, hyper, description)."""
    conv_net = rng.random() < 0.35
    n_classes = int(rng.integers(2, 5))
    loss_kind = str(rng.choice(["mse", "softmax_xent", "sparse_softmax_xent", "sigmoid_xent", "huber"]))
    steps, batch, pool_n = int(rng.integers(3, 7)), int(rng.integers(2, 7)), 16
    if conv_net:
        in_shape = [int(rng.integers(4, 8)), int(rng.integers(4, 8)), int(rng.integers(1, 4))]
        layers = [(int(rng.integers(1, 4)), int(rng.integers(2, 5)), int(rng.choice([1, 2])),
                   str(rng.choice(["SAME", "VALID"])), str(rng.choice(["relu", "tanh", "elu", "none"])),
                   str(rng.choice(["max", "avg", "none"]))) for _ in range(int(rng.integers(1, 3)))]
    else:
        in_shape = [int(rng.integers(2, 7))]
        layers = [(int(rng.integers(2, 9)), str(rng.choice(sorted(ACTIVATIONS))))
                  for _ in range(int(rng.integers(0, 3)))]
    explicit = int(rng.integers(3))  # 0: minimize, 1: tf.gradients + apply_gradients, 2: clipped
    hyper_seed = int(rng.integers(1 << 30))
    desc = []

    def build_graph():
        orng = np.random.default_rng(hyper_seed)
        x = v1.placeholder(tf.float32, [None, *in_shape], name="x")
        sparse = loss_kind == "sparse_softmax_xent"
        y_ = v1.placeholder(tf.int32 if sparse else tf.float32, [None] if sparse else [None, n_classes], name="y")
        h = x
        with v1.variable_scope("model", use_resource=True):
            if conv_net:
                for i, (k, cout, stride, pad, act, pool) in enumerate(layers):
                    k = min(k, h.shape[1], h.shape[2]) if pad == "VALID" else k
                    w = v1.get_variable(f"conv{i}/w", [k, k, h.shape[-1], cout])
                    b = v1.get_variable(f"conv{i}/b", [cout], initializer=v1.constant_initializer(0.01))
                    h = ACTIVATIONS[act](tf.nn.bias_add(tf.nn.conv2d(h, w, stride, pad), b))
                    if pool != "none" and h.shape[1] >= 2 and h.shape[2] >= 2:
                        h = (tf.nn.max_pool2d if pool == "max" else tf.nn.avg_pool2d)(h, 2, 2, "VALID")
                    desc.append(f"conv{k}x{k}/{stride} {pad} {cout}ch {act} {pool}pool")
                h = tf.reshape(h, [-1, int(np.prod(h.shape.as_list()[1:]))])
            else:
                for i, (width, act) in enumerate(layers):
                    w = v1.get_variable(f"dense{i}/w", [h.shape[-1], width])
                    b = v1.get_variable(f"dense{i}/b", [width], initializer=v1.zeros_initializer())
                    h = ACTIVATIONS[act](tf.matmul(h, w) + b)
                    desc.append(f"dense {width} {act}")
            w = v1.get_variable("out/w", [h.shape[-1], n_classes])
            b = v1.get_variable("out/b", [n_classes], initializer=v1.zeros_initializer())
            logits = tf.nn.bias_add(tf.matmul(h, w), b)
        if loss_kind == "mse":
            loss = tf.reduce_mean(tf.square(logits - y_))
        elif loss_kind == "huber":
            loss = v1.losses.huber_loss(y_, logits)
        elif loss_kind == "softmax_xent":
            loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=logits))
        elif loss_kind == "sparse_softmax_xent":
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y_, logits=logits))
        else:
            loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y_, logits=logits))
        loss = tf.identity(loss, name="loss")
        opt, hyper = optimizer(orng)
        desc.append(f"{loss_kind} loss, {hyper['optimizer']}")
        params = v1.trainable_variables()
        if explicit == 0:
            train = opt.minimize(loss, name="train")
        else:
            grads = tf.gradients(loss, params)
            if explicit == 2:
                grads, _ = tf.clip_by_global_norm(grads, 1.0)
                desc.append("clip_by_global_norm")
            train = opt.apply_gradients(zip(grads, params), name="train")
        build_graph.hyper = hyper
        return x, y_, loss, train, v1.global_variables_initializer(), [logits]

    def pool_fn(prng):
        x = prng.standard_normal([pool_n, *in_shape]).astype(np.float32)
        if loss_kind == "sparse_softmax_xent":
            y = prng.integers(0, n_classes, pool_n).astype(np.int32)
        elif loss_kind == "softmax_xent":
            y = np.eye(n_classes, dtype=np.float32)[prng.integers(0, n_classes, pool_n)]
        elif loss_kind == "sigmoid_xent":
            y = (prng.random([pool_n, n_classes]) < 0.5).astype(np.float32)
        else:
            y = prng.standard_normal([pool_n, n_classes]).astype(np.float32)
        return x, y

    return build_graph, pool_fn, batch, steps, desc, ("conv" if conv_net else "mlp")


# ============================================================================================
# cases


def pick_kind(rng):
    r, acc = rng.random(), 0.0
    for kind, p in KINDS:
        acc += p
        if r < acc:
            return kind
    return KINDS[-1][0]


def inference_tolerance(ops):
    deep = len(ops) > 5
    sums = any(o.split("(")[0] in SUM_OPS for o in ops)
    return TOL_MODEL if deep and sums else TOL_SUMS if sums else TOL_ELEMENTWISE


SUM_OPS = {"matmul", "batch_matmul", "conv2d", "depthwise", "avg_pool2d", "reduce_sum", "reduce_mean", "reduce_prod",
           "reduce_logsumexp", "reduce_euclidean_norm", "softmax", "log_softmax", "addn", "while_loop"}


def build_case(seed):
    """(name, family, graph_def, case.json, arrays) of case `seed`: drawn again (from the same
    seed's next stream) until TF accepts and the result is well-conditioned."""
    # The kind depends on the seed only. (Streams are keyed apart: default_rng(s) and
    # default_rng([s, 0]) are the same stream.)
    kind = pick_kind(np.random.default_rng([seed, 1 << 20]))
    for attempt in range(50):
        rng = np.random.default_rng([seed, attempt + 1])
        try:
            return _build(seed, rng, kind)
        except (Reject, ValueError, TypeError, tf.errors.OpError) as e:  # noqa: PERF203
            last = e
    raise RuntimeError(f"seed {seed}: no acceptable case in 50 attempts: {last}")


def _build(seed, rng, kind):
    if kind == "train":
        build_graph, pool_fn, batch, steps, desc, family = train_spec(rng)
        name = f"rg{seed:06d}_train_{family}"
        defn = CaseDef(name, f"train_{family}", "", "tf.compat.v1 graph mode, resource variables", TOL_TRAIN, None, "train")
        build = train_builder(build_graph, steps, pool_fn, batch, {})
        graph_def, case_json, arrays = build(defn, rng)
        losses = arrays["expected/loss_per_step"]
        if not np.all(np.isfinite(losses)) or losses.max() > 1e3:
            raise Reject(f"loss {losses}")
        case_json["hyperparameters"].update(build_graph.hyper)
        case_json["description"] = f"random {family}: " + "; ".join(desc) + f"; {steps} steps, batch {batch}"
        case_json["family"] = f"train_{family}"
        return name, graph_def, case_json, arrays
    v1_style = kind == "control_flow" and rng.random() < 0.5
    holder = {}

    def builder(r):
        g, fetches, runs = (control_flow_graph(r, v1_style) if kind == "control_flow" else inference_graph(r))
        holder["ops"] = g.ops
        return fetches, runs
    built = v1_graph(builder, rng, control_flow_v1=v1_style)
    ops = holder["ops"]
    family = "inference" if kind == "inference" else f"control_flow_{'v1' if v1_style else 'v2'}"
    name = f"rg{seed:06d}_{family}"
    tol = inference_tolerance(ops)
    defn = CaseDef(name, family, f"random {family}: " + ", ".join(ops),
                   STYLE_V1_CF1 if v1_style else STYLE_V1, tol, None)
    case_json, arrays = run_inference(defn, built)
    check_conditioning(built, case_json, arrays, tol, rng)
    case_json["family"] = family
    return name, built.graph_def, case_json, arrays


def check_conditioning(built, case_json, arrays, tol, rng):
    """Reject a case whose outputs TF itself moves beyond the tolerance when the float feeds are
    perturbed by 1e-6 relative, or whose outputs are huge (see the module docstring)."""
    for run in case_json["runs"]:
        feeds = {n: arrays[k] for n, k in run["feeds"].items()}
        want = [arrays[run["expected"][n]] for n in built.fetches]
        for w in want:
            if w.dtype.kind == "f" and w.size and np.nanmax(np.abs(np.where(np.isfinite(w), w, 0))) > 1e4:
                raise Reject("huge outputs")
        for _ in range(2):
            moved = {n: (v * (1 + 1e-6 * rng.choice([-1.0, 1.0], size=v.shape))).astype(v.dtype)
                     if v.dtype.kind == "f" else v for n, v in feeds.items()}
            got = run_graph_def(built.graph_def, built.fetches, moved)
            for g, w in zip(got, want):
                g = np.asarray(g)
                if w.dtype.kind == "f":
                    ok = np.allclose(g, w, rtol=tol["rtol"] / 2, atol=tol["atol"] / 2, equal_nan=True)
                    ok = ok and np.array_equal(np.isnan(g), np.isnan(w)) and np.array_equal(np.isinf(g), np.isinf(w))
                else:
                    ok = np.array_equal(g, w)
                if not ok:
                    raise Reject("ill-conditioned")


def compact(d):
    """Keep what the tests read: case.json, data.npz and graph.pb, gzipped (graph.pb.gz: node
    names are most of a training graph's bytes, and compress 5x)."""
    for f in ("graph.pbtxt", "ops.json"):
        (d / f).unlink()
    with gzip.GzipFile(d / "graph.pb.gz", "wb", mtime=0) as f:
        f.write((d / "graph.pb").read_bytes())
    (d / "graph.pb").unlink()
    meta = json.loads((d / "case.json").read_text())
    meta["graph_pbtxt"], meta["graph_pb"] = None, "graph.pb.gz"
    meta.pop("reference_env", None)
    if "train" in meta:
        meta["train"].pop("protocol", None)
        meta["train"].pop("initial_values_note", None)
    (d / "case.json").write_text(json.dumps(meta, indent=0, separators=(",", ":")))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seed", type=int, default=0, help="case i uses seed SEED+i")
    p.add_argument("--count", type=int, default=300)
    p.add_argument("--out", required=True)
    p.add_argument("--compact", action="store_true", help="drop graph.pbtxt, ops.json and the protocol texts")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    kinds = {}
    for seed in range(args.seed, args.seed + args.count):
        name, graph_def, case_json, arrays = build_case(seed)
        d = write_case(out, graph_def, case_json, arrays, max_bytes=CASE_MAX_BYTES)
        if args.compact:
            compact(d)
        kinds[case_json["family"]] = kinds.get(case_json["family"], 0) + 1
    total = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"{args.count} cases ({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))}), {total} bytes in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
