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
def test_a_gpu_outside_an_mpi_launch_has_no_default_channel():
    """NOT RUN yet (no GPU lent). Outside an OpenMPI launch IREE's cuda device has no channel
    provider, and the module's default channel needs one (IREE's cuda_device.c: "default
    collective channel ID requested but no channel provider has been set on the device"). The
    launched one-rank check is test_device_unit.py's GPU test (tests/distributed/gpu_worker.py)."""
    vmfb = compile_mlir(all_reduce_module(SHAPES, np.float32, 1), CompileOptions(target="cuda"))
    args = [np.arange(12, dtype=np.float32).reshape(3, 4), np.ones(4, np.float32), np.float32(3)]
    with pytest.raises(RuntimeError, match="no channel provider"):
        _call(vmfb, "cuda", args)
