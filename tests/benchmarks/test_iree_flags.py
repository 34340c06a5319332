"""benchmarks/iree_flags.py: a row compiles the workload twice, once with the flags added, and
times both; the flags reach iree-compile (a bad one stops the row, not a quiet fallback)."""

import argparse

import pytest

from benchmarks import iree_flags as bench
from benchmarks.models import workloads
from hlobridge.errors import JitFallbackWarning


@pytest.fixture(scope="module")
def linreg():
    return workloads(["seed_linreg_resource"])[0][0]


def test_a_row_times_the_step_with_and_without_the_flags(linreg):
    timing = argparse.Namespace(repeat=2, warmup=1, steps=None, block_s=0.01)
    row = bench.measure(linreg, ["--iree-llvmcpu-distribution-size=256"], timing)
    assert row["workload"] == "seed_linreg_resource"
    assert float(row["on/off median"]) > 0 and float(row["on/off best"]) > 0


def test_an_option_can_be_the_difference(shared_graphs):
    """--without fold_batch_norm: the "off" Session compiles with the option False."""
    cnn = workloads(["cnn_infer_bn"])[0][0]
    timing = argparse.Namespace(repeat=2, warmup=1, steps=None, block_s=0.01)
    row = bench.measure(cnn, [], timing, without=("fold_batch_norm",))
    assert float(row["on/off median"]) > 0
    assert not bench.started(cnn, [], ("fold_batch_norm",))._jit.options.fold_batch_norm


def test_the_flags_reach_iree_compile(linreg):
    with pytest.raises(JitFallbackWarning, match="no-such-flag"):
        bench.started(linreg, ["--iree-no-such-flag"])
