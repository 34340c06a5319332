#!/usr/bin/env python3
"""TensorFlow's own steady-state time per training step on corpus training cases.

Run with a Python that has TensorFlow (a development tool only, never an hlobridge dependency):

    .tfvenv/bin/python benchmarks/tf_baseline.py CASE_DIR [CASE_DIR ...]
        [--steps N] [--warmup N] [--repeat R] [--onednn {default,on,off}]
        [--intra-op N] [--inter-op N] [--json-out FILE]

CASE_DIR is a corpus case folder (graph.pb, case.json, data.npz; format and protocol in
../shared/graphs/README.md). Cases whose case.json "kind" is not "train" are skipped with a
note on stderr.

For each training case, as a ``tf.compat.v1.Session`` would run it:

1. import graph.pb into a fresh ``tf.Graph``;
2. run ``init_op``, feeding each variable's ``initial_value`` (npz) into its
   ``initial_value_tensor``; variables whose initial value is stored as a summary (too large)
   are not fed, so their initializer runs as written (it is seeded, so the values are the same);
3. build step 0's feeds (``pool[batch_index[0]]``, the whole pool when ``batch_index`` is null,
   ``pool[batch_index[0, :step_sizes[0]]]`` with the ``train.step_sizes`` extension);
4. run ``sess.run([train_op, loss], feed_dict)`` ``--warmup`` times, then ``--repeat`` times
   ``--steps`` runs, each repeat timed as a whole with ``time.perf_counter``. The same step-0
   feeds are used for every run; variables keep training (no re-init between repeats).

ms/step of a repeat = its wall time / steps; the median and minimum over the repeats are
reported.

Configuration: TensorFlow's defaults. ``--onednn default`` (the default) removes
TF_ENABLE_ONEDNN_OPTS from the environment so TF uses its build default (oneDNN on for x86
Linux); ``on``/``off`` set it to 1/0. Thread pools: ``ConfigProto`` intra_op / inter_op
parallelism 0, i.e. TF's default (one thread per core); ``--intra-op``/``--inter-op`` override.
No XLA, no TF_DETERMINISTIC_OPS, grappler as default.

Output: one JSON object per case on stdout, one per line, nothing else on stdout (TF logging is
silenced with TF_CPP_MIN_LOG_LEVEL=3, and anything TF writes to fd 1 is redirected to stderr):

    {"case": ..., "framework": "tensorflow", "tf_version": ..., "ms_per_step_median": ...,
     "ms_per_step_min": ..., "steps": ..., "warmup": ..., "repeat": ..., "onednn": ...,
     "intra_op_threads": ..., "inter_op_threads": ..., "first_loss": ...,
     "expected_first_loss": ..., "last_loss": ...}

``first_loss`` is the loss of the first run after init (step 0 of the protocol; null with
``--warmup 0``), next to the case's ``loss_per_step[0]`` (``expected_first_loss``), as a sanity
check that the graph was set up as the protocol says; ``last_loss`` is the last timed run's.
A case that fails gets an object with ``"error"`` and null timings, and the exit status is 1.
With ``--json-out FILE`` the objects are also written to FILE as a JSON list.

SERVING (``--serve``, no CASE_DIR; what benchmarks/models.py runs): one JSON command per line
on stdin, one JSON reply per line on stdout, until stdin closes.

    {"load": CASE_DIR, "run": null}      a training case: import, init, step 0's feeds
    {"load": CASE_DIR, "run": "batch2"}  an inference case's run of that name
      -> {"start_s": ..., "outputs": [...], "tf_version": ..., "onednn": ...}
         start_s: reading graph.pb to the first run's results (import, Session, init, first
         run); outputs: that run's fetches as nested lists (null for an op, the train op)
    {"steps": N}                         N runs in a row -> {"ms_per_step": ...}

A command that fails is answered {"error": "..."} (traceback on stderr). A load closes the
previous case's Session. ``--onednn``, ``--intra-op`` and ``--inter-op`` apply as above.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import traceback
from pathlib import Path

ONEDNN_ENV = "TF_ENABLE_ONEDNN_OPTS"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="TensorFlow tf.compat.v1.Session ms/step on corpus training cases."
    )
    p.add_argument("cases", nargs="*", type=Path, metavar="CASE_DIR")
    p.add_argument(
        "--steps", type=int, default=50, help="timed steps per repeat (default 50)"
    )
    p.add_argument(
        "--warmup", type=int, default=10, help="untimed steps first (default 10)"
    )
    p.add_argument("--repeat", type=int, default=5, help="timed repeats (default 5)")
    p.add_argument(
        "--onednn",
        choices=("default", "on", "off"),
        default="default",
        help="TF_ENABLE_ONEDNN_OPTS: default = TF's build default (env var unset), on=1, off=0",
    )
    p.add_argument(
        "--intra-op",
        type=int,
        default=0,
        help="intra_op_parallelism_threads (0 = TF default)",
    )
    p.add_argument(
        "--inter-op",
        type=int,
        default=0,
        help="inter_op_parallelism_threads (0 = TF default)",
    )
    p.add_argument(
        "--json-out", type=Path, help="also write the results as a JSON list"
    )
    p.add_argument(
        "--serve",
        action="store_true",
        help="time blocks on request, one JSON command per stdin line (see SERVING)",
    )
    args = p.parse_args(argv)
    if args.steps < 1 or args.repeat < 1 or args.warmup < 0:
        p.error("--steps and --repeat must be >= 1, --warmup >= 0")
    if not args.cases and not args.serve:
        p.error("give CASE_DIRs, or --serve")
    return args


def configure_env(onednn: str) -> None:
    """Set TF's environment; must run before tensorflow is imported."""
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    if onednn == "default":
        os.environ.pop(ONEDNN_ENV, None)
    else:
        os.environ[ONEDNN_ENV] = "1" if onednn == "on" else "0"


