"""Session semantics (tf.compat.v1.Session.run), the same under every jit mode."""

import numpy as np
import pytest

from hlobridge import HlobridgeError, InputError
from hlobridge.frontend.graph_builder import GraphBuilder, Shape
from hlobridge.runtime.session import Session



@pytest.fixture(params=["off", "auto"])
def jit(request):
    return request.param


@pytest.fixture()
def counter_graph():
    """x -> y = x * 2 + v; v is a resource variable; `bump` adds y's sum to it."""
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (None,))
    v = b.op("VarHandleOp", name="v", dtype=np.float32, shape=Shape(()),
             shared_name="v", container="")
    b.op("AssignVariableOp", [v, b.const("zero", np.float32(0))], name="init", dtype=np.float32)
    read = b.op("ReadVariableOp", [v], name="read", dtype=np.float32)
    y = b.op("AddV2", [b.op("Mul", [x, b.const("two", np.float32(2))], name="mul", T=np.float32), read],
             name="y", T=np.float32)
    s = b.op("Sum", [y, b.const("axis", np.int32(0))], name="s", T=np.float32, Tidx=np.int32, keep_dims=False)
    b.op("AssignAddVariableOp", [v, s], name="bump", dtype=np.float32)
    return b.graph()


def test_fetch_structures_targets_and_state(counter_graph, jit):
    sess = Session(counter_graph, jit=jit, cache_dir=False, min_cluster_size=1)
    assert sess.run("init") is None
    x = np.array([1, 2, 3], np.float32)
    out = sess.run({"y": "y:0", "pair": ("s:0", ["read:0"])}, {"x:0": x})
    np.testing.assert_array_equal(out["y"], [2, 4, 6])
    assert out["pair"][0] == 12 and out["pair"][1][0] == 0
    assert sess.run(["bump", "read:0"], {"x": x})[1] == 0  # bump consumes the read: it runs first
    assert sess.run("read:0") == 12
    assert sess.run("read:0") == 12  # a fetch alone does not re-run the update


def test_feeding_an_intermediate_cuts_the_graph(counter_graph, jit):
    sess = Session(counter_graph, jit=jit, cache_dir=False, min_cluster_size=1)
    sess.run("init")
    # mul:0 is fed, so placeholder x (its only producer input) need not be fed at all
    np.testing.assert_array_equal(sess.run("y:0", {"mul:0": np.array([5, 6], np.float32)}), [5, 6])


@pytest.mark.parametrize("fetches,feeds,error", [
    ("y:0", {}, "placeholder(s) x must be fed"),
    ("nope:0", {}, "fetch 'nope:0': no node 'nope'"),
    ("y:0", {"ghost:0": 1}, "feed 'ghost:0': no node 'ghost'"),
    ("y:0", {"x:0": np.ones((2, 2), np.float32)}, "feed 'x:0' (Placeholder): expected shape float32[?], got [2, 2]"),
    ("y:0", {"x:0": np.array(["a"])}, "feed 'x:0': expected float32, got"),
])
def test_errors_name_what_is_wrong(counter_graph, jit, fetches, feeds, error):
    sess = Session(counter_graph, jit=jit, cache_dir=False, min_cluster_size=1)
    sess.run("init")
    with pytest.raises(InputError) as e:
        sess.run(fetches, feeds)
    assert error in str(e.value)


def test_uninitialized_variable_is_a_clear_error(counter_graph, jit):
    with pytest.raises(InputError, match="reads variable 'v', which is not initialized"):
        Session(counter_graph, jit=jit, cache_dir=False, min_cluster_size=1).run("read:0")


def test_unknown_jit_mode():
    with pytest.raises(HlobridgeError, match="jit must be one of"):
        Session(GraphBuilder().graph(), jit="sometimes")
