"""benchmarks/ort_baseline.py --serve as benchmarks/models.py drives it, on the corpus's frozen
cnn_infer_bn: tf2onnx's model, run by ONNX Runtime, gives TensorFlow's recorded outputs, the
.onnx is converted once and then read from the cache, a training case is refused in one line.
Skipped where the TensorFlow dev venv lacks tf2onnx or onnxruntime (neither is an hlobridge
dependency)."""

import json
import subprocess
from pathlib import Path

import pytest

from benchmarks import models as bench

TF_PYTHON = bench.ROOT / ".tfvenv" / "bin" / "python"


def _has_ort() -> bool:
    if not TF_PYTHON.exists():
        return False
    probe = "import importlib.util as u; print(all(u.find_spec(m) for m in ('tf2onnx', 'onnxruntime', 'tensorflow')))"
    return subprocess.run([str(TF_PYTHON), "-c", probe], capture_output=True, text=True).stdout.strip() == "True"


pytestmark = pytest.mark.skipif(not _has_ort(), reason="no tf2onnx/onnxruntime/tensorflow in .tfvenv")


def test_onnx_runtime_serves_tensorflows_results_from_a_cached_conversion(tmp_path):
    case = bench.case_dir("cnn_infer_bn")
    (w, _, run), = bench.workloads(["cnn_infer_bn/batch4"])
    commands = [{"load": str(case), "run": run}, {"steps": 3}, {"load": str(case), "run": run},
                {"load": str(bench.case_dir("mlp_adam")), "run": None}]
    proc = subprocess.run([str(TF_PYTHON), str(bench.ROOT / "benchmarks" / "ort_baseline.py"), "--serve",
                           "--cache-dir", str(tmp_path)], input="".join(json.dumps(c) + "\n" for c in commands),
                          capture_output=True, text=True, timeout=600)
    first, block, again, train = map(json.loads, proc.stdout.splitlines())
    assert bench.check_error(first["outputs"], w.expected) <= bench.CHECK_TOLERANCE
    assert first["convert_s"] > 0 and again["convert_s"] == 0 and first["onnx"] == again["onnx"]
    assert [p.name for p in tmp_path.iterdir()] == [Path(first["onnx"]).name]
    assert block["ms_per_step"] > 0
    assert train == {"error": "ValueError: mlp_adam is a training case: ONNX Runtime runs inference runs only"}
