"""Write tests/graphs/mwms_two_workers: a training step written by TensorFlow's
MultiWorkerMirroredStrategy with two workers, and TF's two-worker results (TF is a dev tool).

    python tools/make_mwms_graph.py            # starts the two TF workers itself (TF_CONFIG, 127.0.0.1)

Each worker trains a linear regression (5 -> 1, MSE, SGD 0.05) on its half of a 64-row batch
for 5 steps; the gradients go through `ReplicaContext.all_reduce(MEAN)`, which MWMS writes as
one `CollectiveReduceV2` (packed gradients, an ordering token, the instance key a captured
tensor). TF 2 writes the step as a tf.function whose variables and instance key are captured
inputs; the GraphDef each worker writes is that function's graph with its captures made
nodes again, as a TF1 graph holds them: a resource capture becomes a `VarHandleOp` (named after
the variable), a value capture a `Const`, plus an `init` op that assigns the initial values
and `<var>/read` ops. Saved: graph_worker<i>.pbtxt per worker (device strings differ) and
reference.npz (the data, each worker's losses, the final variables) and mwms.json (the
fetches and feeds; not a corpus case.json: the protocol is two workers).
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "graphs" / "mwms_two_workers"
PORTS = (23456, 23457)
STEPS, LR = 5, 0.05


def worker(index: int, out: Path) -> None:
    """One TF worker: train, then pickle the step's graph, its captures and the results."""
    os.environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": [f"127.0.0.1:{p}" for p in PORTS]},
                                          "task": {"type": "worker", "index": index}})
    import numpy as np
    import tensorflow as tf

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 5)).astype(np.float32)
    y = (x @ np.arange(1, 6, dtype=np.float32)[:, None] + 0.5).astype(np.float32)
    init = {"w": np.full((5, 1), 0.1, np.float32), "b": np.zeros((1,), np.float32)}
    with strategy.scope():
        w = tf.Variable(init["w"], name="w")
        b = tf.Variable(init["b"], name="b")

    @tf.function(input_signature=[tf.TensorSpec([None, 5], tf.float32), tf.TensorSpec([None, 1], tf.float32)])
    def step(xs, ys):
        def replica(xs, ys):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(xs @ w + b - ys))
            grads = tape.gradient(loss, [w, b])
            grads = tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.MEAN, grads)
            w.assign_sub(LR * grads[0])
            b.assign_sub(LR * grads[1])
            return tf.identity(loss, name="loss")
        return strategy.run(replica, args=(xs, ys))

    half = slice(index * 32, (index + 1) * 32)
    losses = [float(step(x[half], y[half])) for _ in range(STEPS)]
    fn = step.get_concrete_function()
    captures = []
    for (external, internal), value in zip(fn.graph.captures, fn.captured_inputs):
        if internal.dtype == tf.resource:  # w, b, or MWMS's ordering token
            var = next((v.name.split(":")[0] for v in (w, b) if external is v.handle), "ordering_token")
            captures.append((internal.op.name, "resource", var, None))
        else:
            captures.append((internal.op.name, "value", None, value.numpy()))
    pickle.dump({"graph": fn.graph.as_graph_def().SerializeToString(), "captures": captures, "losses": losses,
                 "final": {"w": w.numpy(), "b": b.numpy()}, "init": init, "x": x, "y": y,
                 "loss": fn.outputs[0].name}, open(out / f"worker{index}.pkl", "wb"))


def to_session_graph(saved: dict):
    """The function's GraphDef with its captures as nodes (module docstring)."""
    import numpy as np
    import tensorflow as tf

    gd = tf.compat.v1.GraphDef()
    gd.ParseFromString(saved["graph"])
    by_name = {n.name: n for n in gd.node}
    shapes = {"w": (5, 1), "b": (1,), "ordering_token": ()}
    inits = {**saved["init"], "ordering_token": np.float32(0)}
    assigns = []
    for name, kind, var, value in saved["captures"]:
        node = by_name[name]
        node.ClearField("attr")
        if kind == "value":
            node.op = "Const"
            node.attr["dtype"].type = tf.as_dtype(value.dtype).as_datatype_enum
            node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value))
            continue
        node.op = "VarHandleOp"
        node.attr["dtype"].type = tf.float32.as_datatype_enum
        node.attr["shape"].shape.CopyFrom(tf.TensorShape(shapes[var]).as_proto())
        node.attr["shared_name"].s = var.encode()
        node.attr["container"].s = b""
        init = gd.node.add(name=f"{var}/initial_value", op="Const")
        init.attr["dtype"].type = tf.float32.as_datatype_enum
        init.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(np.asarray(inits[var], np.float32)))
        assign = gd.node.add(name=f"{var}/Assign", op="AssignVariableOp", input=[name, init.name])
        assign.attr["dtype"].type = tf.float32.as_datatype_enum
        assigns.append(assign.name)
        read = gd.node.add(name=f"{var}/read", op="ReadVariableOp", input=[name])
        read.attr["dtype"].type = tf.float32.as_datatype_enum
    gd.node.add(name="init", op="NoOp", input=[f"^{a}" for a in assigns])
    return gd


def main() -> None:
    import numpy as np
    from google.protobuf import text_format

    if len(sys.argv) == 3:  # a worker process
        worker(int(sys.argv[1]), Path(sys.argv[2]))
        return
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "TF_ENABLE_ONEDNN_OPTS": "0", "TF_DETERMINISTIC_OPS": "1", "TF_CPP_MIN_LOG_LEVEL": "2"}
        procs = [subprocess.Popen([sys.executable, __file__, str(i), tmp], env=env) for i in range(2)]
        if any(p.wait(timeout=600) for p in procs):
            raise SystemExit("a TF worker failed")
        saved = [pickle.load(open(Path(tmp) / f"worker{i}.pkl", "rb")) for i in range(2)]
    for i, s in enumerate(saved):
        (OUT / f"graph_worker{i}.pbtxt").write_text(text_format.MessageToString(to_session_graph(s)))
    np.savez(OUT / "reference.npz", x=saved[0]["x"], y=saved[0]["y"],
             losses=np.array([s["losses"] for s in saved], np.float32),
             w=saved[0]["final"]["w"], b=saved[0]["final"]["b"],
             w1=saved[1]["final"]["w"], b1=saved[1]["final"]["b"])
    (OUT / "mwms.json").write_text(json.dumps({"loss": saved[0]["loss"], "steps": STEPS, "lr": LR,
                                               "feeds": ["xs:0", "ys:0"], "variables": ["w/read:0", "b/read:0"],
                                               "init_op": "init", "tf_version": __import__("tensorflow").__version__},
                                              indent=1))


if __name__ == "__main__":
    main()
