"""The conformance corpus's case registry and the helpers its builders share.

A case is a builder registered with @case: it makes a graph and says what to feed and fetch in
which runs; tools/make_conformance_corpus.py runs it in TensorFlow and writes the case. The
builders live by family in the sibling modules (ops.py, graphs.py, models.py).
"""

import zlib
from dataclasses import dataclass, field

import numpy as np
# tf_corpus sets the reference environment before it imports TensorFlow: import it first.
from tf_corpus import GRAPH_SEED

import tensorflow as tf
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

v1 = tf.compat.v1

TOL_ELEMENTWISE = {"rtol": 1e-05, "atol": 1e-06}
TOL_SUMS = {"rtol": 1e-05, "atol": 1e-05}       # reductions, contractions, convolutions
TOL_MODEL = {"rtol": 1e-04, "atol": 1e-05}      # several layers deep
TOL_TRAIN = {"rtol": 1e-04, "atol": 1e-05}

nan, inf = np.nan, np.inf


@dataclass
class Built:
    """A graph, what to feed and fetch, and the runs: (name, {feed name: array}) or
    (name, feeds, error substring) for a run TensorFlow must fail."""

    graph_def: object
    fetches: list
    runs: list
    extra: dict = field(default_factory=dict)
    reference_graph_def: object = None  # what TF runs for the expected values, where not graph_def


@dataclass
class CaseDef:
    name: str
    family: str
    description: str
    style: str
    tolerance: dict
    build: object
    kind: str = "inference"
    expect_ops: tuple = ()      # op types the written graph must contain (checked on writing)


CASES: dict = {}

STYLE_V1 = "tf.compat.v1 graph mode"
STYLE_V1_CF1 = "tf.compat.v1 graph mode, control flow v1 (disable_control_flow_v2)"
STYLE_FUNCTION = "TF2 tf.function concrete function graph with a FunctionDefLibrary (not inlined)"
STYLE_KERAS = "Keras 3 model in a tf.function, frozen with convert_variables_to_constants_v2"
STYLE_GRAPPLER = "tf.compat.v1 graph, rewritten by Grappler's remapper (tf_optimizer.OptimizeGraph)"


def case(name, family, description, *, tol=TOL_ELEMENTWISE, style=STYLE_V1, expect_ops=(), kind="inference"):
    """Register a builder. Builders with style STYLE_V1/STYLE_V1_CF1 run inside a fresh graph
    and return (fetches, runs) with tensors; the others return a Built."""
    def register(fn):
        assert name not in CASES, name
        CASES[name] = CaseDef(name, family, " ".join(description.split()), style, tol, fn, kind,
                              tuple(expect_ops))
        return fn
    return register


def case_rng(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def ph(name, dtype=tf.float32, shape=None):
    return v1.placeholder(dtype, shape, name=name)


def out(**tensors):
    """Fetches, named: an Identity per output, as tf.function graphs end in."""
    return [tf.identity(t, name=k) for k, t in tensors.items()]


def f32(a):
    return np.asarray(a, np.float32)


def normal(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def const(rng, *shape, scale=None):
    """A weight: a Const node in the graph."""
    scale = scale if scale is not None else 1.0 / np.sqrt(max(1, int(np.prod(shape[:-1]))))
    return tf.constant(normal(rng, *shape, scale=scale))


def v1_graph(build, rng, control_flow_v1=False):
    """Run a v1-style builder inside a fresh graph; return its Built."""
    g = tf.Graph()
    if control_flow_v1:
        v1.disable_control_flow_v2()
    try:
        with g.as_default():
            v1.set_random_seed(GRAPH_SEED)
            result = build(rng)
    finally:
        if control_flow_v1:
            v1.enable_control_flow_v2()
    fetches, runs = result[:2]
    extra = result[2] if len(result) > 2 else {}
    name = lambda t: t if isinstance(t, str) else t.name  # noqa: E731
    runs = [(r[0], {name(k): v for k, v in r[1].items()}, *r[2:]) for r in runs]
    return Built(g.as_graph_def(), [name(t) for t in fetches], runs, extra)


def concrete_graph(fn, *specs):
    """The GraphDef of a tf.function's concrete function, calls and library as TF wrote them."""
    cf = tf.function(fn).get_concrete_function(*specs)
    return cf.graph.as_graph_def(), [t.name for t in cf.outputs], [t.name for t in cf.inputs]


def frozen_graph(fn, *specs):
    cf = tf.function(fn).get_concrete_function(*specs)
    frozen = convert_variables_to_constants_v2(cf)
    return frozen.graph.as_graph_def(), [t.name for t in frozen.outputs], \
        [t.name for t in frozen.inputs]


