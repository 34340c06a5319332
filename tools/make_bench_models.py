#!/usr/bin/env python3
"""Write the models benchmarks/models.py times, with TensorFlow's own results, into bench-models/.

TensorFlow is a development tool only, run from its own venv:

    .tfvenv/bin/python tools/make_bench_models.py                        # every model
    .tfvenv/bin/python tools/make_bench_models.py resnet50_train bert2_infer
    .tfvenv/bin/python tools/make_bench_models.py --resnet50-train-graph 224   # graph only, for GPUs
    .tfvenv/bin/python tools/make_bench_models.py --keras-resnet50-graph 224   # the same, inference

Each model is a case folder in the shared corpus's format (../shared/graphs/README.md):
graph.pb, case.json, data.npz, ops.json, but no graph.pbtxt (case.json's graph_pbtxt is null):
weights as Const nodes make text GraphDefs of hundreds of MB. The folders are large (ResNet-50's
initial and final variables are stored in full: 280 MB of the 440), so bench-models/ is kept out of
git. The cases are written the way tools/make_conformance_corpus.py writes its own (its
record(), and the builders' helpers in tools/conformance_cases), with fixed seeds: TensorFlow
runs each graph as written, one thread, oneDNN off, deterministic ops. Training cases record
a few steps of the protocol (their first loss is what the benchmark checks); inference cases
one run per batch size.

The models (random weights: nothing is downloaded):
- resnet50_train: ResNet-50 v1 (bottleneck stride on the 1x1 conv), 64x64 RGB, 1000 classes,
  batch 4, resource variables, FusedBatchNormV3 in training mode with the moving statistics
  updated by AssignSubVariableOp, sparse softmax cross-entropy, Momentum 0.9;
- keras_mobilenetv2: keras.applications.MobileNetV2 (alpha 1.0), 96x96, frozen; runs of batch 2
  and 5 (the Session compiles per batch size). Keras 3 writes its BatchNormalization as
  arithmetic (Sub, Rsqrt, Mul, AddV2), not FusedBatchNormV3;
- keras_resnet50: keras.applications.ResNet50, 64x64, frozen, batch 2;
- bert2_infer / bert2_train: a 2-layer BERT (hidden 128, 2 heads, intermediate 512, sequence
  32, vocabulary 30522) written with raw ops as google-research/bert's modeling.py writes it
  (gather embeddings, one-hot token types, layer norm from moments, tanh-approximated gelu,
  additive attention mask), a pooler and a 2-class head; batch 8. Inference on Const weights;
  training on resource variables with Adam (the embedding's sparse gradient included);
- bert2_dynseq: bert2_infer with the sequence length unknown too ([None, None] inputs).
"""

import argparse
import json
import sys
from pathlib import Path

# tf_corpus sets the reference environment before it imports TensorFlow: import it first.
import tf_corpus  # noqa: F401

import numpy as np
import tensorflow as tf
from conformance_cases.models import keras_frozen, keras_seed, train_builder
from conformance_cases.registry import Built, CaseDef, normal, v1, v1_graph
from tf_corpus import GRAPH_SEED
from make_conformance_corpus import record

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "bench-models"
TOL_BENCH = {"rtol": 1e-3, "atol": 1e-5}   # deep models: TF's own builds differ by ~1e-4
STYLE_V1_RESOURCE = "tf.compat.v1 graph mode, resource variables"
STYLE_KERAS = "Keras 3 application in a tf.function, frozen with convert_variables_to_constants_v2"

# ============================================================================================
# ResNet-50 v1 training


def _batch_norm(x, updates, momentum=0.99):
    """FusedBatchNormV3 in training mode; the moving statistics' updates go to `updates`, to
    run as control dependencies of the train op, as tf.layers and Keras did."""
    c = x.shape[-1]
    gamma = v1.get_variable("gamma", [c], initializer=v1.ones_initializer())
    beta = v1.get_variable("beta", [c], initializer=v1.zeros_initializer())
    mean_var = v1.get_variable("moving_mean", [c], initializer=v1.zeros_initializer(), trainable=False)
    var_var = v1.get_variable("moving_variance", [c], initializer=v1.ones_initializer(), trainable=False)
    y, mean, var = v1.nn.fused_batch_norm(x, gamma, beta, epsilon=1.001e-5, is_training=True)
    updates += [v1.assign_sub(mean_var, (mean_var - mean) * (1 - momentum)),
                v1.assign_sub(var_var, (var_var - var) * (1 - momentum))]
    return y


