"""Calling a loaded module without IREE's Python layers (runtime/straight_call.py): the same
results as IREE's own invoker, as NumPy arrays that stay valid and belong to the caller, and
`run`'s inputs matched by name in any order."""

import gc

import numpy as np
import pytest

from hlobridge import compile_graph, runtime
from hlobridge.errors import InputError
from hlobridge.frontend.graph_builder import GraphBuilder
from hlobridge.runtime.host import to_host
from hlobridge.runtime.straight_call import StraightCall, mapped


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (2, 3))
    y = b.placeholder("y", np.int32, (3,))
    b.op("Mul", [x, b.op("Cast", [y], SrcT=np.int32, DstT=np.float32)], name="p", T=np.float32)
    b.op("Greater", [x, b.const("zero", np.float32(0))], name="g", T=np.float32)
    model = compile_graph(b.graph(), inputs=["x", "y"], outputs=["p:0", "g:0"])
    return runtime.load(model.vmfb, "cpu")


X = np.arange(-3, 3, dtype=np.float32).reshape(2, 3)
Y = np.array([1, 2, 3], np.int32)


def test_results_match_irees_invoker_and_outlive_the_call(module):
    assert module.main._straight is not None
    p, g = module.main(X, Y)
    want_p, want_g = (np.asarray(r.to_host()) for r in module.main.invoke(X, Y))
    gc.collect()
    [module.main(X + 1, Y) for _ in range(5)]  # later calls do not reuse a result's memory
    np.testing.assert_array_equal(p, X * Y)
    np.testing.assert_array_equal(p, want_p)
    np.testing.assert_array_equal(g, want_g)
    assert p.dtype == want_p.dtype and g.dtype == want_g.dtype and p.shape == (2, 3)
    p[...] = 7  # the caller's to write to
    np.testing.assert_array_equal(module.main(X, Y)[0], X * Y)


def test_call_device_keeps_results_on_the_device(module):
    p, g = module.main.call_device(X, Y)
    assert hasattr(p, "to_host")
    np.testing.assert_array_equal(p.to_host(), X * Y)
    np.testing.assert_array_equal(module.main(p.to_host(), Y)[0], X * Y * Y)


def test_a_host_memory_result_is_mapped_once_as_iree_maps_it(module):
    """to_host of a cluster's result on a local device maps it without IREE's checks: the same
    values and dtype as IREE's to_host, one mapping kept on the array, and anything else left
    to IREE (or unchanged)."""
    p, g = module.main.call_device(X, Y)
    first = to_host(g)
    assert first is mapped(g) and first is g.to_host()  # one mapping, IREE's own cache
    np.testing.assert_array_equal(first, X > 0)
    assert first.dtype == np.bool_ and to_host(p).dtype == np.float32
    assert mapped(X) is None and to_host(X) is X


def test_run_matches_inputs_by_name_in_any_order_and_still_checks_them(module):
    for feeds in ({"x": X, "y": Y}, {"y:0": Y, "x:0": X}, {"y": Y, "x": X}):
        np.testing.assert_array_equal(module.run(feeds)["p:0"], X * Y)
    with pytest.raises(InputError, match="missing input"):
        module.run({"x": X})
    with pytest.raises(InputError, match="unknown input"):
        module.run({"x": X, "y": Y, "w": X})
    with pytest.raises(InputError, match=r"input 'y:0': expected dtype int32, got float32"):
        module.run({"y": Y.astype(np.float32), "x": X})


def test_an_invoker_with_typed_results_keeps_irees_conversion():
    class Typed:
        _ret_descs = [["ndarray", "f32", 1, 2]]
    assert StraightCall.of(Typed(), "local-sync") is None
    assert StraightCall.of(object(), "local-sync") is None  # laid out otherwise: IREE's own
