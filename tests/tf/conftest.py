"""tests/tf run where TensorFlow is installed (.ci/run_tf makes such a venv); elsewhere every
module but test_missing_tensorflow.py skips at import (pytest.importorskip).

TensorFlow reads these when it loads: the reference environment of tools/tf_corpus.py (no
oneDNN rewrites, so TF's own results are the plain kernels'), and quiet logs."""

import os

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# Models several layers deep, as the conformance corpus judges them (tools/conformance_cases TOL_MODEL).
TOL = {"rtol": 1e-4, "atol": 1e-5}


def compiled_clusters(f) -> int:
    """How many cluster signatures the function's Sessions compiled (or found in the disk
    cache): the run went through IREE, not only reference kernels."""
    return sum(e.source != "fallback" for _, session in f.traces.values() for e in session.compile_events)
