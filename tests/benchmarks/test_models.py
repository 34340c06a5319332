"""benchmarks/models.py as a user runs it, on one small corpus case without TensorFlow (the
test needs neither TF nor bench-models/): the table, the JSON rows, the check, the skip line."""

import json
import math

from benchmarks import models as bench


def test_models_benchmark_reports_a_checked_row(capsys, tmp_path):
    out = tmp_path / "models.json"
    assert bench.main(["--models", "mlp_adam", "--quick", "--no-tf", "--markdown", "--json-out", str(out)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0] == ("| model | hlobridge ms/step | TF ms/step | hlobridge/TF | cold start s | warm start s "
                        "| TF start s | check |")
    model, hlobridge_ms, tf_ms, ratio, cold, warm, tf_start, check = (c.strip() for c in table[2].strip("|").split("|"))
    assert (model, tf_ms, ratio, tf_start, check) == ("mlp_adam", "-", "-", "-", "ok")
    assert float(hlobridge_ms.split()[0]) > 0 and float(cold) > float(warm) > 0
    assert "median (best) of 3 interleaved blocks" in table[-1] and "TensorFlow not run" in table[-1]
    (row,) = json.loads(out.read_text())
    assert row["model"] == "mlp_adam" and row["kind"] == "train" and row["check"] == "ok"
    assert row["check_error"] <= bench.CHECK_TOLERANCE and row["repeat"] == 3 and row["steps"] >= 1
    assert 0 < row["hlobridge_ms_best"] <= row["hlobridge_ms"]
    assert row["cold_start_s"] > row["warm_start_s"] > 0 and row["clusters"] >= 1
    assert not any(k.startswith("tf") or k == "ratio" for k in row)


def test_a_bench_model_not_written_is_skipped_with_the_command_that_writes_it(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(bench, "BENCH_MODELS", tmp_path)
    assert bench.workloads(["resnet50_train"]) == []
    assert "write it with: .tfvenv/bin/python tools/make_bench_models.py resnet50_train" in capsys.readouterr().err


def test_an_inference_case_is_one_workload_per_run_and_one_run_can_be_chosen():
    (w, folder, run), = bench.workloads(["cnn_infer_bn/batch4"])
    assert (w.name, folder.name, run, w.init) == ("cnn_infer_bn/batch4", "cnn_infer_bn", "batch4", None)
    assert w.graph.name == "graph.pb" and len(w.expected) == len(w.fetches) == 2


def test_the_check_is_relative_to_each_outputs_largest_magnitude():
    assert math.isclose(bench.check_error([None, 2.002], [None, 2.0]), 1e-3)  # the train op fetches nothing
    assert math.isclose(bench.check_error([[100.0, 0.1]], [[100.0, 0.0]]), 1e-3)
    assert bench.check_error([[1.0, float("nan")]], [[1.0, 2.0]]) == math.inf
    assert bench.check_error([[1.0]], [[1.0, 2.0]]) == math.inf
