#!/usr/bin/env python3
"""Generate hlobridge's own graph test cases with TensorFlow.

Writes NAME/{graph.pbtxt, graph.pb, case.json, data.npz, ops.json} under tests/graphs/, in the
same format as the shared corpus (../shared/graphs, see its README.md).

TensorFlow is a development tool only: it is imported by this script and nowhere else in
hlobridge. Run with a separate environment that has tensorflow-cpu installed, e.g.

    .tfvenv/bin/python tools/make_test_graphs.py            # all cases
    .tfvenv/bin/python tools/make_test_graphs.py mixed_fallback adam_ref
    .tfvenv/bin/python tools/make_test_graphs.py --out /tmp/graphs
"""

import argparse
import collections
import sys
from pathlib import Path

import numpy as np
# tf_corpus sets the reference environment before it imports TensorFlow: import it first.
from tf_corpus import (GRAPH_SEED, const_weights, inference_case, run_graph_def, session,
                       strip_attrs, train_case, write_case)

import tensorflow as tf

tf.compat.v1.disable_eager_execution()
v1 = tf.compat.v1

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "tests" / "graphs"


# --------------------------------------------------------------------------------------------
# cases


def case_jit_scope_manual(out):
    from tensorflow.python.compiler.xla import jit

    rng = np.random.default_rng(101)
    g = tf.Graph()
    with g.as_default():
        v1.set_random_seed(GRAPH_SEED)
        x = v1.placeholder(tf.float32, [None, 8], name="x")
        # outside any scope
        xs = tf.multiply(x, 0.5, name="pre_scale")
        xc = tf.clip_by_value(xs, -3.0, 3.0, name="pre_clip")
        with jit.experimental_jit_scope():  # _XlaScope = jit_scope_0
            with tf.name_scope("block1"):
                w1 = tf.constant(const_weights(rng, [8, 16]), name="w1")
                b1 = tf.constant(rng.standard_normal(16).astype(np.float32) * 0.1, name="b1")
                h1 = tf.nn.relu(tf.matmul(xc, w1) + b1, name="h1")
                w2 = tf.constant(const_weights(rng, [16, 16]), name="w2")
                b2 = tf.constant(rng.standard_normal(16).astype(np.float32) * 0.1, name="b2")
                h2 = tf.nn.relu(tf.matmul(h1, w2) + b2, name="h2")
        # outside: between the two scopes
        h2n = tf.identity(h2 * 1.5 - 0.25, name="between")
        with jit.experimental_jit_scope():  # _XlaScope = jit_scope_1
            with tf.name_scope("head"):
                w3 = tf.constant(const_weights(rng, [16, 4]), name="w3")
                b3 = tf.constant(rng.standard_normal(4).astype(np.float32) * 0.1, name="b3")
                logits = tf.add(tf.matmul(h2n, w3), b3, name="logits")
                probs = tf.nn.softmax(logits, name="probs")
        # outside again
        pred = tf.argmax(probs, axis=1, name="pred")
        conf = tf.reduce_max(probs, axis=1, name="confidence")
        h1_norm = tf.reduce_sum(tf.square(h1), axis=1, name="h1_norm")

    gd = g.as_graph_def()
    scopes = collections.Counter(n.attr["_XlaScope"].s.decode() for n in gd.node
                                 if "_XlaScope" in n.attr)
    compiled = [n.name for n in gd.node if "_XlaCompile" in n.attr and n.attr["_XlaCompile"].b]
    assert len(scopes) == 2, scopes
    outside = [n.name for n in gd.node if "_XlaScope" not in n.attr]
    assert outside and compiled

    fetches = [logits, probs, pred, conf, h1_norm]
    feeds_b5 = rng.standard_normal((5, 8)).astype(np.float32) * 2
    feeds_b1 = rng.standard_normal((1, 8)).astype(np.float32)
    runs = [("batch5", {x: feeds_b5}), ("batch1", {x: feeds_b1})]

    # Reference values: the graph with the _Xla* attrs stripped, i.e. plain TF kernels, no XLA.
    names = [t.name for t in fetches]
    plain = strip_attrs(gd)
    # Also run the graph as written and report whether TF's Session honoured the scopes.
    with_attrs, md = run_graph_def(gd, names, {"x:0": feeds_b5}, metadata=True)
    partition_ops = {n.op for pg in md.partition_graphs for n in pg.node}
    xla_used = bool(partition_ops & {"_XlaCompile", "_XlaRun", "XlaLaunch"})
    without = run_graph_def(plain, names, {"x:0": feeds_b5})
    max_diff = max(float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))
                   for a, b in zip(with_attrs, without))
    print(f"  jit_scope_manual: scopes={dict(scopes)} compiled_nodes={len(compiled)} "
          f"outside_nodes={len(outside)} xla_used_by_session={xla_used} "
          f"max|with_attrs - stripped|={max_diff:g}")

    sess_g = tf.Graph()
    with sess_g.as_default():
        v1.import_graph_def(plain, name="")
    sess = session(sess_g)
    feeds_t = [sess_g.get_tensor_by_name("x:0")]
    fetch_t = [sess_g.get_tensor_by_name(n) for n in names]
    runs_t = [(n, {feeds_t[0]: f[x]}) for n, f in runs]
    desc = (
        "Inference MLP 8->16->16->4 + softmax with two manual XLA jit scopes "
        "(tensorflow.python.compiler.xla.jit.experimental_jit_scope, tf.compat.v1 graph mode): "
        "block1/* carry _XlaCompile=true, _XlaSeparateCompiledGradients=false, "
        "_XlaScope=\"jit_scope_0\"; head/* carry _XlaScope=\"jit_scope_1\"; pre_scale/pre_clip, "
        "between, pred (ArgMax), confidence (Max) and h1_norm are outside any scope. Weights are "
        "Const nodes. Expected values were computed by TF's own kernels on the same GraphDef with "
        "the _Xla* attrs stripped (no XLA); "
        f"the Session run of the graph as written used XLA: {str(xla_used).lower()}, "
        f"max abs difference to the stripped run {max_diff:.3g}."
    )
    case, arrays = inference_case(
        "jit_scope_manual", desc, "tf.compat.v1 graph mode, experimental_jit_scope attrs",
        feeds_t, fetch_t, runs_t, sess, {"rtol": 1e-05, "atol": 1e-06},
        extra={"xla_scopes": {k: v for k, v in sorted(scopes.items())}})
    sess.close()
    write_case(out, gd, case, arrays)


