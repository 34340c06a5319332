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


@case("dynamic_bert_ops", "keras",
      """A 1-layer BERT written with raw ops as google-research/bert's modeling.py writes it, with
      input ids, mask and segment ids int32[None, None]: one_hot segments reshaped to [-1, 2] and
      back to [-1, seq, hidden] with seq = tf.shape(ids)[1], position embeddings cut by a Slice of
      size [seq, -1], attention whose second matmul contracts over the unknown length, and a pooler
      on h[:, 0]. Runs at (batch, length) 2x5, 3x9, 1x16 and 6x2.""",
      tol=TOL_MODEL, expect_ops=["OneHot", "Slice", "BatchMatMulV2", "StridedSlice"])
def _dynamic_bert_ops(rng):
    hidden, heads, vocab = 16, 2, 50
    head = hidden // heads
    ids, mask, segments = (tf.compat.v1.placeholder(tf.int32, [None, None], name=n)
                           for n in ("ids", "mask", "segments"))
    weight = lambda *shape: tf.constant(normal(rng, *shape, scale=0.3))  # noqa: E731
    seq = tf.shape(ids)[1]
    words = tf.gather(weight(vocab, hidden), ids)
    types = tf.reshape(tf.matmul(tf.reshape(tf.one_hot(segments, 2), [-1, 2]), weight(2, hidden)), [-1, seq, hidden])
    positions = tf.slice(weight(32, hidden), [0, 0], tf.stack([seq, -1]))
    h = tf.reshape(words + types + positions, [-1, hidden])
    adder = (1.0 - tf.cast(tf.reshape(mask, [-1, 1, 1, seq]), tf.float32)) * -10000.0
    split = lambda t: tf.transpose(tf.reshape(t, [-1, seq, heads, head]), [0, 2, 1, 3])  # noqa: E731
    q, k, v = (split(tf.matmul(h, weight(hidden, hidden))) for _ in range(3))
    scores = tf.matmul(q, k, transpose_b=True) * float(1 / np.sqrt(head)) + adder
    context = tf.reshape(tf.transpose(tf.matmul(tf.nn.softmax(scores), v), [0, 2, 1, 3]), [-1, hidden])
    h = tf.tanh(tf.matmul(context, weight(hidden, hidden)) + h)
    first = tf.reshape(h, [-1, seq, hidden])[:, 0]
    logits = tf.identity(tf.matmul(tf.tanh(first), weight(hidden, 2)), name="logits")

    def feeds(b, s):
        lengths = rng.integers(1, s + 1, b)
        m = (np.arange(s) < lengths[:, None]).astype(np.int32)
        return {ids: rng.integers(0, vocab, (b, s)).astype(np.int32), mask: m,
                segments: (np.arange(s) >= (lengths // 2)[:, None]).astype(np.int32) * m}
    return [logits], [(f"b{b}_s{s}", feeds(b, s)) for b, s in ((2, 5), (3, 9), (1, 16), (6, 2))]
