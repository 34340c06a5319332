"""Conformance cases for whole models: Keras models frozen to constants, and small training
graphs on resource variables with optimizers' resource ops."""

import numpy as np

from tf_corpus import GRAPH_SEED, session, train_case

from .registry import STYLE_KERAS, TOL_MODEL, TOL_TRAIN, Built, case, frozen_graph, normal, ph, tf, v1

# ============================================================================================
# Keras models, frozen


def keras_frozen(model, spec, runs, **extra):
    gd, outputs, _ = frozen_graph(lambda x: model(x, training=False), spec)
    return Built(gd, outputs, runs, extra)


def keras_seed(rng):
    import keras
    keras.utils.set_random_seed(int(rng.integers(0, 2**31 - 1)))
    return keras


@case("keras_mlp_gelu", "keras",
      """Keras Dense layers (gelu (exact, Erfc), relu, softmax), frozen: MatMul, BiasAdd and the
      activations' decompositions.""", tol=TOL_MODEL, style=STYLE_KERAS,
      expect_ops=["MatMul", "BiasAdd", "Softmax"])
def _keras_mlp(rng):
    keras = keras_seed(rng)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="gelu"),
                              keras.layers.Dense(8, activation="relu"), keras.layers.Dense(4, activation="softmax")])
    return keras_frozen(model, tf.TensorSpec([None, 8], tf.float32, name="x"),
                        [("batch3", {"x:0": normal(rng, 3, 8)}), ("batch1", {"x:0": normal(rng, 1, 8)}),
                         ("empty", {"x:0": np.zeros((0, 8), np.float32)})])


@case("keras_conv_bn", "keras",
      """Keras Conv2D (strides 2, same) + BatchNormalization (non-trivial moving statistics) +
      ReLU, DepthwiseConv2D, MaxPooling2D, GlobalAveragePooling2D, Dense; frozen for
      inference.""", tol=TOL_MODEL, style=STYLE_KERAS, expect_ops=["Conv2D", "MaxPool"])
def _keras_conv(rng):
    keras = keras_seed(rng)
    L = keras.layers
    model = keras.Sequential([keras.Input((8, 8, 3)), L.Conv2D(4, 3, strides=2, padding="same"),
                              L.BatchNormalization(), L.ReLU(), L.DepthwiseConv2D(3, padding="same"),
                              L.MaxPooling2D(2), L.GlobalAveragePooling2D(), L.Dense(3)])
    bn = model.layers[1]
    bn.moving_mean.assign(normal(rng, 4, scale=0.3))
    bn.moving_variance.assign(np.abs(normal(rng, 4)) + 0.5)
    bn.gamma.assign(normal(rng, 4, scale=0.2) + 1.0)
    bn.beta.assign(normal(rng, 4, scale=0.2))
    return keras_frozen(model, tf.TensorSpec([None, 8, 8, 3], tf.float32, name="x"),
                        [("batch2", {"x:0": normal(rng, 2, 8, 8, 3)}), ("batch1", {"x:0": normal(rng, 1, 8, 8, 3)})])


@case("keras_attention_block", "keras",
      """A pre-norm transformer block from Keras layers: LayerNormalization, MultiHeadAttention
      (2 heads, key_dim 4: Einsum, Softmax), residual adds, Dense with gelu; frozen.""",
      tol=TOL_MODEL, style=STYLE_KERAS, expect_ops=["Einsum", "Softmax", "Rsqrt"])
def _keras_attention(rng):
    keras = keras_seed(rng)
    L = keras.layers
    inp = keras.Input((5, 8))
    h = L.LayerNormalization()(inp)
    h = inp + L.MultiHeadAttention(num_heads=2, key_dim=4)(h, h)
    h = h + L.Dense(8, activation="gelu")(L.LayerNormalization()(h))
    model = keras.Model(inp, h)
    return keras_frozen(model, tf.TensorSpec([None, 5, 8], tf.float32, name="x"),
                        [("batch2", {"x:0": normal(rng, 2, 5, 8)}), ("batch1", {"x:0": normal(rng, 1, 5, 8)})])


@case("keras_embedding", "keras",
      """Keras Embedding (20 x 6) on int32 ids, GlobalAveragePooling1D, Dense; frozen (the
      embedding's ResourceGather becomes a GatherV2 on a Const).""",
      tol=TOL_MODEL, style=STYLE_KERAS, expect_ops=["GatherV2"])