def case_xla_device_placement(out):
    rng = np.random.default_rng(202)
    XLA = "/device:XLA_CPU:0"
    XLA_FULL = "/job:localhost/replica:0/task:0/device:XLA_CPU:0"
    g = tf.Graph()
    with g.as_default():
        v1.set_random_seed(GRAPH_SEED)
        x = v1.placeholder(tf.float32, [None, 6], name="x")
        with tf.device("/device:CPU:0"):
            xn = tf.subtract(x, tf.reduce_mean(x, axis=1, keepdims=True), name="center")
        with tf.device(XLA), tf.name_scope("dense"):
            w = tf.constant(const_weights(rng, [6, 5]), name="w")
            b = tf.constant(rng.standard_normal(5).astype(np.float32) * 0.1, name="b")
            h = tf.tanh(tf.matmul(xn, w) + b, name="tanh")
            sq = tf.reduce_sum(tf.square(h), axis=1, name="sqnorm")
        with tf.device(XLA_FULL), tf.name_scope("gate"):
            y = tf.sigmoid(h * 2.0, name="sigmoid")
        # no device
        out_t = tf.add(y, tf.expand_dims(sq, 1), name="out")
        top = tf.reduce_max(out_t, axis=1, name="top")

    gd = g.as_graph_def()
    devices = collections.Counter(n.device for n in gd.node)
    assert any("XLA_CPU" in d for d in devices), devices
    fetches = [out_t, sq, top]
    names = [t.name for t in fetches]
    feed4 = rng.standard_normal((4, 6)).astype(np.float32)
    feed0 = np.zeros((0, 6), np.float32)

    # 1. the graph as written
    try:
        run_graph_def(gd, names, {"x:0": feed4})
        strict = "ran"
    except Exception as e:  # noqa: BLE001
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
        why = next((ln for ln in lines if "XLA_CPU" in ln or "device" in ln.lower()), lines[0])
        strict = f"{type(e).__name__}: {why.split('. ')[0][:240]}"
    # 2. with allow_soft_placement
    try:
        soft = run_graph_def(gd, names, {"x:0": feed4}, soft_placement=True)
    except Exception as e:  # noqa: BLE001
        soft = None
        print("  soft placement failed:", e)
    # 3. reference: same GraphDef, device fields cleared
    nodev = v1.GraphDef()
    nodev.CopyFrom(gd)
    for n in nodev.node:
        n.device = ""
    ref = run_graph_def(nodev, names, {"x:0": feed4})
    soft_same = soft is not None and all(np.array_equal(a, b) for a, b in zip(soft, ref))
    print(f"  xla_device_placement: devices={dict(devices)} strict_run={strict!r} "
          f"soft_placement_equal={soft_same}")

    sg = tf.Graph()
    with sg.as_default():
        v1.import_graph_def(nodev, name="")
    sess = session(sg)
    xt = sg.get_tensor_by_name("x:0")
    fetch_t = [sg.get_tensor_by_name(n) for n in names]
    desc = (
        "Small dense/tanh/sigmoid graph whose nodes carry device strings: center/* on "
        "/device:CPU:0, dense/* on /device:XLA_CPU:0, gate/* on "
        "/job:localhost/replica:0/task:0/device:XLA_CPU:0, out/top with no device. The devices "
        "were set with tf.device() while building (tf.compat.v1 graph mode). TF 2.21 has no "
        "XLA_CPU device registered; running the GraphDef as written fails ("
        f"{strict}). Expected values were computed by running the same GraphDef with every "
        "NodeDef.device cleared (plain CPU kernels, no XLA); running it with "
        "allow_soft_placement=True gives "
        + ("bitwise the same values." if soft_same else "different or no values.")
        + " A compiler should ignore or map XLA_CPU/XLA_GPU device strings."
    )
    case, arrays = inference_case(
        "xla_device_placement", desc, "tf.compat.v1 graph mode, tf.device('/device:XLA_CPU:0')",
        [xt], fetch_t, [("batch4", {xt: feed4}), ("empty", {xt: feed0})], sess,
        {"rtol": 1e-05, "atol": 1e-06},
        extra={"node_devices": {d or "": c for d, c in sorted(devices.items())}})
    sess.close()
    write_case(out, gd, case, arrays)


