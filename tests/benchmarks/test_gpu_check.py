"""benchmarks/gpu_check.py --smoke: the prepared GPU script's own path on the CPU, on tiny
shapes: every backend row (IREE, XLA, an IREE variant) checked against the CPU's first-step
result before it is timed, the JAX anchor, the table last and the JSON report; a missing model
is a skipped row naming the command that writes it; a variants module that is absent adds none."""

import argparse
import json
import time

import numpy as np
import pytest

from benchmarks import gpu_check

pytest.importorskip("jax", reason="the xla extra (jax, jaxlib) is not installed")


def test_smoke_runs_every_backend_and_the_anchor_and_reports(tmp_path, capsys):
    out = tmp_path / "gpu_check.json"
    rc = gpu_check.main(["--smoke", "--only", "cnn_infer_bn/batch4", "--anchor-job", "cnn_infer_bn/batch4",
                         "--precisions", "f32", "--variants-module", "tests.benchmarks.smoke_iree_variants",
                         "--cuda-tests-s", "60", "--json-out", str(out)])
    assert rc == 0
    report = json.loads(out.read_text())
    rows = {(r["runner"], r["precision"]): r for r in report["rows"]}
    for runner in ("hlobridge iree", "hlobridge xla", "hlobridge iree:hlobridge-fusion"):
        for precision in ("f32", "bf16"):  # an inference workload: f32 and bf16
            row = rows[(runner, precision)]
            assert row["check"] == "ok" and row["check_error"] <= gpu_check.TOLERANCE[precision], row
            assert row["ms_per_step"] > 0 and row["per_s"] == pytest.approx(4 / row["ms_per_step"] * 1e3)
    assert rows[("jax", "f32")]["ms_per_step"] > 0
    assert "skipped" in report["cuda_tests"] or "passed" in report["cuda_tests"]
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("workload") and "cpu-task" in lines[-1]


def test_missing_models_and_variants_are_named_not_fatal(tmp_path):
    missing = gpu_check.jobs(False, tmp_path)
    assert [j.name for j in missing] == ["resnet50_train_224/b64", "bert_base_train/b32",
                                         "keras_resnet50_224/b1", "keras_resnet50_224/b64"]
    assert all(j.workload is None and "make_bench_models.py" in j.missing for j in missing)
    assert gpu_check.iree_variants("benchmarks.no_such_module") == []


def test_a_wrong_result_is_not_timed():
    assert gpu_check.relative_error([None, 1.0], [None, 1.0]) == 0
    assert gpu_check.relative_error([float("nan")], [1.0]) == float("inf")
    assert gpu_check.relative_error([1.1], [1.0]) == pytest.approx(0.1)


def test_precompile_fills_a_cache_of_cuda_modules_without_a_gpu(tmp_path):
    from hlobridge.runtime.module import cuda_available
    if cuda_available():
        pytest.skip("a GPU is here: the strict Session would run, not only compile")
    cache = tmp_path / "cache"
    assert gpu_check.main(["--smoke", "--precompile", str(cache), "--only", "cnn_infer_bn/batch4",
                           "--precisions", "f32", "--variants-module", "benchmarks.no_such_module"]) == 0
    assert len(list(cache.glob("*.vmfb"))) == 2  # the f32 and the bf16 module of the one cluster


def test_the_bert_anchors_train_the_same_model_to_the_same_loss():
    """JAX's and PyTorch's BERT (gpu_anchors.py) share parameters, data and Adam: their first
    losses agree (PyTorch where installed; the GPU machine has it)."""
    args = argparse.Namespace(smoke=True, anchor_job=None, precisions=["f32"], steps=1, repeat=1, warmup=0)
    label, batch, runners = gpu_check.anchor_sets(args)["mlp_adam"]
    rows = {r["runner"]: r for r in gpu_check.anchors(label, batch, runners, args, time.perf_counter() + 300)}
    assert rows["jax"]["first_loss"] == pytest.approx(np.log(2), abs=0.05)  # two classes, BERT's 0.02 init
    if "skipped" not in rows["pytorch"]:
        assert rows["pytorch"]["first_loss"] == pytest.approx(rows["jax"]["first_loss"], rel=1e-4)
    else:
        assert rows["pytorch"]["skipped"] == "not installed: torch"