def _keras_embedding(rng):
    keras = keras_seed(rng)
    L = keras.layers
    model = keras.Sequential([keras.Input((7,), dtype="int32"), L.Embedding(20, 6),
                              L.GlobalAveragePooling1D(), L.Dense(3)])
    return keras_frozen(model, tf.TensorSpec([None, 7], tf.int32, name="ids"),
                        [("batch2", {"ids:0": rng.integers(0, 20, (2, 7)).astype(np.int32)}),
                         ("edges", {"ids:0": np.array([[0] * 7, [19] * 7, [0, 19, 5, 5, 5, 1, 2]], np.int32)})])


# ============================================================================================
# training (resource variables, optimizers' resource ops)


def train_builder(build_graph, steps, pool_fn, batch, hyper):
    """A training case's builder: build_graph() -> (x, y_, loss, train_op, init, extra fetches)
    in a graph; the data pool comes from pool_fn(rng) as (pool_x, pool_y). x may be a tuple of
    placeholders (a model with several inputs, as BERT's ids, mask and segments), pool_x then a
    tuple of arrays in the same order. TF runs the protocol here (tf_corpus's train_case); the
    builder returns (graph_def, case.json, arrays)."""
    def build(defn, rng):
        pool_x, pool_y = pool_fn(rng)
        bidx = np.stack([rng.choice(len(pool_y), batch, replace=False) for _ in range(steps)]).astype(np.int32)
        g = tf.Graph()
        with g.as_default():
            v1.set_random_seed(GRAPH_SEED)
            x, y_, loss, train_op, init, fetches = build_graph()
            xs, pool_xs = (x, pool_x) if isinstance(x, tuple) else ((x,), (pool_x,))
            pool = {**dict(zip(xs, pool_xs)), y_: pool_y}
            sess = session(g)
            case_json, arrays = train_case(
                defn.name, defn.description, defn.style, g, sess, feeds=list(pool), fetches=[loss, *fetches],
                loss=loss, train_op=train_op, init_op=init, steps=steps, pool=pool,
                batch_index=bidx, hyperparameters=dict(hyper, batch=batch), tolerance=defn.tolerance,
                evals=[("pool", pool, [loss, *fetches])])
            sess.close()
        return g.as_graph_def(), case_json, arrays
    return build


def regression_pool(rng, n=48, d=4):
    x = normal(rng, n, d)
    y = (x @ normal(rng, d, 2) + 0.1 * normal(rng, n, 2)).astype(np.float32)
    return x, y


def _mlp_vars(d_in, d_hidden, d_out):
    with v1.variable_scope("mlp", use_resource=True):
        w1 = v1.get_variable("w1", [d_in, d_hidden])
        b1 = v1.get_variable("b1", [d_hidden], initializer=v1.zeros_initializer())
        w2 = v1.get_variable("w2", [d_hidden, d_out])
        b2 = v1.get_variable("b2", [d_out], initializer=v1.zeros_initializer())
    return w1, b1, w2, b2


def _train_optimizers_graph():
    x, y_ = ph("x", shape=[None, 4]), ph("y", shape=[None, 2])
    w1, b1, w2, b2 = _mlp_vars(4, 8, 2)
    pred = tf.matmul(tf.tanh(tf.matmul(x, w1) + b1), w2) + b2
    loss = tf.reduce_mean(tf.square(pred - y_), name="loss")
    train = tf.group(
        v1.train.RMSPropOptimizer(0.01, decay=0.9, momentum=0.5, centered=True).minimize(loss, var_list=[w1]),
        v1.train.AdagradOptimizer(0.1).minimize(loss, var_list=[b1, b2]),
        v1.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True).minimize(loss, var_list=[w2]),
        name="train")
    return x, y_, loss, train, v1.global_variables_initializer(), [pred]


case("train_optimizers", "train",
     """MLP 4-8(tanh)-2 regression, MSE, on resource variables, three optimizers in one grouped
     train op: the first weight by RMSPropOptimizer(0.01, decay 0.9, momentum 0.5, centered)
     (ResourceApplyCenteredRMSProp, mg/ms/mom slots), the biases by AdagradOptimizer(0.1)
     (ResourceApplyAdagrad), the second weight by nesterov Momentum(0.05, 0.9)
     (ResourceApplyMomentum). 10 steps of batch 12, then loss and predictions on the pool.""",
     tol=TOL_TRAIN, style="tf.compat.v1 graph mode, resource variables", kind="train",
     expect_ops=["ResourceApplyCenteredRMSProp", "ResourceApplyAdagrad", "ResourceApplyMomentum"])(
    train_builder(_train_optimizers_graph, 10, regression_pool, 12,
                  {"optimizer": "RMSProp (w1), Adagrad (b1, b2), nesterov Momentum (w2)",
                   "learning_rate": {"rmsprop": 0.01, "adagrad": 0.1, "momentum": 0.05},
                   "rmsprop": {"decay": 0.9, "momentum": 0.5, "centered": True}, "momentum": 0.9}))


