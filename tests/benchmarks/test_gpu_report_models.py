"""benchmarks/gpu_report_models.py: a corpus training step's GPU report per lowering, compiled
for CUDA without a GPU: one Markdown row each, the JSON with every cluster's dispatches."""

import json

from benchmarks import gpu_report_models as bench

MNIST_FLOPS = 2 * 100 * 784 * 10  # the forward product x[100, 784] . W[784, 10]


def test_a_training_step_is_reported_per_lowering(shared_graphs, tmp_path, capsys):
    out = tmp_path / "report.json"
    assert bench.main([str(shared_graphs / "seed_mnist_softmax"), "--precision", "f32",
                       "--lowering", "cuda", "llvm-cpu", "--json", str(out)]) == 0
    rows = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| seed_mnist_softmax")]
    assert len(rows) == 2 and "| f32 | cuda |" in rows[0] and "| f32 | llvm-cpu |" in rows[1]
    cuda, cpu = json.loads(out.read_text())
    assert cuda["batch"]["x:0"][0] == 100  # the case's own batch
    for r in (cuda, cpu):
        (cluster,) = r["clusters"].values()
        assert cluster["gpu"]["missing"] == 0 and cluster["gpu_dispatches"]
        # the forward product and the weight gradient (the input gradient is not needed)
        assert r["gpu"]["flops"] >= 2 * MNIST_FLOPS and r["gpu"]["tensor_core_flops"] == 0
    assert cuda["gpu"]["dispatches"] < cpu["gpu"]["dispatches"]  # no K blocks of 256 on the GPU
