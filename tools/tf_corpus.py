"""Writing graph cases in the corpus format, with TensorFlow (a development tool only).

One place for what every generator shares: the reference environment, the case layout
(NAME/{graph.pbtxt, graph.pb, case.json, data.npz, ops.json}, as ../shared/graphs/README.md
describes), recording inference runs and the training protocol. Used by
tools/make_test_graphs.py (tests/graphs) and tools/make_conformance_corpus.py (tests/conformance).

Import this module before TensorFlow: it sets the reference environment variables, which
TensorFlow reads when it loads.
"""

import os

REFERENCE_ENV = {
    "TF_ENABLE_ONEDNN_OPTS": "0",
    "TF_DETERMINISTIC_OPS": "1",
    "TF_CPP_MIN_LOG_LEVEL": "2",
    "PYTHONHASHSEED": "0",
}
for _k, _v in REFERENCE_ENV.items():
    os.environ[_k] = _v

import collections  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

v1 = tf.compat.v1

GRAPH_SEED = 1234
MAX_BYTES = 200 * 1024

TRAIN_PROTOCOL = (
    "sess.run(init_op); then for step s in range(steps): _, loss = sess.run([train_op, loss], "
    "feed_dict=step feeds); loss_per_step[s] is that loss (computed before the update of step s). "
    "Step feeds: for every entry of step_feeds, the array pool[batch_index[s]] (or the whole pool "
    "when batch_index is null). Afterwards, the variables (read via read_tensor) equal final_value, "
    "and evals are run."
)
INITIAL_VALUES_NOTE = (
    "initial_value = what TF's init_op produced (graph-level seed is fixed, so the RNG ops carry "
    "seed/seed2 attrs). A runtime that cannot reproduce TF's Philox RNG may instead feed these "
    "values into initial_value_tensor when running init_op (feeding intermediate tensors is legal "
    "in a TF Session). Arrays over 262144 elements are given as summaries."
)


# --------------------------------------------------------------------------------------------
# helpers


def session(graph):
    config = v1.ConfigProto(inter_op_parallelism_threads=1, intra_op_parallelism_threads=1)
    return v1.Session(graph=graph, config=config)


def dtype_name(dt):
    dt = tf.as_dtype(dt).base_dtype
    return "string" if dt == tf.string else dt.name


def tensor_spec(t):
    shape = None if t.shape.rank is None else t.shape.as_list()
    return {"name": t.name, "dtype": dtype_name(t.dtype), "shape": shape}


def to_np(value):
    """Session output -> numpy array fit for np.savez (strings as fixed-width bytes, no pickle)."""
    a = np.asarray(value)
    if a.dtype == object:
        a = np.array([bytes(v) for v in a.ravel()], dtype=bytes).reshape(a.shape) if a.size else \
            np.zeros(a.shape, dtype="S1")
    return a


def op_histograms(graph_def):
    graph_ops = collections.Counter(n.op for n in graph_def.node)
    library_ops = collections.Counter()
    functions = []
    for f in graph_def.library.function:
        functions.append(f.signature.name)
        library_ops.update(n.op for n in f.node_def)
    return {
        "distinct_op_types": sorted(set(graph_ops) | set(library_ops)),
        "graph_nodes": len(graph_def.node),
        "graph_ops": dict(sorted(graph_ops.items())),
        "library_functions": sorted(functions),
        "library_ops": dict(sorted(library_ops.items())),
    }


def header(name, description, style, kind, xla=False):
    return {
        "name": name,
        "description": description,
        "style": style,
        "graph_pbtxt": "graph.pbtxt",
        "graph_pb": "graph.pb",
        "data": "data.npz",
        "tf_version": tf.__version__,
        "reference_env": dict(REFERENCE_ENV),
        "xla": xla,
        "kind": kind,
    }


