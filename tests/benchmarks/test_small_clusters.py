"""benchmarks/small_clusters.py: a row runs one graph on both executors, with the estimate the
Session's choice reads, and leaves the process's flags as they were."""

from benchmarks import small_clusters as bench
from hlobridge import flags


def test_a_row_times_both_executors_and_reports_the_estimate():
    row = bench.measure("mlp", *bench.mlp(4, 64, 64, 10), repeat=1, block_s=0.01)
    # the two dots (2*4*64*64 + 2*4*64*10 flops) and their bias add, ReLU and broadcast
    assert 37_888 < float(row["Mflop"]) * 1e6 < 50_000
    sync, pool = float(row["calling thread ms"]), float(row["thread pool ms"])
    assert sync > 0 and pool > 0 and abs(float(row["thread/pool"]) - sync / pool) < 0.01 + 0.01 * sync / pool
    assert flags.from_environment().small_cluster_flops == flags.Flags.small_cluster_flops


def test_the_sweep_crosses_the_threshold():
    works = [2 * b * (w * h + h * o) for b, w, h, o in bench.MLPS]
    assert min(works) < flags.Flags.small_cluster_flops < max(works)