def step0_feeds(case: dict, data) -> dict:
    """tensor name -> array fed at protocol step 0."""
    import numpy as np

    train = case["train"]
    bi_key = train.get("batch_index")
    idx = None
    if bi_key is not None:
        idx = np.asarray(data[bi_key])[0]
        sizes_key = train.get("step_sizes")
        if sizes_key is not None:
            idx = idx[: int(np.asarray(data[sizes_key])[0])]
    feeds = {}
    for name, ref in train["step_feeds"].items():
        pool = np.asarray(data[ref["npz"]])
        arr = pool if idx is None else pool[idx]
        feeds[name] = np.ascontiguousarray(arr)
    return feeds


def init_feeds(case: dict, data) -> dict:
    """initial_value_tensor -> initial value, for variables whose value is stored in full."""
    feeds = {}
    for var in case.get("variables", []):
        tensor = var.get("initial_value_tensor")
        ref = var.get("initial_value") or {}
        key = ref.get("npz")  # absent when the array is stored as a summary
        if tensor and key and key in data:
            feeds[tensor] = data[key]
    return feeds


def run_feeds(case: dict, data, run_name: str) -> tuple[list, dict]:
    """An inference run's fetches (its expected tensors) and feeds."""
    (run,) = [r for r in case["runs"] if r["name"] == run_name]
    return list(run["expected"]), {n: data[k] for n, k in run["feeds"].items()}


def graph_element(graph, name: str):
    return (
        graph.get_tensor_by_name(name)
        if ":" in name
        else graph.get_operation_by_name(name)
    )


def load_case(case_dir: Path):
    """(case.json, data.npz's arrays by key) of a case folder, every array read now: reading a
    compressed npz is no part of TensorFlow's start."""
    import numpy as np

    case = json.loads((case_dir / "case.json").read_text())
    with np.load(case_dir / case.get("data", "data.npz")) as npz:
        return case, {k: npz[k] for k in npz.files}


def prepare(tf, case_dir: Path, case: dict, data, args, run_name: str | None = None):
    """A Session on the imported graph, initialised as the protocol says, with its fetches and
    feeds: the training step 0's, or the inference run `run_name`'s. Returns
    (sess, fetches, feed_dict)."""
    graph_def = tf.compat.v1.GraphDef()
    graph_def.ParseFromString(
        (case_dir / case.get("graph_pb", "graph.pb")).read_bytes()
    )
    graph = tf.Graph()
    with graph.as_default():
        tf.import_graph_def(graph_def, name="")

    config = tf.compat.v1.ConfigProto(
        intra_op_parallelism_threads=args.intra_op,
        inter_op_parallelism_threads=args.inter_op,
    )
    sess = tf.compat.v1.Session(graph=graph, config=config)
    if run_name is None:
        ifeeds = {
            graph.get_tensor_by_name(k): v for k, v in init_feeds(case, data).items()
        }
        sess.run(graph_element(graph, case["init_op"]), feed_dict=ifeeds)
        names, feeds = [case["train_op"], case["loss"]], step0_feeds(case, data)
    else:
        names, feeds = run_feeds(case, data, run_name)
    fetches = [graph_element(graph, n) for n in names]
    feed_dict = {graph.get_tensor_by_name(k): v for k, v in feeds.items()}
    return sess, fetches, feed_dict