def _conv_bn(x, filters, k, stride, name, updates, relu=True):
    with v1.variable_scope(name):
        w = v1.get_variable("kernel", [k, k, x.shape[-1], filters],
                            initializer=v1.variance_scaling_initializer(2.0, distribution="truncated_normal"))
        y = _batch_norm(tf.nn.conv2d(x, w, stride, "SAME"), updates)
    return tf.nn.relu(y) if relu else y


def _bottleneck(x, filters, stride, name, updates):
    """ResNet v1's bottleneck: the stride on the first 1x1 conv; a projection shortcut where
    the shape changes."""
    with v1.variable_scope(name):
        h = _conv_bn(x, filters, 1, stride, "conv1", updates)
        h = _conv_bn(h, filters, 3, 1, "conv2", updates)
        h = _conv_bn(h, 4 * filters, 1, 1, "conv3", updates, relu=False)
        shortcut = x
        if stride != 1 or x.shape[-1] != 4 * filters:
            shortcut = _conv_bn(x, 4 * filters, 1, stride, "shortcut", updates, relu=False)
        return tf.nn.relu(h + shortcut)


def _resnet50_graph(classes=1000, size=64):
    x = v1.placeholder(tf.float32, [None, size, size, 3], name="images")
    y_ = v1.placeholder(tf.int32, [None], name="labels")
    updates = []
    with v1.variable_scope("resnet50", use_resource=True):
        h = _conv_bn(x, 64, 7, 2, "conv1", updates)
        h = tf.nn.max_pool2d(h, 3, 2, "SAME")
        for stage, (blocks, filters) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512))):
            for b in range(blocks):
                stride = 2 if b == 0 and stage > 0 else 1
                h = _bottleneck(h, filters, stride, f"stage{stage + 2}/block{b + 1}", updates)
        h = tf.reduce_mean(h, [1, 2])
        w = v1.get_variable("fc/kernel", [h.shape[-1], classes])
        b = v1.get_variable("fc/bias", [classes], initializer=v1.zeros_initializer())
        logits = tf.add(tf.matmul(h, w), b, name="logits")
    xent = tf.raw_ops.SparseSoftmaxCrossEntropyWithLogits(features=logits, labels=y_).loss
    loss = tf.reduce_mean(xent, name="loss")
    with tf.control_dependencies(updates):
        train = v1.train.MomentumOptimizer(0.01, 0.9).minimize(loss)
    return x, y_, loss, train, v1.global_variables_initializer(), [logits]


def _image_pool(rng, n=8, size=64, classes=1000):
    return normal(rng, n, size, size, 3), rng.integers(0, classes, n).astype(np.int32)


# ============================================================================================
# Keras applications, frozen


def _calibrate_batchnorm(model, rng, images):
    """Random BatchNorm scales and offsets, and moving statistics taken from a batch, as a
    trained model's are: a freshly built model's BatchNorms are the identity, which lets its
    activations blow up until ReLU6 clips every input to the same output. One training-mode
    call with momentum 0 sets every moving mean and variance to that batch's statistics."""
    import keras
    norms = [layer for layer in model.layers if isinstance(layer, keras.layers.BatchNormalization)]
    for layer in norms:  # scale=False (Inception) has no gamma, center=False no beta
        c = layer.moving_mean.shape[0]
        if layer.gamma is not None:
            layer.gamma.assign(rng.uniform(0.8, 1.2, c).astype(np.float32))
        if layer.beta is not None:
            layer.beta.assign(normal(rng, c, scale=0.1))
        layer.momentum = 0.0
    model(images, training=True)
    for layer in norms:
        layer.momentum = 0.99


