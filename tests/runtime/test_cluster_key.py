"""A cluster's cache key is a function of what its lowered text is a function of: it changes
with any node, attr, constant, function body, input signature, option or lowering flag, and
not with how the graph was loaded, nor with the names of its nodes and inputs."""

import numpy as np
import pytest

from hlobridge import flags
from hlobridge.compile.options import CompileOptions
from hlobridge.frontend.graph_builder import GraphBuilder
from hlobridge.frontend.graph import TensorRef
from hlobridge.runtime.cluster_key import cluster_key_parts
from hlobridge.spec import TensorSpec

F32 = np.float32


def _graph(scale=2.0, op="Mul", body_const=1.0, prefix="", colocated=None):
    """y = op(x, scale) fed through a While whose body adds body_const once (node names
    starting with `prefix`; y colocated with the node `colocated`, if any)."""
    b = GraphBuilder()
    x = b.placeholder(f"{prefix}x", F32, [4])
    attrs = {"_class": [f"loc:@{colocated}"]} if colocated else {}
    y = b.op(op, [x, b.const(f"{prefix}scale", np.full(4, scale, F32))], name=f"{prefix}y", T=np.dtype(F32),
             **attrs)

    def cond(f, v):
        return [(f.op("Less", [f.op("Sum", [v, f.const("axis", 0, np.int32)], T=np.dtype(F32),
                                     Tidx=np.dtype(np.int32)), f.const("big", 100.0, F32)], T=np.dtype(F32)),
                 np.bool_)]

    def body(f, v):
        return [(f.op("AddV2", [v, f.const("c", body_const, F32)], T=np.dtype(F32)), F32)]

    b.op("StatelessWhile", [y], name=f"{prefix}w", num_outputs=1, T=[np.dtype(F32)],
         cond=b.function("c", {"v": F32}, cond), body=b.function("d", {"v": F32}, body))
    return b.graph()


NODES = ["scale", "y", "w"]


def _key(graph=None, shape=(4,), options=None, value=None, prefix=""):
    graph = graph or _graph()
    x = TensorRef(f"{prefix}x")
    feeds = {x: TensorSpec(np.dtype(F32), shape, value)}
    parts = cluster_key_parts(graph, [prefix + n for n in NODES], [x], [TensorRef(f"{prefix}w")], feeds, {},
                              options or CompileOptions())
    return b"".join(parts)


def test_the_key_is_stable_across_loads():
    assert _key(_graph()) == _key(_graph())


@pytest.mark.parametrize("changed", [
    lambda: _key(_graph(scale=3.0)),  # a constant's value
    lambda: _key(_graph(op="AddV2")),  # an op
    lambda: _key(_graph(body_const=2.0)),  # a While body's constant
    lambda: _key(shape=(8,)),  # an input's shape
    lambda: _key(value=np.ones(4, F32)),  # a value the cluster reads as a constant
    lambda: _key(options=CompileOptions(precision="bf16")),  # the options
], ids=["constant", "op", "function_body", "input_shape", "constant_input", "options"])
def test_the_key_changes_with_what_the_text_depends_on(changed):
    assert changed() != _key()


def test_names_do_not_count():
    """Renamed nodes and inputs, or colocation with other nodes (`_class`): one key, so such
    clusters share a binary (tests/runtime/test_shared_binaries.py runs one)."""
    assert _key(_graph(prefix="tower2/"), prefix="tower2/") == _key()
    assert _key(_graph(colocated="somewhere")) == _key(_graph(colocated="elsewhere")) == _key()


def test_the_key_changes_with_lowering_flags(monkeypatch):
    before = _key()
    monkeypatch.setenv("HLOBRIDGE_FLAGS", "--max-loop-iterations=7")
    flags.from_environment.cache_clear()
    try:
        assert _key() != before
    finally:
        flags.from_environment.cache_clear()
