"""Cases with unknown dimensions that one compiled module must serve at every size (issue 31,
docs/dynamic_shapes.md): a CNN with a `?` batch, and a 1-layer BERT with `?` batch and
sequence length. Their runs are at several sizes, so that a test compiles once and runs all."""

import numpy as np

from .models import keras_frozen, keras_seed
from .registry import STYLE_KERAS, TOL_MODEL, case, normal, tf


@case("dynamic_batch", "keras",
      """A small Keras CNN with a None batch: Conv2D + BatchNormalization + ReLU, DepthwiseConv2D
      + BatchNormalization, Flatten (a Reshape whose shape is computed from tf.shape), Dense,
      softmax; frozen. Runs at batch 1, 3, 4 and 8 (one module serves them all).""",
      tol=TOL_MODEL, style=STYLE_KERAS, expect_ops=["Conv2D", "DepthwiseConv2dNative", "Reshape"])
def _dynamic_batch(rng):
    keras = keras_seed(rng)
    L = keras.layers
    model = keras.Sequential([keras.Input((8, 8, 3)), L.Conv2D(8, 3, strides=2, padding="same"),
                              L.BatchNormalization(), L.ReLU(), L.DepthwiseConv2D(3, padding="same"),
                              L.BatchNormalization(), L.ReLU(6.0), L.Flatten(), L.Dense(10),
                              L.Softmax()])
    for bn in (model.layers[1], model.layers[4]):
        n = bn.moving_mean.shape[0]
        bn.moving_mean.assign(normal(rng, n, scale=0.3))
        bn.moving_variance.assign(np.abs(normal(rng, n)) + 0.5)
    return keras_frozen(model, tf.TensorSpec([None, 8, 8, 3], tf.float32, name="x"),
                        [(f"batch{n}", {"x:0": normal(rng, n, 8, 8, 3)}) for n in (1, 3, 4, 8)])


@case("dynamic_bert", "keras",
      """A 1-layer BERT-like encoder with None batch AND sequence length: token and position
      embeddings (GatherV2; the positions a Range up to tf.shape(ids)[1]), LayerNormalization,
      MultiHeadAttention (2 heads), a gelu feed-forward block; frozen. Runs at sequence lengths
      5, 9 and 16 (batches 2, 3, 1).""",
      tol=TOL_MODEL, style=STYLE_KERAS, expect_ops=["Einsum", "Softmax", "Range", "GatherV2"])
def _dynamic_bert(rng):
    keras = keras_seed(rng)
    L = keras.layers
    tokens, positions = L.Embedding(50, 16), L.Embedding(32, 16)
    ln1, ln2 = L.LayerNormalization(), L.LayerNormalization()
    mha = L.MultiHeadAttention(num_heads=2, key_dim=8)
    ff1, ff2 = L.Dense(32, activation="gelu"), L.Dense(16)
    for layer, shape in ((tokens, (None, None)), (positions, (None,))):
        layer.build(shape)
    ln1.build((None, None, 16))
    ln2.build((None, None, 16))
    mha.build((None, None, 16), (None, None, 16))
    ff1.build((None, None, 16))
    ff2.build((None, None, 32))

    def encoder(ids):
        h = tokens(ids) + positions(tf.range(tf.shape(ids)[1]))[tf.newaxis]
        h = ln1(h)
        h = ln1(h + mha(h, h))
        return ln2(h + ff2(ff1(h)))

    ids = lambda b, s: rng.integers(0, 50, (b, s)).astype(np.int32)  # noqa: E731
    return keras_frozen(type("M", (), {"__call__": lambda self, x, training=False: encoder(x)})(),
                        tf.TensorSpec([None, None], tf.int32, name="ids"),
                        [("b2_s5", {"ids:0": ids(2, 5)}), ("b3_s9", {"ids:0": ids(3, 9)}),
                         ("b1_s16", {"ids:0": ids(1, 16)})])
