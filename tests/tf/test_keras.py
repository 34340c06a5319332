"""hlobridge.tf.from_keras against Keras's own forward pass (training=False): an MLP, a small
CNN with batch normalization, an LSTM, and a model of two inputs; each on two batch sizes."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import hlobridge.tf as htf  # noqa: E402

from .conftest import TOL, compiled_clusters  # noqa: E402


def _data(seed: int, *shape):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def _check(model, make_input, batches=(4, 1)):
    """from_keras(model) matches model(x, training=False) on each batch size, with one trace
    (the model's inputs have an unknown batch) and clusters compiled by IREE."""
    f = htf.from_keras(model)
    for batch in batches:
        x = make_input(batch)
        got, want = f(x), model(x, training=False)
        for g, w in zip(tf.nest.flatten(got), tf.nest.flatten(want)):
            assert isinstance(g, np.ndarray) and g.shape == tuple(w.shape)
            np.testing.assert_allclose(g, np.asarray(w), **TOL)
    assert len(f.traces) == 1
    assert compiled_clusters(f) >= len(batches)
    return f


def test_mlp():
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((12,)), keras.layers.Dense(32, activation="gelu"),
                              keras.layers.Dropout(0.5),  # inference: the identity
                              keras.layers.Dense(16, activation="relu"), keras.layers.Dense(5, activation="softmax")])
    _check(model, lambda b: _data(b, b, 12))


def test_small_cnn():
    keras.utils.set_random_seed(2)
    L = keras.layers
    model = keras.Sequential([keras.Input((16, 16, 3)), L.Conv2D(8, 3, padding="same"), L.BatchNormalization(),
                              L.ReLU(), L.MaxPooling2D(), L.Conv2D(16, 3, strides=2, activation="relu"),
                              L.GlobalAveragePooling2D(), L.Dense(10)])
    bn = model.layers[1]  # moving statistics that are not the identity's
    bn.moving_mean.assign(_data(3, 8) * 0.1)
    bn.moving_variance.assign(np.abs(_data(4, 8)) + 0.5)
    _check(model, lambda b: _data(b, b, 16, 16, 3))


def test_lstm():
    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((None, 6)), keras.layers.LSTM(8, return_sequences=True),
                              keras.layers.LSTM(4), keras.layers.Dense(3)])
    f = _check(model, lambda b: _data(b, b, 5, 6))
    x = _data(9, 2, 7, 6)  # another sequence length: the same trace, a new plan
    np.testing.assert_allclose(f(x), model(x, training=False).numpy(), **TOL)
    assert len(f.traces) == 1


def test_two_inputs_two_outputs():
    keras.utils.set_random_seed(4)
    a, b = keras.Input((4,), name="a"), keras.Input((6,), name="b")
    h = keras.layers.Concatenate()([keras.layers.Dense(8, activation="tanh")(a), b])
    model = keras.Model([a, b], [keras.layers.Dense(2)(h), keras.layers.Dense(3, activation="sigmoid")(h)])
    f = _check(model, lambda n: [_data(n, n, 4), _data(n + 10, n, 6)])
    got = f([_data(0, 2, 4), _data(1, 2, 6)])
    assert isinstance(got, list) and [g.shape for g in got] == [(2, 2), (2, 3)]


def test_inputs_and_outputs_by_name():
    keras.utils.set_random_seed(6)
    a, b = keras.Input((3,), name="a"), keras.Input((2,), name="b")
    h = keras.layers.Dense(4, activation="tanh")(keras.layers.Concatenate()([a, b]))
    model = keras.Model({"a": a, "b": b}, {"y": keras.layers.Dense(2)(h)})
    got = _check(model, lambda n: {"a": _data(n, n, 3), "b": _data(n + 10, n, 2)})(
        {"a": _data(0, 2, 3), "b": _data(1, 2, 2)})
    assert list(got) == ["y"] and got["y"].shape == (2, 2)


def _train_alike(make, make_optimizer, loss_of, spec, batches):
    """The same training steps on two copies of a model, one through hlobridge.tf: the same
    losses, and the same weights afterwards (all of them: moving statistics too), written back
    into the Keras model. Returns the optimizer of hlobridge's copy."""
    ours, theirs = make(), make()
    theirs.set_weights(ours.get_weights())
    optimizers = []

    def step_of(model):
        opt = make_optimizer()
        optimizers.append(opt)

        def step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(loss_of(y, model(x, training=True)))
            opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
            return loss
        return step

    ours_step = htf.function(step_of(ours), input_signature=spec)
    theirs_step = tf.function(step_of(theirs), input_signature=spec)
    for x, y in batches:
        np.testing.assert_allclose(ours_step(x, y), theirs_step(x, y).numpy(), **TOL)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, **TOL)
    assert int(optimizers[0].iterations.numpy()) == len(batches)


def test_training_steps_of_an_mlp_with_adam():
    keras.utils.set_random_seed(5)

    def make():
        return keras.Sequential([keras.Input((6,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)])

    xs = [_data(20 + i, n, 6) for i, n in enumerate([8, 8, 5, 8])]  # a second batch size: same trace
    _train_alike(make, lambda: keras.optimizers.Adam(0.01), lambda y, p: (p - y) ** 2,
                 [tf.TensorSpec([None, 6], tf.float32), tf.TensorSpec([None, 1], tf.float32)],
                 [(x, x.sum(axis=1, keepdims=True)) for x in xs])


def test_training_steps_of_a_cnn_with_batch_normalization():
    keras.utils.set_random_seed(7)
    L = keras.layers

    def make():
        return keras.Sequential([keras.Input((8, 8, 2)), L.Conv2D(4, 3, padding="same"), L.BatchNormalization(),
                                 L.ReLU(), L.GlobalAveragePooling2D(), L.Dense(3)])

    rng = np.random.default_rng(0)
    batches = [(rng.normal(size=(4, 8, 8, 2)).astype(np.float32), rng.integers(0, 3, 4).astype(np.int32))
               for _ in range(3)]
    _train_alike(make, lambda: keras.optimizers.SGD(0.1, momentum=0.9),
                 lambda y, p: keras.losses.sparse_categorical_crossentropy(y, p, from_logits=True),
                 [tf.TensorSpec([None, 8, 8, 2], tf.float32), tf.TensorSpec([None], tf.int32)], batches)


def test_training_steps_of_an_lstm():
    # the kernels are resources passed into the While, the gradient runs a second loop over TensorLists
    keras.utils.set_random_seed(8)

    def make():
        return keras.Sequential([keras.Input((5, 3)), keras.layers.LSTM(4), keras.layers.Dense(1)])

    xs = [_data(30 + i, 4, 5, 3) for i in range(3)]
    _train_alike(make, lambda: keras.optimizers.Adam(0.01), lambda y, p: (p - y) ** 2,
                 [tf.TensorSpec([None, 5, 3], tf.float32), tf.TensorSpec([None, 1], tf.float32)],
                 [(x, x.sum(axis=(1, 2))[:, None]) for x in xs])