def case_mixed_fallback(out):
    g = tf.Graph()
    with g.as_default():
        v1.set_random_seed(GRAPH_SEED)
        x = v1.placeholder(tf.float32, [None], name="x")
        s = v1.placeholder(tf.string, [None], name="s")
        a = tf.add(x * 2.0, 1.0, name="affine")                      # compilable
        u, idx = tf.unique(a, name="unique")                          # Unique: dynamic shape
        u_int = tf.cast(u, tf.int32, name="unique_int")
        unique_sum = tf.reduce_sum(u_int, name="unique_sum")          # int32 scalar
        regathered = tf.multiply(tf.gather(u, idx), 3.0, name="regathered")
        n = tf.strings.to_number(s, out_type=tf.float32, name="parsed")  # StringToNumber
        prod = tf.multiply(n, a, name="prod")
        pos = tf.where(a > 3.0, name="where_pos")                     # Where(cond), int64 [k,1]
        picked = tf.gather_nd(a, pos, name="picked")
        picked_sum = tf.reduce_sum(picked, name="picked_sum")
        text = tf.strings.as_string(prod, name="as_string")          # AsString default format
        text2 = tf.strings.as_string(tf.cast(idx, tf.int64) * 10, name="as_string_int")
        total = tf.add(tf.reduce_sum(prod) + picked_sum,
                       tf.cast(unique_sum, tf.float32), name="total")

    fetches = [a, u, idx, unique_sum, regathered, prod, pos, picked_sum, text, text2, total]
    runs = [
        ("dups6", {x: np.array([1, 2, 2, 0.5, 1, -3], np.float32),
                   s: np.array([b"1.5", b"2", b"-0.25", b"10", b"3e1", b"0"], dtype=bytes)}),
        ("distinct4", {x: np.array([0.25, -1, 4, 1.5], np.float32),
                       s: np.array([b"7", b"-2.5", b"0.125", b"100"], dtype=bytes)}),
        ("none_pos3", {x: np.array([-1, -2, -1], np.float32),
                       s: np.array([b"1", b"1", b"1"], dtype=bytes)}),
        ("empty", {x: np.zeros((0,), np.float32), s: np.zeros((0,), dtype="S1")}),
    ]
    sess = session(g)
    desc = (
        "Inference graph mixing compilable math with ops an XLA-style compiler cannot compile: "
        "affine = x*2+1 -> Unique (data-dependent output size) -> Cast int32 -> Sum; Gather by "
        "Unique's idx; StringToNumber on a string feed, multiplied by affine; Where(affine > 3) "
        "with one input -> GatherNd -> Sum; AsString (default format) of a float and an int64 "
        "tensor. Fetches include string tensors (stored in data.npz as numpy fixed-width bytes "
        "'S' arrays, compare exactly) and int32/int64 outputs. Runs include duplicates, "
        "all-distinct, Where with no true element and empty feeds. Computed by TF's own kernels "
        "(tf.compat.v1 Session, no XLA)."
    )
    case, arrays = inference_case(
        "mixed_fallback", desc, "tf.compat.v1 graph mode, string/dynamic-shape ops",
        [x, s], fetches, runs, sess, {"rtol": 1e-05, "atol": 1e-06},
        extra={"notes": "string feeds/outputs are numpy bytes ('S') arrays in data.npz; "
                        "feeds/fetches dtype 'string'"})
    sess.close()
    write_case(out, g.as_graph_def(), case, arrays)


