"""benchmarks/row_split.py: a row times the workload with row parts and on the pool, and says
which parts each signature ran as; the thresholds reach the Session through HLOBRIDGE_FLAGS and
are given back after."""

import argparse

import pytest

from benchmarks import row_split as bench
from benchmarks.models import workloads
from hlobridge import flags


@pytest.fixture(scope="module")
def cnn():
    return workloads(["cnn_infer_bn/batch4"])[0][0]


def test_a_row_times_parts_against_the_pool(cnn, monkeypatch):
    monkeypatch.setenv(flags.ENV_VAR, "--small-cluster-flops=0 --row-split-flops=0")  # split this small cluster
    flags.from_environment.cache_clear()
    timing = argparse.Namespace(repeat=2, warmup=1, steps=None, block_s=0.01)
    row = bench.measure(cnn, timing)
    assert row["workload"] == "cnn_infer_bn/batch4"
    assert row["row parts"] == "2+2"
    assert float(row["parts/pool"]) > 0
    assert flags.from_environment().row_split_flops == 0  # the process's flags, given back
    monkeypatch.undo()
    flags.from_environment.cache_clear()


def test_by_default_a_small_cluster_runs_whole(cnn):
    assert bench.parts_of(bench.started(cnn, "")) == "whole"