def write_case(out_dir, graph_def, case, arrays, max_bytes=MAX_BYTES, text=True):
    """Write the case folder. max_bytes=None lifts the size limit on graph.pb and data.npz;
    text=False writes no graph.pbtxt (case.json's graph_pbtxt is null): a model's weights as
    Const nodes make a text GraphDef several times the size of the binary one, slow to write
    and to parse."""
    d = Path(out_dir) / case["name"]
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    if text:
        tf.io.write_graph(graph_def, str(d), "graph.pbtxt", as_text=True)
    else:
        case["graph_pbtxt"] = None
    tf.io.write_graph(graph_def, str(d), "graph.pb", as_text=False)
    with open(d / "case.json", "w") as f:
        json.dump(case, f, indent=1)
    with open(d / "ops.json", "w") as f:
        json.dump(op_histograms(graph_def), f, indent=1)
    for k, v in arrays.items():
        assert isinstance(v, np.ndarray) and v.dtype != object, (k, type(v))
    np.savez_compressed(d / "data.npz", **arrays)
    for fname in ("graph.pb", "data.npz"):
        size = (d / fname).stat().st_size
        assert max_bytes is None or size < max_bytes, f"{d / fname} is {size} bytes, over the {max_bytes} limit"
    # Round-trip check: every npz key named in case.json exists.
    keys = set(np.load(d / "data.npz").files)
    for ref in _npz_refs(case):
        assert ref in keys, f"{case['name']}: case.json names missing npz key {ref}"
    print(f"wrote {d}: " + ", ".join(
        f"{p.name} {p.stat().st_size}B" for p in sorted(d.iterdir())))
    return d


def _npz_refs(case):
    refs = []
    for run in case.get("runs", []):
        refs += list(run["feeds"].values()) + list(run["expected"].values())
    for ev in case.get("evals", []):
        refs += list(ev["feeds"].values()) + list(ev["expected"].values())
    for var in case.get("variables", []):
        refs += [var["initial_value"]["npz"], var["final_value"]["npz"]]
    tr = case.get("train")
    if tr:
        refs += [v["npz"] for v in tr["step_feeds"].values()]
        refs += [tr["loss_per_step"]] + ([tr["batch_index"]] if tr["batch_index"] else [])
        if tr.get("step_sizes"):
            refs.append(tr["step_sizes"])
    return refs


def record_run(sess, prefix, feed, fetches, arrays):
    """Run `fetches` with `feed`; store feeds and results in `arrays` under `prefix`; return the
    case.json entry ({"feeds": name -> npz key, "expected": name -> npz key})."""
    outs = sess.run(fetches, feed_dict=feed)
    entry = {"feeds": {}, "expected": {}}
    for kind, pairs in (("feed", feed.items()), ("expected", zip(fetches, outs))):
        for t, v in pairs:
            key = f"{prefix}/{kind}/{t.name}"
            arrays[key] = to_np(v)
            entry["feeds" if kind == "feed" else "expected"][t.name] = key
    return entry


def record_error_run(sess, prefix, feed, fetches, arrays, message):
    """Run `fetches` with `feed`, which must fail with a TF error whose message contains
    `message`; store the feeds. The case.json entry has no expected values, but
    "expected_error" (the substring) and "expected_error_type" (TF's error class): a runtime
    must raise an error containing the substring when it fetches the case's `fetches`."""
    try:
        sess.run(fetches, feed_dict=feed)
    except tf.errors.OpError as e:
        assert message in e.message, f"{prefix}: TF's error does not contain {message!r}: {e.message}"
        error_type = type(e).__name__
    else:
        raise AssertionError(f"{prefix}: TF ran without the expected error {message!r}")
    entry = {"feeds": {}, "expected": {}, "expected_error": message, "expected_error_type": error_type}
    for t, v in feed.items():
        key = f"{prefix}/feed/{t.name}"
        arrays[key] = to_np(v)
        entry["feeds"][t.name] = key
    return entry


def inference_case(name, description, style, feeds, fetches, runs_spec, sess, tolerance,
                   xla=False, extra=None):
    """runs_spec: list of (run_name, {feed_tensor: array}) or (run_name, feeds, error substring)
    for a run that must fail (see record_error_run). Runs the session for each run."""
    case = header(name, description, style, "inference", xla)
    case.update({
        "feeds": [tensor_spec(t) for t in feeds],
        "fetches": [tensor_spec(t) for t in fetches],
        "init_op": None,
        "train_op": None,
        "variables": [],
        "steps": 0,
        "runs": [],
    })
    arrays = {}
    for run_name, feed, *error in runs_spec:
        entry = (record_error_run(sess, run_name, feed, fetches, arrays, error[0]) if error
                 else record_run(sess, run_name, feed, fetches, arrays))
        case["runs"].append({"name": run_name, **entry})
    case["suggested_tolerance"] = tolerance
    if extra:
        case.update(extra)
    return case, arrays


def variable_entries(graph, sess, arrays, prefix):
    """Describe every global variable; store its current value under `prefix/<name>`."""
    trainable = {v.op.name for v in v1.trainable_variables()}
    entries = []
    for var in v1.global_variables():
        name = var.op.name
        resource = var.op.type == "VarHandleOp"
        entries.append({
            "name": name,
            "op": var.op.type,
            "kind": "resource" if resource else "ref",
            "dtype": dtype_name(var.dtype),
            "shape": var.shape.as_list(),
            "trainable": name in trainable,
            "initializer": var.initializer.name,
            "initial_value_tensor": var.initial_value.name,
            "read_tensor": (var._graph_element if resource else var.value()).name,  # Read/ReadVariableOp:0 | read:0
            "initial_value": {"npz": f"init/{name}"},
            "final_value": {"npz": f"final/{name}"},
        })
    return entries