def _linreg_graph(use_resource):
    g = tf.Graph()
    with g.as_default():
        v1.set_random_seed(GRAPH_SEED)
        with v1.variable_scope("", use_resource=use_resource):
            w = v1.get_variable("weights", shape=[], dtype=tf.float32)
            b = v1.get_variable("bias", shape=[], dtype=tf.float32)
        x = v1.placeholder(tf.float32, [None], name="x_observed")
        y_pred = w * x + b
        y = v1.placeholder(tf.float32, [None], name="y_observed")
        loss = tf.reduce_mean(tf.square(y_pred - y))
        train_op = v1.train.GradientDescentOptimizer(0.025).minimize(loss)
        init = v1.global_variables_initializer()
    return g, x, y, loss, train_op, init


def case_linreg_batch(out):
    g, x, y, loss, train_op, init = _linreg_graph(use_resource=True)
    rng = np.random.default_rng(303)
    n = 128
    xs = rng.uniform(-2, 2, n).astype(np.float32)
    ys = (3 * xs + 2 + rng.normal(0, 0.1, n)).astype(np.float32)
    steps = 40
    sizes = np.array([32 if (s // 5) % 2 == 0 else 16 for s in range(steps)], np.int32)
    sizes[-1] = 1  # a single-element batch too
    bidx = np.full((steps, 32), -1, np.int32)
    for s in range(steps):
        bidx[s, : sizes[s]] = rng.choice(n, sizes[s], replace=False)
    sess = session(g)
    with g.as_default():
        case, arrays = train_case(
            "linreg_batch",
            "Seed linear regression y = W*x + b, MSE loss, plain SGD 0.025, resource variables "
            "(same graph as seed_linreg_resource) trained on batches whose size changes between "
            "steps (32 for steps 0-4, 16 for 5-9, ... and 1 for the last step), so the same "
            "compiled step must handle several batch sizes.",
            "tf.compat.v1 graph mode, resource variables (VarHandleOp)", g, sess,
            feeds=[x, y], fetches=[loss], loss=loss, train_op=train_op, init_op=init,
            steps=steps, pool={x: xs, y: ys}, batch_index=bidx, step_sizes=sizes,
            hyperparameters={
                "optimizer": "GradientDescent", "learning_rate": 0.025,
                "batch": "variable, see train.step_sizes",
                "data": "y = 3x + 2 + N(0, 0.1^2), x ~ U(-2, 2), 128 points"},
            tolerance={"rtol": 1e-05, "atol": 1e-06},
            extra_train={"step_sizes_note": (
                "Protocol extension: batch_index is int32 [steps, max_batch] padded with -1, and "
                "step_sizes (int32 [steps]) gives each step's batch size; step s feeds "
                "pool[batch_index[s, :step_sizes[s]]]. A harness that ignores step_sizes feeds "
                "the -1 padding (pool[-1]) and will miss loss_per_step.")},
        )
    sess.close()
    write_case(out, g.as_graph_def(), case, arrays)


def _mlp_data(rng, n, centers):
    labels = rng.integers(0, 3, n)
    xs = (centers[labels] + rng.normal(0, 0.7, (n, 4))).astype(np.float32)
    ys = np.eye(3, dtype=np.float32)[labels]
    return xs, ys


def _mlp(x, y_, make_var):
    with tf.name_scope("fc1"):
        w1 = make_var("fc1/W", [4, 8])
        b1 = make_var("fc1/b", [8], zeros=True)
        h = tf.nn.relu(tf.matmul(x, w1) + b1, name="h")
    with tf.name_scope("fc2"):
        w2 = make_var("fc2/W", [8, 3])
        b2 = make_var("fc2/b", [3], zeros=True)
        logits = tf.add(tf.matmul(h, w2), b2, name="logits")
    xent = tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=logits)
    loss = tf.reduce_mean(xent, name="loss")
    correct = tf.equal(tf.argmax(logits, 1), tf.argmax(y_, 1))
    accuracy = tf.reduce_mean(tf.cast(correct, tf.float32), name="accuracy")
    return logits, loss, accuracy


def _mlp_train_case(out, name, description, style, optimizer_fn, make_var_fn, hyper, extra_ops=None):
    rng = np.random.default_rng(404)
    centers = rng.normal(0, 2.0, (3, 4))
    pool_x, pool_y = _mlp_data(rng, 64, centers)
    test_x, test_y = _mlp_data(rng, 24, centers)
    steps, batch = 10, 16
    bidx = np.stack([rng.choice(64, batch, replace=False) for _ in range(steps)]).astype(np.int32)

    g = tf.Graph()
    with g.as_default():
        v1.set_random_seed(GRAPH_SEED)
        x = v1.placeholder(tf.float32, [None, 4], name="x")
        y_ = v1.placeholder(tf.float32, [None, 3], name="y_")
        logits, loss, accuracy = _mlp(x, y_, make_var_fn)
        minimize = optimizer_fn().minimize(loss)
        if extra_ops is not None:
            train_op = extra_ops(minimize, loss)
        else:
            train_op = tf.group(minimize, name="train")
        init = v1.global_variables_initializer()
        for v in v1.global_variables():
            assert v.op.type == "VariableV2", (v.op.name, v.op.type)
        sess = session(g)
        case, arrays = train_case(
            name, description, style, g, sess,
            feeds=[x, y_], fetches=[loss, accuracy, logits], loss=loss, train_op=train_op,
            init_op=init, steps=steps, pool={x: pool_x, y_: pool_y}, batch_index=bidx,
            hyperparameters=dict(hyper, batch=batch,
                                 data="3 Gaussian clusters in 4-d, 64 train / 24 test points"),
            tolerance={"rtol": 0.0001, "atol": 1e-05},
            evals=[("test", {x: test_x, y_: test_y}, [accuracy, logits])],
        )
    sess.close()
    write_case(out, g.as_graph_def(), case, arrays)


def case_stateful_mix(out):
    def make_var(name, shape, zeros=False):
        init = (tf.zeros(shape, name=name.split("/")[-1] + "_zeros") if zeros else
                v1.random_normal(shape, stddev=0.5, name=name.split("/")[-1] + "_init"))
        return v1.Variable(init, name=name.split("/")[-1], use_resource=False)

    def extra(minimize, loss):
        counter = v1.Variable(0.0, name="step_counter", trainable=False, use_resource=False)
        loss_acc = v1.Variable(100.0, name="loss_budget", trainable=False, use_resource=False)
        with tf.control_dependencies([minimize]):
            inc = v1.assign_add(counter, 1.0, name="count_step")         # AssignAdd
            dec = v1.assign_sub(loss_acc, loss, name="spend_loss")        # AssignSub
        return tf.group(minimize, inc, dec, name="train")

    _mlp_train_case(
        out, "stateful_mix",
        "Tiny MLP 4->8(ReLU)->3, softmax_cross_entropy_with_logits (v2), MomentumOptimizer(0.1, "
        "0.9) on ref variables (VariableV2, Assign, ApplyMomentum, Momentum slots); train also "
        "runs AssignAdd(step_counter, 1) and AssignSub(loss_budget, loss) after the update "
        "(control dependency). 10 steps of batch 16, then test accuracy/logits.",
        "tf.compat.v1 graph mode, ref variables (tf.compat.v1.Variable use_resource=False), "
        "random_normal init (RandomStandardNormal with seeds)",
        lambda: v1.train.MomentumOptimizer(0.1, 0.9), make_var,
        {"optimizer": "Momentum", "learning_rate": 0.1, "momentum": 0.9},
        extra_ops=extra)


def case_adam_ref(out):
    def make_var(name, shape, zeros=False):
        with v1.variable_scope("", use_resource=False, reuse=v1.AUTO_REUSE):
            return v1.get_variable(
                name, shape=shape, dtype=tf.float32,
                initializer=tf.zeros_initializer() if zeros else v1.glorot_uniform_initializer())

    _mlp_train_case(
        out, "adam_ref",
        "Tiny MLP 4->8(ReLU)->3, softmax_cross_entropy_with_logits (v2), AdamOptimizer(0.01) on "
        "ref variables (VariableV2, ApplyAdam, Adam/Adam_1 slots, beta1_power/beta2_power "
        "updated with Assign). 10 steps of batch 16, then test accuracy/logits.",
        "tf.compat.v1 graph mode, ref variables (get_variable use_resource=False), "
        "glorot_uniform init (RandomUniform with seeds)",
        lambda: v1.train.AdamOptimizer(0.01), make_var,
        {"optimizer": "Adam", "learning_rate": 0.01, "beta1": 0.9, "beta2": 0.999,
         "epsilon": 1e-08})


CASES = {
    "jit_scope_manual": case_jit_scope_manual,
    "xla_device_placement": case_xla_device_placement,
    "mixed_fallback": case_mixed_fallback,
    "linreg_batch": case_linreg_batch,
    "stateful_mix": case_stateful_mix,
    "adam_ref": case_adam_ref,
}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("cases", nargs="*", help=f"cases to write (default all): {', '.join(CASES)}")
    p.add_argument("--out", default=str(DEFAULT_OUT), help="output folder (default tests/graphs)")
    args = p.parse_args(argv)
    names = args.cases or list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        p.error(f"unknown case(s): {unknown}")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    for n in names:
        CASES[n](args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
