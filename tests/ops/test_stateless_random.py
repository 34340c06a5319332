"""Stateless and Generator random ops beyond TensorFlow's recorded values
(tests/ops/test_random_references.py): bad inputs give errors naming the node, compiled too."""

import numpy as np
import pytest

from hlobridge.debug.testing import check_op, compiled, reference
from hlobridge.errors import HlobridgeError, InputError, ShapeInferenceError
from hlobridge.frontend.graph_builder import GraphBuilder, Shape
from hlobridge.ops.random.philox import PhiloxRandom
from hlobridge.runtime.session import Session

I32, I64, F32 = (np.dtype(t) for t in (np.int32, np.int64, np.float32))
KEY, COUNTER = PhiloxRandom.from_seed_pair(1, 2).key_counter()
SHAPE = np.array([2, 3], np.int32)


def _v2(op, alg, *bounds, dtype=F32):
    return op, [SHAPE, KEY, COUNTER, np.int32(alg), *bounds], {"dtype": dtype, "Tshape": I32}


def test_threefry_is_refused_like_tensorflows_cpu_kernels():
    for run in (reference, compiled):
        with pytest.raises(HlobridgeError, match="Unsupported algorithm id: 2"):
            run(*_v2("StatelessRandomUniformV2", 2))


def test_auto_select_is_philox():
    (auto,) = reference(*_v2("StatelessRandomNormalV2", 3))
    (philox,) = reference(*_v2("StatelessRandomNormalV2", 1))
    np.testing.assert_array_equal(auto, philox)


def test_seed_must_be_a_pair():
    with pytest.raises(ShapeInferenceError, match="seed must have shape \\[2\\]"):
        reference("StatelessRandomUniform", [SHAPE, np.array([1, 2, 3], np.int64)], {"dtype": F32})


def test_uniform_int_needs_minval_below_maxval():
    op, inputs, attrs = _v2("StatelessRandomUniformIntV2", 1, np.int32(4), np.int32(4), dtype=I32)
    with pytest.raises(InputError, match="Need minval < maxval: 4 >= 4"):
        reference(op, inputs, attrs)
    with pytest.raises(Exception, match="Need minval < maxval"):  # a run-time check of the compiled call
        compiled(op, inputs, attrs)
    empty = [np.array([0, 3], np.int32)] + inputs[1:]  # nothing drawn: no check, as in TF
    assert reference(op, empty, attrs)[0].shape == (0, 3)


def test_full_range_int32_does_not_overflow():
    op, inputs, attrs = _v2("StatelessRandomUniformIntV2", 1, np.int32(-2**31), np.int32(2**31 - 1), dtype=I32)
    (got,) = reference(op, inputs, attrs)
    assert got.dtype == np.int32 and got.min() >= -2**31


def _generator_session(state, alg):
    b = GraphBuilder()
    h = b.op("VarHandleOp", name="v", dtype=I64, shape=Shape((len(state),)), shared_name="v", container="")
    b.op("AssignVariableOp", [h, b.const("s", np.array(state, np.int64))], name="init", dtype=I64)
    b.op("StatefulUniform", [h, b.const("alg", np.int64(alg)), b.const("shape", SHAPE)], name="op",
         dtype=F32, shape_dtype=I32)
    b.op("ReadVariableOp", [h], name="read", dtype=I64)
    sess = Session(b.graph(), jit="off", cache_dir=False)
    sess.run("init")
    return sess


def test_generator_state_too_short_or_threefry():
    with pytest.raises(ShapeInferenceError, match="at least 3 elements"):
        _generator_session([1, 2], 1).run("op:0")
    with pytest.raises(ShapeInferenceError, match="Unsupported algorithm id: 2"):
        _generator_session([1, 2, 3], 2).run("op:0")


def test_generator_state_longer_than_three_keeps_its_tail():
    """Each draw of n values moves the counter by n * 256 blocks; the key and the rest stay."""
    sess = _generator_session([1, 2, 3, 99], 1)
    sess.run("op:0")
    sess.run("op:0")
    np.testing.assert_array_equal(sess.run("read:0"), [1 + 2 * 6 * 256, 2, 3, 99])


def test_compiled_multinomial_matches_its_kernel_on_many_classes():
    """Keras' categorical on a larger vocabulary, with -inf logits (masked classes)."""
    logits = np.random.RandomState(5).randn(6, 300).astype(np.float32) * 3
    logits[:, ::7] = -np.inf
    check_op("StatelessMultinomial", [logits, np.int32(40), np.array([9, -4], np.int64)],
             {"T": F32, "output_dtype": I64, "Tseed": I64})


def test_a_seeded_random_op_is_a_generator_on_state_0_seed2_seed():
    """RandomUniform(seed, seed2)'s stream is StatefulUniform's on the state [0, seed2, seed]:
    the way to compile the stateful ops is a hidden state variable per node (not done: the
    runtime would have to create it at session start)."""
    from hlobridge.ops.random.philox import GuardedPhilox
    stream = GuardedPhilox(7, 11)
    sess = _generator_session([0, 11, 7], 1)
    for _ in range(3):
        np.testing.assert_array_equal(sess.run("op:0"), stream.sample("RandomUniform", (2, 3), np.float32))


@pytest.mark.parametrize("tin,tout", [(np.float16, np.int8), (np.float32, np.int32)])
def test_compiled_stochastic_cast_matches_its_kernel_on_long_inputs(tin, tout):
    """Past Eigen's packets each rounded element draws a block: the compiled prefix count."""
    x = (np.random.RandomState(2).randn(1001) * 50).astype(tin)
    x[::9] = np.round(x[::9])  # integers draw nothing
    check_op("StochasticCastToInt", [x, KEY, COUNTER, np.int32(1)], {"Tin": np.dtype(tin), "Tout": np.dtype(tout)})
