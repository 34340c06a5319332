"""Compile options become iree-compile flags; a bad target or CUDA arch is refused up front."""

import pytest

from hlobridge import HlobridgeError
from hlobridge.compile.options import (AHEAD_DATA_TILING_FLAG, CPU_DISTRIBUTION_FLAG, DATA_TILING_FLAG, NO_CONST_EVAL_FLAG,
                                      PAD_FUSION_FLAG, CompileOptions)


def test_cpu_and_cuda_flags():
    assert CompileOptions(cpu="generic", cpu_triple="aarch64").iree_flags()[:3] == [
        "--iree-llvmcpu-target-cpu=generic", CPU_DISTRIBUTION_FLAG, "--iree-llvmcpu-target-triple=aarch64-unknown-linux-gnu"]
    cuda = CompileOptions(target="cuda", cuda_arch="sm_86").iree_flags()
    assert cuda[0] == "--iree-cuda-target=sm_86" and CPU_DISTRIBUTION_FLAG not in cuda
    assert "--iree-input-demote-f64-to-f32=false" in CompileOptions().iree_flags()


def test_data_tiling_is_decided_by_where_the_weights_are():
    auto = CompileOptions()
    assert DATA_TILING_FLAG not in auto.iree_flags()
    assert DATA_TILING_FLAG in auto.for_module(reads_variables=False).iree_flags()  # constant weights
    assert DATA_TILING_FLAG not in auto.for_module(reads_variables=True).iree_flags()  # variables: training
    assert CompileOptions(data_tiling="on").for_module(reads_variables=True).data_tiling == "on"


def test_data_tiling_ahead_packs_weights_at_compile_time():
    """IREE's data tiling from global optimization (weights packed into the module), never
    with --iree-opt-data-tiling, which would override it."""
    flags = CompileOptions(data_tiling="ahead").for_module(reads_variables=False).iree_flags()
    assert AHEAD_DATA_TILING_FLAG in flags and DATA_TILING_FLAG not in flags
    assert CompileOptions(data_tiling="ahead").splits_narrow_rows()  # its tiles are the host's too


def test_constant_expressions_are_computed_at_load_except_for_weights_packed_ahead():
    """IREE's compile-time evaluation is off (it cost keras_random_ops' compile 3x), except
    where data_tiling="ahead" needs it to pack the weights into the module."""
    for options in (CompileOptions(), CompileOptions(target="cuda"), CompileOptions(data_tiling="on")):
        assert NO_CONST_EVAL_FLAG in options.for_module(reads_variables=False).iree_flags()
    assert NO_CONST_EVAL_FLAG not in CompileOptions(data_tiling="ahead").for_module(reads_variables=False).iree_flags()


def test_pad_fusion_goes_with_constant_weights_on_the_cpu():
    assert PAD_FUSION_FLAG in CompileOptions().for_module(reads_variables=False).iree_flags()
    assert PAD_FUSION_FLAG not in CompileOptions().for_module(reads_variables=True).iree_flags()
    assert PAD_FUSION_FLAG not in CompileOptions(pad_fusion="off").for_module(reads_variables=False).iree_flags()
    cuda = CompileOptions(target="cuda").for_module(reads_variables=False)
    assert PAD_FUSION_FLAG not in cuda.iree_flags()


@pytest.mark.parametrize("options, message", [
    (CompileOptions(target="tpu"), "unknown target 'tpu'"),
    (CompileOptions(data_tiling="yes"), "data_tiling must be one of auto, on, off, ahead"),
    (CompileOptions(pad_fusion="yes"), "pad_fusion must be one of auto, on, off"),
    (CompileOptions(target="cuda", cuda_arch="hopper"), "--cuda-arch must look like sm_80"),
    (CompileOptions(target="cuda", lowering_target="tpu"), "unknown lowering target 'tpu'"),
])
def test_bad_options_are_refused(options, message):
    with pytest.raises(HlobridgeError, match=message):
        options.iree_flags()


def test_lowering_target_and_bf16x3_are_options_of_their_own():
    assert CompileOptions(target="cuda").lowers_for() == "cuda"
    assert CompileOptions(target="cuda", lowering_target="llvm-cpu").lowers_for() == "llvm-cpu"
    names = lambda o: [p.name for s in o.stages() for p in s.passes]  # noqa: E731
    assert "split-contractions" in names(CompileOptions(bf16x3=True))
    assert names(CompileOptions(bf16x3=True)) == names(CompileOptions(precision="bf16x3"))
    assert "split-contractions" not in names(CompileOptions(bf16x3=True, precision="bf16"))
