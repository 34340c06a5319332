"""The GPU path's all-reduce module (hlobridge/distributed/device_allreduce.py): it verifies,
IREE compiles it for cuda and llvm-cpu, and only a GPU driver runs it (local-sync answers
"collectives not implemented", the fact the CPU path is built around)."""

import numpy as np
import pytest
import iree.runtime as rt
from iree.compiler import ir

from hlobridge.compile.iree import compile_mlir
from hlobridge.compile.options import CompileOptions
from hlobridge.distributed.device_allreduce import all_reduce_module

SHAPES = [(3, 4), (4,), ()]


def _call(vmfb, driver, args):
    config = rt.Config(driver)
    ctx = rt.SystemContext(config=config)
    ctx.add_vm_module(rt.VmModule.copy_buffer(config.vm_instance, vmfb))
    return ctx.modules.module.bucket_mean(*args)


def test_the_bucket_is_one_flat_all_reduce_on_channel_1():
    text = all_reduce_module(SHAPES, np.float32, 8)
    assert text.count('"stablehlo.all_reduce"(%flat)') == 1
    assert "replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>" in text
    with ir.Context():
        ir.Module.parse(text).operation.verify()


@pytest.mark.parametrize("target", ["cuda", "llvm-cpu"], ids=["nvptx", "cpu"])  # (an id "cuda" would mark it GPU-only)
def test_iree_compiles_it(target):
    assert compile_mlir(all_reduce_module(SHAPES, np.float32, 2), CompileOptions(target=target))


def test_cpu_drivers_have_no_collectives():
    vmfb = compile_mlir(all_reduce_module(SHAPES, np.float32, 1), CompileOptions(target="llvm-cpu"))
    with pytest.raises(RuntimeError, match="collectives not implemented"):
        _call(vmfb, "local-sync", [np.ones((3, 4), np.float32), np.ones(4, np.float32), np.float32(3)])


@pytest.mark.cuda
def test_one_rank_on_a_gpu_gets_its_own_gradients_back():
    """UNTESTED here (no GPU): one participant, IREE's default channel, mean over 1 = identity."""
    vmfb = compile_mlir(all_reduce_module(SHAPES, np.float32, 1), CompileOptions(target="cuda"))
    args = [np.arange(12, dtype=np.float32).reshape(3, 4), np.ones(4, np.float32), np.float32(3)]
    for got, want in zip(_call(vmfb, "cuda", args), args):
        np.testing.assert_array_equal(np.asarray(got), want)