def _keras_app(app, size, batches):
    def build(rng):
        keras = keras_seed(rng)
        model = getattr(keras.applications, app)(input_shape=(size, size, 3), weights=None)
        _calibrate_batchnorm(model, rng, normal(rng, 8, size, size, 3))
        runs = [(f"batch{b}", {"images:0": normal(rng, b, size, size, 3)}) for b in batches]
        return keras_frozen(model, tf.TensorSpec([None, size, size, 3], tf.float32, name="images"), runs)
    return build


# ============================================================================================
# BERT, 2 layers


BERT = {"vocab": 30522, "hidden": 128, "layers": 2, "heads": 2, "intermediate": 512, "seq": 32,
        "max_position": 512, "classes": 2, "batch": 8}


def _layer_norm(x, make_var, name):
    mean, var = tf.nn.moments(x, [-1], keepdims=True)
    gamma = make_var(f"{name}/gamma", [x.shape[-1]], "ones")
    beta = make_var(f"{name}/beta", [x.shape[-1]], "zeros")
    return (x - mean) * tf.math.rsqrt(var + 1e-12) * gamma + beta


def _dense(x, units, make_var, name, activation=None):
    y = tf.matmul(x, make_var(f"{name}/kernel", [x.shape[-1], units], "normal")) + \
        make_var(f"{name}/bias", [units], "zeros")
    return activation(y) if activation else y


def _gelu(x):
    """BERT's tanh approximation, written out as modeling.py does."""
    return 0.5 * x * (1.0 + tf.tanh(np.sqrt(2 / np.pi).astype(np.float32) * (x + 0.044715 * tf.pow(x, 3))))


def _bert(ids, mask, segments, make_var):
    """Logits [batch, classes] of a BERT encoder with a pooler and a classification head;
    tensors are [batch * seq, hidden] between layers, as modeling.py keeps them. Where the ids'
    sequence length is unknown (bert2_dynseq), it is read at run time: tf.shape(ids)[1]."""
    c = BERT
    hidden, heads = c["hidden"], c["heads"]
    seq = ids.shape[1] if ids.shape[1] is not None else tf.shape(ids)[1]
    head = hidden // heads
    words = tf.gather(make_var("embeddings/word", [c["vocab"], hidden], "normal"), ids)
    types = tf.reshape(tf.matmul(tf.reshape(tf.one_hot(segments, 2), [-1, 2]),
                                 make_var("embeddings/token_type", [2, hidden], "normal")), [-1, seq, hidden])
    positions = tf.slice(make_var("embeddings/position", [c["max_position"], hidden], "normal"), [0, 0],
                         tf.stack([seq, -1]) if isinstance(seq, tf.Tensor) else [seq, -1])
    h = _layer_norm(tf.reshape(words + types + positions, [-1, hidden]), make_var, "embeddings/layer_norm")
    adder = (1.0 - tf.cast(tf.reshape(mask, [-1, 1, 1, seq]), tf.float32)) * -10000.0

    def split_heads(t):
        return tf.transpose(tf.reshape(t, [-1, seq, heads, head]), [0, 2, 1, 3])

    for layer in range(c["layers"]):
        p = f"layer_{layer}"
        q, k, v = (split_heads(_dense(h, hidden, make_var, f"{p}/attention/{n}")) for n in ("query", "key", "value"))
        scores = tf.matmul(q, k, transpose_b=True) * float(1 / np.sqrt(head)) + adder
        context = tf.reshape(tf.transpose(tf.matmul(tf.nn.softmax(scores), v), [0, 2, 1, 3]), [-1, hidden])
        h = _layer_norm(_dense(context, hidden, make_var, f"{p}/attention/output") + h, make_var,
                        f"{p}/attention/layer_norm")
        inner = _dense(h, c["intermediate"], make_var, f"{p}/intermediate", _gelu)
        h = _layer_norm(_dense(inner, hidden, make_var, f"{p}/output") + h, make_var, f"{p}/output/layer_norm")
    first = tf.reshape(h, [-1, seq, hidden])[:, 0]
    pooled = _dense(first, hidden, make_var, "pooler", tf.tanh)
    return tf.identity(_dense(pooled, c["classes"], make_var, "classifier"), name="logits")


