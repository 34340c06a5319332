#!/usr/bin/env python3
"""ONNX Runtime's time per run on the frozen inference graphs, the way a user deploying a
TensorFlow model to a CPU would run it: tf2onnx converts graph.pb, onnxruntime runs the result.

Run with a Python that has TensorFlow, tf2onnx and onnxruntime (development tools only, never
hlobridge dependencies; `.tfvenv/bin/pip install tf2onnx onnxruntime`). It speaks the SERVING
protocol of benchmarks/tf_baseline.py, so that benchmarks/models.py interleaves its blocks with
hlobridge's and TensorFlow's:

    .tfvenv/bin/python benchmarks/ort_baseline.py --serve [--cache-dir DIR] [--opset 17]

    {"load": CASE_DIR, "run": "batch4"}  an inference case's run of that name
      -> {"start_s": ..., "convert_s": ..., "outputs": [...], "ort_version": ...,
          "tf2onnx_version": ..., "opset": ..., "onnx": PATH}
         convert_s: tf2onnx's conversion (0 when the .onnx was in the cache); start_s: an
         InferenceSession on the .onnx (default options) to the first run's results
    {"steps": N}                         N runs in a row -> {"ms_per_step": ...}

A training case (run null) is refused: ONNX Runtime runs inference only. The converted model is
cached as DIR/<case>-<hash>.onnx, the hash over graph.pb, the feeds, the fetches, the opset and
tf2onnx's version, so a changed graph is converted again. A command that fails is answered
{"error": "..."} (traceback on stderr).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.tf_baseline import answer_each, load_case, run_feeds  # noqa: E402 - stdlib only at import

DEFAULT_CACHE = Path(__file__).resolve().parent.parent / "bench-models" / "onnx"


def tensor_name(name: str) -> str:
    """TF's tensor name of a feed or fetch ("x" -> "x:0"), which tf2onnx keeps as the ONNX name."""
    return name if ":" in name else f"{name}:0"


def onnx_path(case_dir: Path, case: dict, inputs: list, outputs: list, opset: int, cache: Path) -> Path:
    import tf2onnx

    graph = (case_dir / case.get("graph_pb", "graph.pb")).read_bytes()
    key = json.dumps([inputs, outputs, opset, tf2onnx.__version__]).encode()
    digest = hashlib.sha256(graph + key).hexdigest()[:16]
    return cache / f"{case.get('name') or case_dir.name}-{digest}.onnx"


def convert(tf, case_dir: Path, case: dict, inputs: list, outputs: list, path: Path, opset: int) -> float:
    """tf2onnx's conversion of the frozen graph.pb to `path` (written atomically); seconds taken."""
    import tf2onnx

    t0 = time.perf_counter()
    graph_def = tf.compat.v1.GraphDef()
    graph_def.ParseFromString((case_dir / case.get("graph_pb", "graph.pb")).read_bytes())
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tf2onnx.convert.from_graph_def(graph_def, input_names=inputs, output_names=outputs, opset=opset,
                                   output_path=str(tmp))
    tmp.replace(path)
    return time.perf_counter() - t0


def load(tf, case_dir: Path, run_name: str | None, args):
    """(InferenceSession's run of the case's run as a no-argument callable, reply without timings)."""
    import onnxruntime as ort
    import tf2onnx

    if run_name is None:
        raise ValueError(f"{case_dir.name} is a training case: ONNX Runtime runs inference runs only")
    case, data = load_case(case_dir)
    fetches, feeds = run_feeds(case, data, run_name)
    inputs, outputs = sorted(map(tensor_name, feeds)), [tensor_name(f) for f in fetches]
    path = onnx_path(case_dir, case, inputs, outputs, args.opset, Path(args.cache_dir))
    convert_s = 0.0 if path.is_file() else convert(tf, case_dir, case, inputs, outputs, path, args.opset)
    feed = {tensor_name(k): v for k, v in feeds.items()}
    t0 = time.perf_counter()
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    first = sess.run(outputs, feed)
    reply = {"start_s": time.perf_counter() - t0, "convert_s": convert_s,
             "outputs": [v.tolist() for v in first], "ort_version": ort.__version__,
             "tf2onnx_version": tf2onnx.__version__, "opset": args.opset, "onnx": str(path)}
    return (lambda: sess.run(outputs, feed)), reply


def serve(tf, args, commands, out) -> None:
    """The SERVING protocol, one InferenceSession at a time."""
    state = {"run": None}

    def handle(cmd: dict) -> dict:
        if "load" in cmd:
            state["run"] = None
            state["run"], reply = load(tf, Path(cmd["load"]), cmd.get("run"), args)
            return reply
        run_once, t0 = state["run"], time.perf_counter()
        for _ in range(cmd["steps"]):
            run_once()
        return {"ms_per_step": (time.perf_counter() - t0) * 1e3 / cmd["steps"]}

    answer_each(commands, out, handle)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--serve", action="store_true", required=True, help="answer the SERVING protocol on stdin")
    p.add_argument("--cache-dir", default=str(DEFAULT_CACHE), help="where converted .onnx files are kept")
    p.add_argument("--opset", type=int, default=17, help="the ONNX opset tf2onnx targets (default 17)")
    args = p.parse_args(argv)
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    # stdout carries the JSON replies only: whatever TF or tf2onnx prints goes to stderr.
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")
    serve(tf, args, sys.stdin, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