def read_variables(sess, variables, graph):
    return {e["name"]: sess.run(graph.get_tensor_by_name(e["read_tensor"])) for e in variables}


def train_case(name, description, style, graph, sess, *, feeds, fetches, loss, train_op, init_op,
               steps, pool, batch_index, hyperparameters, tolerance, evals=(), step_sizes=None,
               extra_train=None):
    """Run the training protocol in TF and record everything.

    pool: {placeholder: array}; batch_index: None or int array [steps, B] (padded with -1 where
    step_sizes is given); evals: list of (name, {placeholder: array}, [fetch tensors]).
    """
    arrays = {}
    variables = variable_entries(graph, sess, arrays, "init")
    sess.run(init_op)
    for name_, val in read_variables(sess, variables, graph).items():
        arrays[f"init/{name_}"] = to_np(val)
    losses = []
    for s in range(steps):
        fd = {}
        for ph, data in pool.items():
            if batch_index is None:
                fd[ph] = data
            else:
                idx = batch_index[s]
                if step_sizes is not None:
                    idx = idx[: step_sizes[s]]
                fd[ph] = data[idx]
        _, l = sess.run([train_op, loss], feed_dict=fd)
        losses.append(l)
    for name_, val in read_variables(sess, variables, graph).items():
        arrays[f"final/{name_}"] = to_np(val)
    for ph, data in pool.items():
        arrays[f"train/pool/{ph.name}"] = to_np(data)
    if batch_index is not None:
        arrays["train/batch_index"] = np.asarray(batch_index, dtype=np.int32)
    if step_sizes is not None:
        arrays["train/step_sizes"] = np.asarray(step_sizes, dtype=np.int32)
    arrays["expected/loss_per_step"] = np.asarray(losses, dtype=np.float32)

    eval_entries = []
    for ev_name, ev_feed, ev_fetches in evals:
        e = {"name": ev_name, "when": "after_training",
             **record_run(sess, f"eval/{ev_name}", ev_feed, ev_fetches, arrays)}
        eval_entries.append(e)

    case = header(name, description, style, "train")
    train = {
        "protocol": TRAIN_PROTOCOL,
        "step_feeds": {ph.name: {"npz": f"train/pool/{ph.name}"} for ph in pool},
        "batch_index": None if batch_index is None else "train/batch_index",
        "loss_per_step": "expected/loss_per_step",
        "initial_values_note": INITIAL_VALUES_NOTE,
    }
    if step_sizes is not None:
        train["step_sizes"] = "train/step_sizes"
    if extra_train:
        train.update(extra_train)
    case.update({
        "feeds": [tensor_spec(t) for t in feeds],
        "fetches": [tensor_spec(t) for t in fetches],
        "init_op": init_op.name,
        "train_op": train_op.name,
        "loss": loss.name,
        "steps": steps,
        "hyperparameters": hyperparameters,
        "variables": variables,
        "train": train,
        "evals": eval_entries,
        "suggested_tolerance": tolerance,
    })
    return case, arrays


def const_weights(rng, shape, scale=None):
    scale = scale if scale is not None else np.sqrt(2.0 / shape[0])
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def strip_attrs(graph_def, prefixes=("_Xla",)):
    gd = v1.GraphDef()
    gd.CopyFrom(graph_def)
    for n in gd.node:
        for k in [k for k in n.attr if k.startswith(prefixes)]:
            del n.attr[k]
    return gd


def run_graph_def(graph_def, fetch_names, feed_by_name, soft_placement=False, metadata=False):
    g = tf.Graph()
    with g.as_default():
        v1.import_graph_def(graph_def, name="")
    config = v1.ConfigProto(inter_op_parallelism_threads=1, intra_op_parallelism_threads=1,
                            allow_soft_placement=soft_placement)
    with v1.Session(graph=g, config=config) as s:
        fd = {g.get_tensor_by_name(k): v for k, v in feed_by_name.items()}
        if metadata:
            md = v1.RunMetadata()
            opts = v1.RunOptions(output_partition_graphs=True)
            out = s.run(fetch_names, feed_dict=fd, options=opts, run_metadata=md)
            return out, md
        return s.run(fetch_names, feed_dict=fd)

