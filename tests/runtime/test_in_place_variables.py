"""Variables written in place (passes/ir/tie_variables.py, ops/control/state.py VariableStore): the
step writes the buffer it was given, and nobody who holds the old value sees it change."""

import numpy as np
import pytest

from hlobridge import flags
from hlobridge.frontend.graph_builder import GraphBuilder, Shape
from hlobridge.runtime.session import Session

LR, MOMENTUM = 0.1, 0.9
W0 = np.arange(4, dtype=np.float32)
X = np.array([1, -2, 3, 0.5], np.float32)


def _variable(b: GraphBuilder, name: str, value):
    v = b.op("VarHandleOp", name=name, dtype=np.float32, shape=Shape((4,)), shared_name=name, container="")
    b.op("AssignVariableOp", [v, b.const(f"{name}_init", value)], name=f"init_{name}", dtype=np.float32)
    return v


def momentum_graph(compile_peek: bool = True):
    """w, acc: ResourceApplyMomentum(w, acc, lr, grad = 2x); `peek` reads w before the update
    (a control edge orders them), `copy` assigns w's value to w2, `twins` one computed value
    to both. Under jit="manual" the ops
    marked _XlaCompile compile, and `peek` runs on its kernel unless `compile_peek`."""
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (4,))
    w, acc, w2 = (_variable(b, n, v) for n, v in (("w", W0), ("acc", np.zeros(4, np.float32)),
                                                 ("w2", np.zeros(4, np.float32))))
    compiled = {"_XlaCompile": True}
    peek = b.op("ReadVariableOp", [w], name="peek", dtype=np.float32, **(compiled if compile_peek else {}))
    grad = b.op("Mul", [x, b.const("two", np.float32(2))], name="grad", T=np.float32, **compiled)
    b.op("ResourceApplyMomentum", [w, acc, b.const("lr", np.float32(LR)), grad,
                                   b.const("momentum", np.float32(MOMENTUM))],
         name="update", T=np.float32, use_locking=False, use_nesterov=False, control_inputs=[peek], **compiled)
    read = b.op("ReadVariableOp", [w], name="read", dtype=np.float32, **compiled)
    b.op("AssignVariableOp", [w2, read], name="copy", dtype=np.float32, **compiled)
    b.op("ReadVariableOp", [w2], name="read_w2", dtype=np.float32, **compiled)
    twins = [b.op("AssignVariableOp", [v, grad], name=f"set_{n}", dtype=np.float32, **compiled)
             for n, v in (("w", w), ("w2", w2))]
    b.op("NoOp", name="twins", control_inputs=twins)
    alias = b.op("VarHandleOp", name="w_alias", dtype=np.float32, shape=Shape((4,)), shared_name="w", container="")
    tripled = b.op("Mul", [b.op("ReadVariableOp", [alias], name="read_alias", dtype=np.float32, **compiled),
                           b.const("three", np.float32(3))], name="tripled", T=np.float32, **compiled)
    b.op("ResourceApplyMomentum", [w, acc, "lr", grad, "momentum"], name="update_after_alias", T=np.float32,
         use_locking=False, use_nesterov=False, control_inputs=[tripled], **compiled)
    b.op("NoOp", name="init", control_inputs=["init_w", "init_acc", "init_w2"])
    return b.graph()


def expected_weights(steps: int) -> list[np.ndarray]:
    """w after each of `steps` Momentum steps on grad = 2x (TensorFlow's update rule)."""
    w, acc, out = W0.astype(np.float64), np.zeros(4), []
    for _ in range(steps):
        acc = acc * MOMENTUM + 2 * X
        w = w - LR * acc
        out.append(w.astype(np.float32))
    return out


def buffer(sess: Session, name: str):
    """The identity of the device buffer behind a variable (IREE's buffer reference)."""
    return sess.variables.values[name]._buffer_view.get_buffer().ref


def update_launch(sess: Session):
    (launch,) = [u for p in sess._plans.values() for u in p.units
                 if getattr(u, "executables", None) and "update" in u.nodes]
    (exe,) = launch.executables.values()
    return exe