def _bert_inputs(seq=BERT["seq"]):
    shape = [None, seq]
    return tuple(v1.placeholder(tf.int32, shape, name=n) for n in ("input_ids", "input_mask", "segment_ids"))


def _bert_batch(rng, n, seq=BERT["seq"]):
    """Token ids, a padding mask (lengths 8..seq) and two segments per example."""
    ids = rng.integers(0, BERT["vocab"], (n, seq)).astype(np.int32)
    lengths = rng.integers(8, seq + 1, n)
    mask = (np.arange(seq) < lengths[:, None]).astype(np.int32)
    segments = (np.arange(seq) >= (lengths // 2)[:, None]).astype(np.int32) * mask
    return ids, mask, segments


def _const_weights(rng):
    """make_var for Const weights (truncated-normal-like, stddev 0.02, as BERT initialises them)."""
    def make_var(name, shape, init):
        value = {"ones": np.ones(shape, np.float32), "zeros": np.zeros(shape, np.float32)}.get(init)
        return tf.constant(normal(rng, *shape, scale=0.02) if value is None else value, name=name)
    return make_var


def _bert_infer(rng):
    inputs = _bert_inputs()
    logits = _bert(*inputs, _const_weights(rng))
    batch = _bert_batch(rng, BERT["batch"])
    return [logits], [(f"batch{BERT['batch']}", dict(zip(inputs, batch)))]


# (batch, sequence length) of bert2_dynseq's recorded runs
DYNSEQ_RUNS = ((8, 16), (8, 64), (2, 128))


def _bert_dynseq(rng):
    """bert2_infer's weights and layers with an unknown sequence length as well as batch."""
    inputs = _bert_inputs(seq=None)
    logits = _bert(*inputs, _const_weights(rng))
    return [logits], [(f"batch{n}_seq{s}", dict(zip(inputs, _bert_batch(rng, n, s)))) for n, s in DYNSEQ_RUNS]


def _bert_train_graph():
    def make_var(name, shape, init):
        initializer = {"ones": v1.ones_initializer(), "zeros": v1.zeros_initializer(),
                       "normal": v1.truncated_normal_initializer(stddev=0.02)}[init]
        return v1.get_variable(name, shape, initializer=initializer)

    inputs = _bert_inputs()
    labels = v1.placeholder(tf.int32, [None], name="labels")
    with v1.variable_scope("bert", use_resource=True):
        logits = _bert(*inputs, make_var)
    xent = tf.raw_ops.SparseSoftmaxCrossEntropyWithLogits(features=logits, labels=labels).loss
    loss = tf.reduce_mean(xent, name="loss")
    train = v1.train.AdamOptimizer(1e-3).minimize(loss)
    return inputs, labels, loss, train, v1.global_variables_initializer(), [logits]


def _bert_pool(rng, n=16):
    return _bert_batch(rng, n), rng.integers(0, BERT["classes"], n).astype(np.int32)


# ============================================================================================
# the models


def _case(name, description, build, kind="inference", style=STYLE_V1_RESOURCE, expect_ops=()):
    return CaseDef(name, "bench", " ".join(description.split()), style, TOL_BENCH, build, kind, tuple(expect_ops))


def _v1_inference(build):
    """A builder of a tf.compat.v1 graph run in a fresh graph (registry.v1_graph), as record() runs Builts."""
    def built(rng) -> Built:
        return v1_graph(build, rng)
    return built


MODELS = {c.name: c for c in (
    _case("resnet50_train", """ResNet-50 v1 training step: 64x64x3 images, 1000 classes, batch 4; resource
          variables; FusedBatchNormV3 (is_training) with AssignSubVariableOp moving-statistics updates;
          sparse softmax cross-entropy; Momentum(0.01, 0.9). 3 steps recorded.""",
          train_builder(_resnet50_graph, 3, _image_pool, 4,
                        {"optimizer": "Momentum", "learning_rate": 0.01, "momentum": 0.9}),
          kind="train", expect_ops=["FusedBatchNormV3", "FusedBatchNormGradV3", "ResourceApplyMomentum",
                                    "Conv2DBackpropFilter", "Conv2DBackpropInput", "MaxPoolGrad"]),
    _case("keras_mobilenetv2", """keras.applications.MobileNetV2 (alpha 1.0, 1000 classes, random weights,
          BatchNorm statistics from a batch), 96x96x3, frozen; runs of batch 2 and batch 5.""",
          _keras_app("MobileNetV2", 96, (2, 5)), style=STYLE_KERAS,
          expect_ops=["Conv2D", "DepthwiseConv2dNative", "Rsqrt", "Relu6"]),
    _case("keras_resnet50", """keras.applications.ResNet50 (1000 classes, random weights, BatchNorm
          statistics from a batch), 64x64x3, frozen; batch 2.""",
          _keras_app("ResNet50", 64, (2,)), style=STYLE_KERAS, expect_ops=["Conv2D", "Rsqrt", "MaxPool"]),
    _case("bert2_infer", """2-layer BERT (hidden 128, 2 heads, intermediate 512, sequence 32, vocabulary
          30522) with pooler and 2-class head, as google-research/bert's modeling.py writes it; Const
          weights; input_ids, input_mask, segment_ids int32; batch 8.""",
          _v1_inference(_bert_infer), style="tf.compat.v1 graph mode, Const weights",
          expect_ops=["GatherV2", "BatchMatMulV2", "Softmax", "OneHot", "Tanh"]),
    _case("bert2_dynseq", """bert2_infer with input_ids, input_mask and segment_ids int32[?, ?]: batch and
          sequence length unknown (positions sliced to tf.shape(ids)[1]); runs at (batch, length) 8x16,
          8x64, 2x128. For the dynamic-shapes benchmark (benchmarks/dynamic_shapes.py --seq-lens).""",
          _v1_inference(_bert_dynseq), style="tf.compat.v1 graph mode, Const weights",
          expect_ops=["GatherV2", "BatchMatMulV2", "Softmax", "OneHot", "Shape"]),
    _case("bert2_train", """The 2-layer BERT of bert2_infer on resource variables (truncated normal
          stddev 0.02), sparse softmax cross-entropy on 2 classes, Adam(1e-3): the word embedding's
          sparse gradient updates it and its slots by ResourceScatterAdd. Batch 8, 3 steps recorded.""",
          train_builder(_bert_train_graph, 3, _bert_pool, BERT["batch"], {"optimizer": "Adam", "learning_rate": 1e-3}),
          kind="train", expect_ops=["ResourceGather", "BatchMatMulV2", "ResourceApplyAdam"]),
)}


def write_resnet50_train_graph(size: int, out: Path) -> Path:
    """ResNet-50 training at `size`x`size`: graph.pb and graph.json (case.json's feeds, init_op,
    train_op and loss), no TensorFlow run and no data, for benchmarks/train_throughput.py. The
    graph seed makes the initializers deterministic, and hlobridge's random kernels draw TF's
    numbers, so every Session's init starts from the same weights."""
    folder = out / f"resnet50_train_{size}"
    folder.mkdir(parents=True, exist_ok=True)
    g = tf.Graph()
    with g.as_default():
        v1.set_random_seed(GRAPH_SEED)
        x, y_, loss, train, init, _ = _resnet50_graph(size=size)
    (folder / "graph.pb").write_bytes(g.as_graph_def().SerializeToString())
    feeds = [{"name": t.name, "dtype": t.dtype.name, "shape": t.shape.as_list()} for t in (x, y_)]
    meta = {"name": folder.name, "feeds": feeds, "init_op": init.name, "train_op": train.name, "loss": loss.name}
    (folder / "graph.json").write_text(json.dumps(meta, indent=2) + "\n")
    return folder


BERT_BASE = {"hidden": 768, "layers": 12, "heads": 12, "intermediate": 3072, "seq": 128}


def write_bert_base_train_graph(out: Path) -> Path:
    """BERT-base training (12 layers, hidden 768, sequence 128, Adam) as graph.pb and graph.json,
    like write_resnet50_train_graph: initializers, no weights (a few MB), for benchmarks/gpu_check.py."""
    folder = out / "bert_base_train"
    folder.mkdir(parents=True, exist_ok=True)
    saved = dict(BERT)
    BERT.update(BERT_BASE)
    try:
        g = tf.Graph()
        with g.as_default():
            v1.set_random_seed(GRAPH_SEED)
            inputs, labels, loss, train, init, _ = _bert_train_graph()
    finally:
        BERT.clear()
        BERT.update(saved)
    (folder / "graph.pb").write_bytes(g.as_graph_def().SerializeToString())
    feeds = [{"name": t.name, "dtype": t.dtype.name, "shape": t.shape.as_list()} for t in (*inputs, labels)]
    meta = {"name": folder.name, "feeds": feeds, "init_op": init.name, "train_op": train.name, "loss": loss.name}
    (folder / "graph.json").write_text(json.dumps(meta, indent=2) + "\n")
    return folder


def write_keras_resnet50_graph(size: int, out: Path) -> Path:
    """keras.applications.ResNet50 inference at `size`x`size` (batch left unknown) as graph.pb
    and graph.json, its kernels as variables that `init_weights` fills at random
    (tools/weights_as_variables.py): the frozen model at 224 is 100 MB, this graph about 0.3 MB,
    for benchmarks/gpu_check.py. BatchNorm's statistics are calibrated as in keras_resnet50's."""
    from weights_as_variables import INIT_OP, weights_as_variables
    from conformance_cases.registry import frozen_graph
    folder = out / f"keras_resnet50_{size}"
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    keras = keras_seed(rng)
    model = keras.applications.ResNet50(input_shape=(size, size, 3), weights=None)
    _calibrate_batchnorm(model, rng, normal(rng, 4, size, size, 3))
    spec = tf.TensorSpec([None, size, size, 3], tf.float32, name="images")
    frozen, outputs, _ = frozen_graph(lambda x: model(x, training=False), spec)
    graph, count = weights_as_variables(frozen)
    # The logits first: with random kernels the activations grow to ~1e7 and the softmax is
    # one-hot, so a check on it proves little; the logits compare in relative terms.
    (softmax,) = [n for n in graph.node if n.op == "Softmax"]
    outputs = [f"{softmax.input[0]}:0", *outputs]
    (folder / "graph.pb").write_bytes(graph.SerializeToString())
    meta = {"name": folder.name, "feeds": [{"name": "images:0", "dtype": "float32", "shape": [None, size, size, 3]}],
            "init_op": INIT_OP, "outputs": outputs, "variables": count}
    (folder / "graph.json").write_text(json.dumps(meta, indent=2) + "\n")
    return folder


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("models", nargs="*", metavar="MODEL", help=f"models to write (default all): {', '.join(MODELS)}")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default bench-models/)")
    p.add_argument("--resnet50-train-graph", type=int, metavar="SIZE",
                   help="write only ResNet-50 training's graph at SIZExSIZE (resnet50_train_SIZE/)")
    p.add_argument("--bert-base-train-graph", action="store_true",
                   help="write only BERT-base training's graph (bert_base_train/)")
    p.add_argument("--keras-resnet50-graph", type=int, metavar="SIZE",
                   help="write only Keras ResNet50 inference's graph at SIZExSIZE, weights as random-init "
                        "variables (keras_resnet50_SIZE/)")
    args = p.parse_args(argv)
    if args.keras_resnet50_graph:
        print(write_keras_resnet50_graph(args.keras_resnet50_graph, args.out))
        return 0
    if args.bert_base_train_graph:
        print(write_bert_base_train_graph(args.out))
        return 0
    if args.resnet50_train_graph:
        print(write_resnet50_train_graph(args.resnet50_train_graph, args.out))
        return 0
    if set(args.models) - set(MODELS):
        p.error(f"unknown model(s): {sorted(set(args.models) - set(MODELS))}")
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.models or MODELS:
        record(MODELS[name], args.out, max_bytes=None, text=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
