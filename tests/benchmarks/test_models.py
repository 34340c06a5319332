"""benchmarks/models.py as a user runs it, on one small corpus case without TensorFlow (the
test needs neither TF nor bench-models/): the table, the JSON rows, the check, the skip line."""

import json
import math

import numpy as np

from benchmarks import models as bench

HEAD = ("| model | hlobridge ms/step | TF ms/step | ORT ms/step | hlobridge/TF | hlobridge/ORT | cold start s "
        "| warm start s | TF start s | check |")


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip("|").split("|")]


class FakeBaseline:
    """A baseline server speaking the SERVING protocol without TensorFlow or ONNX Runtime: its
    first run gives TensorFlow's recorded outputs times `scale`, each block takes `ms`."""

    def __init__(self, ms: float, scale: float = 1.0, version: dict | None = None):
        self.ms, self.scale, self.version, self.asked = ms, scale, version or {}, []

    def ask(self, **command) -> dict:
        self.asked.append(command)
        if "steps" in command:
            return {"ms_per_step": self.ms}
        case = command["load"].rsplit("/", 1)[-1]
        (w, _, _), = bench.workloads([case if command["run"] is None else f"{case}/{command['run']}"])
        return {"start_s": 0.5, "convert_s": 1.0,
                "outputs": [None if e is None else (np.asarray(e) * self.scale).tolist() for e in w.expected],
                **self.version}

    def close(self) -> None:
        pass


def fake_servers(monkeypatch, tf_ms=4.0, ort_ms=1.0, ort_scale=1.0):
    tf = FakeBaseline(tf_ms, version={"tf_version": "2.x", "onednn": "default"})
    ort = FakeBaseline(ort_ms, ort_scale, version={"ort_version": "1.x", "tf2onnx_version": "1.y"})
    monkeypatch.setattr(bench, "TFServer", lambda python: tf)
    monkeypatch.setattr(bench, "ORTServer", lambda python: ort)
    return tf, ort


def test_models_benchmark_reports_a_checked_row(capsys, tmp_path):
    out = tmp_path / "models.json"
    assert bench.main(["--models", "mlp_adam", "--quick", "--no-tf", "--no-ort", "--markdown",
                       "--json-out", str(out)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0] == HEAD
    model, hlobridge_ms, tf_ms, ort_ms, ratio, ort_ratio, cold, warm, tf_start, check = cells(table[2])
    assert (model, tf_ms, ort_ms, ratio, ort_ratio, tf_start, check) == ("mlp_adam", "-", "-", "-", "-", "-", "ok")
    assert float(hlobridge_ms.split()[0]) > 0 and float(cold) > float(warm) > 0
    assert "median (best) of 3 interleaved blocks" in table[-1] and "TensorFlow not run" in table[-1]
    assert "ONNX Runtime not run" in table[-1]
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


def test_an_inference_model_gets_onnx_runtime_columns_checked_before_timing(capsys, monkeypatch, tmp_path):
    tf, ort = fake_servers(monkeypatch)
    out = tmp_path / "models.json"
    assert bench.main(["--models", "cnn_infer_bn/batch4", "--quick", "--markdown", "--tf-python", bench.sys.executable,
                       "--json-out", str(out)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0] == HEAD
    model, hb_ms, tf_ms, ort_ms, ratio, ort_ratio, *_, check = cells(table[2])
    assert (model, tf_ms, ort_ms, check) == ("cnn_infer_bn/batch4", "4 (4)", "1 (1)", "ok")
    (row,) = json.loads(out.read_text())
    assert math.isclose(row["ratio"], row["hlobridge_ms"] / 4.0) and ratio == f"{row['ratio']:.2f}"
    assert math.isclose(row["ort_ratio"], row["hlobridge_ms"]) and ort_ratio == f"{row['ort_ratio']:.2f}"
    assert row["ort_check_error"] == 0.0 and row["ort_convert_s"] == 1.0
    geomean = cells(table[3])
    assert geomean[0] == "geometric mean" and geomean[4:6] == [ratio, ort_ratio]
    assert "ONNX Runtime 1.x (tf2onnx 1.y" in table[-1]
    assert ort.asked[0]["run"] == "batch4" and sum("steps" in c for c in ort.asked) >= 3


def test_a_wrong_onnx_conversion_is_reported_and_not_timed(capsys, monkeypatch):
    tf, ort = fake_servers(monkeypatch, ort_scale=1.01)
    assert bench.main(["--models", "cnn_infer_bn/batch4", "--quick", "--tf-python", bench.sys.executable]) == 1
    table = capsys.readouterr().out
    assert "MISMATCH" in table and "ORT 1.0e-02" in table
    assert not any("steps" in c for c in ort.asked)


def test_training_cases_ask_nothing_of_onnx_runtime(capsys, monkeypatch, tmp_path):
    tf, ort = fake_servers(monkeypatch)
    started = []
    monkeypatch.setattr(bench, "ORTServer", lambda python: started.append(python) or ort)
    out = tmp_path / "models.json"
    assert bench.main(["--models", "seed_linreg_resource", "--quick", "--tf-python", bench.sys.executable,
                       "--json-out", str(out)]) == 0
    (row,) = json.loads(out.read_text())
    assert started == [] and ort.asked == [] and "ort_ms" not in row and row["tf_ms"] == 4.0