def test_a_momentum_step_writes_its_weights_and_slot_where_they_lie():
    sess = Session(momentum_graph(), cache_dir=False, min_cluster_size=1)
    sess.run("init")
    want = expected_weights(4)
    sess.run("update", {"x:0": X})
    exe = update_launch(sess)
    assert sorted(str(exe.resource_args[i]) for i in exe.overwritten) == ["acc:0", "w:0"]
    before = buffer(sess, "w"), buffer(sess, "acc")
    for _ in range(3):
        sess.run("update", {"x:0": X})
    assert (buffer(sess, "w"), buffer(sess, "acc")) == before  # the same buffers, written in place
    np.testing.assert_allclose(sess.run("read:0"), want[3], rtol=1e-6)
    sess.run("update", {"x:0": X})  # `read` lent w out: this step works on a copy
    assert buffer(sess, "w") != before[0] and buffer(sess, "acc") == before[1]
    np.testing.assert_allclose(sess.run("read:0"), expected_weights(5)[4], rtol=1e-6)


def test_in_place_writes_can_be_turned_off(monkeypatch):
    monkeypatch.setenv(flags.ENV_VAR, "--no-in-place-variables")
    flags.from_environment.cache_clear()
    try:
        sess = Session(momentum_graph(), cache_dir=False, min_cluster_size=1)
        sess.run("init")
        sess.run("update", {"x:0": X})
        assert not update_launch(sess).overwritten
        first = buffer(sess, "w")
        sess.run("update", {"x:0": X})
        assert buffer(sess, "w") != first
        np.testing.assert_allclose(sess.run("read:0"), expected_weights(2)[1], rtol=1e-6)
    finally:
        monkeypatch.delenv(flags.ENV_VAR)
        flags.from_environment.cache_clear()


@pytest.mark.parametrize("compile_peek", [True, False], ids=["read-in-the-cluster", "read-on-a-kernel"])
def test_a_read_before_the_update_keeps_the_old_value(compile_peek):
    """Read and update in one step: compiled together the old value is a result, so the
    weights stay untied in that signature; read on a kernel (a NumPy view of the buffer) the
    variable is lent and the cluster gets a copy."""
    sess = Session(momentum_graph(compile_peek), jit="manual", cache_dir=False, min_cluster_size=1)
    sess.run("init")
    want = [W0, *expected_weights(3)]
    for step in range(3):
        peek, _ = sess.run(["peek:0", "update"], {"x:0": X})
        np.testing.assert_allclose(peek, want[step], rtol=1e-6)
    np.testing.assert_allclose(sess.run("read:0"), want[3], rtol=1e-6)


def test_a_variable_assigned_from_another_keeps_its_value_when_that_one_is_updated():
    sess = Session(momentum_graph(), cache_dir=False, min_cluster_size=1)
    sess.run("init")
    sess.run("update", {"x:0": X})
    sess.run("copy")  # w2 = w: w2's value is w's own buffer
    copied = sess.run("read:0")
    for _ in range(2):
        sess.run("update", {"x:0": X})  # w written in place would change w2 with it
    np.testing.assert_array_equal(sess.run("read_w2:0"), copied)
    np.testing.assert_allclose(sess.run("read:0"), expected_weights(3)[2], rtol=1e-6)



def test_two_variables_given_one_value_keep_apart_when_one_is_updated():
    """`twins` returns one buffer for both variables: w's update must not write it in place."""
    sess = Session(momentum_graph(), cache_dir=False, min_cluster_size=1)
    sess.run("init")
    sess.run("twins", {"x:0": X})
    assert buffer(sess, "w") == buffer(sess, "w2")
    sess.run("update", {"x:0": X})
    np.testing.assert_array_equal(sess.run("read_w2:0"), 2 * X)
    np.testing.assert_allclose(sess.run("read:0"), 2 * X - LR * 2 * X, rtol=1e-6)


def test_a_variable_read_under_a_second_handle_is_updated_in_a_copy():
    """Two handles, one shared_name, one call: the update may not write the buffer the other
    handle's read is given."""
    sess = Session(momentum_graph(), cache_dir=False, min_cluster_size=1)
    sess.run("init")
    want = [W0, *expected_weights(3)]
    for step in range(3):
        tripled, _ = sess.run(["tripled:0", "update_after_alias"], {"x:0": X})
        np.testing.assert_allclose(tripled, 3 * want[step], rtol=1e-6)
    np.testing.assert_allclose(sess.run("read:0"), want[3], rtol=1e-6)