def _embedding_pool(rng, n=40):
    ids = rng.integers(0, 12, (n, 5)).astype(np.int32)
    table = normal(rng, 12, 2)
    return ids, table[ids].mean(1).astype(np.float32)


def _train_embedding_graph():
    ids, y_ = ph("ids", tf.int32, [None, 5]), ph("y", shape=[None, 2])
    with v1.variable_scope("emb", use_resource=True):
        table = v1.get_variable("table", [12, 3], initializer=v1.random_uniform_initializer(-0.5, 0.5))
        w = v1.get_variable("w", [3, 2])
    pred = tf.matmul(tf.reduce_mean(tf.nn.embedding_lookup(table, ids), 1), w)
    loss = tf.reduce_mean(tf.square(pred - y_), name="loss")
    train = v1.train.AdamOptimizer(0.05).minimize(loss)
    return ids, y_, loss, train, v1.global_variables_initializer(), [pred]


case("train_embedding_adam", "train",
     """Embedding lookup on a resource variable (ResourceGather) trained with Adam: the sparse
     gradient updates the table and its slots with ResourceScatterAdd (duplicate ids in a
     batch add up), the dense weight with ResourceApplyAdam. 10 steps of batch 8.""",
     tol=TOL_TRAIN, style="tf.compat.v1 graph mode, resource variables", kind="train",
     expect_ops=["ResourceGather", "ResourceScatterAdd", "ResourceApplyAdam"])(
    train_builder(_train_embedding_graph, 10, _embedding_pool, 8,
                  {"optimizer": "Adam", "learning_rate": 0.05}))


def _train_conv_bn_graph():
    x, y_ = ph("x", shape=[None, 6, 6, 2]), ph("y", tf.int32, [None])
    with v1.variable_scope("cnn", use_resource=True):
        w = v1.get_variable("conv_w", [3, 3, 2, 4])
        gamma = v1.get_variable("bn/gamma", [4], initializer=v1.ones_initializer())
        beta = v1.get_variable("bn/beta", [4], initializer=v1.zeros_initializer())
        moving_mean = v1.get_variable("bn/moving_mean", [4], initializer=v1.zeros_initializer(), trainable=False)
        moving_var = v1.get_variable("bn/moving_variance", [4], initializer=v1.ones_initializer(), trainable=False)
        dense = v1.get_variable("dense_w", [4, 3])
    h = tf.nn.conv2d(x, w, 1, "SAME")
    h, mean, var = v1.nn.fused_batch_norm(h, gamma, beta, is_training=True)
    updates = [v1.assign_sub(moving_mean, (moving_mean - mean) * 0.1),  # what Keras/tf.layers write
               v1.assign_sub(moving_var, (moving_var - var) * 0.1)]
    h = tf.reduce_mean(tf.nn.relu(h), [1, 2])
    logits = tf.matmul(h, dense)
    xent = tf.raw_ops.SparseSoftmaxCrossEntropyWithLogits(features=logits, labels=y_).loss
    loss = tf.reduce_mean(xent, name="loss")
    with tf.control_dependencies(updates):
        train = v1.train.GradientDescentOptimizer(0.2).minimize(loss)
    return x, y_, loss, train, v1.global_variables_initializer(), [logits]


def _image_pool(rng, n=24):
    labels = rng.integers(0, 3, n).astype(np.int32)
    x = normal(rng, n, 6, 6, 2) + labels[:, None, None, None].astype(np.float32)
    return x, labels


case("train_conv_batchnorm", "train",
     """Conv2D + FusedBatchNormV3 (is_training, resource gamma/beta) + ReLU + mean + dense,
     the SparseSoftmaxCrossEntropyWithLogits op, SGD 0.2; the moving mean/variance updated with
     AssignSubVariableOp as control dependencies of the train op, as tf.layers did:
     FusedBatchNormGradV3, Conv2DBackpropFilter. 8 steps of batch 6.""",
     tol=TOL_TRAIN, style="tf.compat.v1 graph mode, resource variables", kind="train",
     expect_ops=["FusedBatchNormV3", "FusedBatchNormGradV3", "Conv2DBackpropFilter", "AssignSubVariableOp"])(
    train_builder(_train_conv_bn_graph, 8, _image_pool, 6,
                  {"optimizer": "GradientDescent", "learning_rate": 0.2}))