def time_steps(sess, fetches, feed_dict, steps: int) -> tuple[float, list]:
    """ms per run of `steps` runs in a row, and the last run's results."""
    t0 = time.perf_counter()
    for _ in range(steps):
        out = sess.run(fetches, feed_dict)
    return (time.perf_counter() - t0) * 1e3 / steps, out


def bench_case(tf, case_dir: Path, args: argparse.Namespace) -> dict | None:
    import numpy as np

    case, data = load_case(case_dir)
    name = case.get("name") or case_dir.name
    if case.get("kind") != "train":
        print(
            f"tf_baseline: skipping {name}: kind {case.get('kind')!r}, not 'train'",
            file=sys.stderr,
        )
        return None
    sess, fetches, feed_dict = prepare(tf, case_dir, case, data, args)
    with sess:
        first_loss = None
        for _ in range(args.warmup):
            _, loss = sess.run(fetches, feed_dict)
            if first_loss is None:
                first_loss = float(loss)

        per_step_ms = []
        for _ in range(args.repeat):
            ms, (_, loss) = time_steps(sess, fetches, feed_dict, args.steps)
            per_step_ms.append(ms)
        last_loss = float(loss)

    expected_first = None
    lps_key = case["train"].get("loss_per_step")
    if lps_key and lps_key in data:
        expected_first = float(np.asarray(data[lps_key]).reshape(-1)[0])

    return {
        "case": name,
        "framework": "tensorflow",
        "tf_version": tf.__version__,
        "ms_per_step_median": statistics.median(per_step_ms),
        "ms_per_step_min": min(per_step_ms),
        "steps": args.steps,
        "warmup": args.warmup,
        "repeat": args.repeat,
        "onednn": args.onednn,
        "intra_op_threads": args.intra_op,
        "inter_op_threads": args.inter_op,
        "first_loss": first_loss,
        "expected_first_loss": expected_first,
        "last_loss": last_loss,
    }


def answer_each(commands, out, handle) -> None:
    """The SERVING loop (ort_baseline.py's too): each JSON command line answered with
    `handle(command)`'s reply, a command that fails with {"error": ...}, one flushed line each."""
    for line in commands:
        try:
            reply = handle(json.loads(line))
        except Exception as exc:  # noqa: BLE001 - the caller reports it and goes on
            traceback.print_exc(file=sys.stderr)
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps(reply) + "\n")
        out.flush()


def serve(tf, args, commands, out) -> None:
    """The SERVING protocol: one Session at a time, timed block by block on request, so that a
    caller can interleave TensorFlow's blocks with its own."""
    import numpy as np

    state = {"sess": None}

    def handle(cmd: dict) -> dict:
        if "load" not in cmd:
            sess, fetches, feed_dict = state["sess"]
            return {"ms_per_step": time_steps(sess, fetches, feed_dict, cmd["steps"])[0]}
        if state["sess"] is not None:
            state["sess"][0].close()
            state["sess"] = None
        case_dir = Path(cmd["load"])
        case, data = load_case(case_dir)
        t0 = time.perf_counter()
        state["sess"] = sess, fetches, feed_dict = prepare(tf, case_dir, case, data, args, cmd.get("run"))
        first = sess.run(fetches, feed_dict)
        return {
            "start_s": time.perf_counter() - t0,
            "outputs": [None if v is None else np.asarray(v).tolist() for v in first],
            "tf_version": tf.__version__,
            "onednn": args.onednn,
        }

    answer_each(commands, out, handle)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    configure_env(args.onednn)

    # Keep stdout for the JSON lines only: whatever TF (Python or C++) prints to fd 1 goes to
    # stderr instead.
    sys.stdout.flush()
    json_fd = os.dup(1)
    os.dup2(2, 1)
    out = os.fdopen(json_fd, "w", buffering=1)
    sys.stdout = sys.stderr

    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")

    if args.serve:
        serve(tf, args, sys.stdin, out)
        return 0

    results = []
    failed = False
    for case_dir in args.cases:
        try:
            res = bench_case(tf, case_dir, args)
        except Exception as exc:  # noqa: BLE001 - report it, go on with the other cases
            traceback.print_exc(file=sys.stderr)
            failed = True
            res = {
                "case": case_dir.name,
                "framework": "tensorflow",
                "tf_version": tf.__version__,
                "ms_per_step_median": None,
                "ms_per_step_min": None,
                "steps": args.steps,
                "error": f"{type(exc).__name__}: {exc}",
            }
        if res is None:
            continue
        results.append(res)
        out.write(json.dumps(res) + "\n")

    if args.json_out is not None:
        args.json_out.write_text(json.dumps(results, indent=1) + "\n")
    out.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
