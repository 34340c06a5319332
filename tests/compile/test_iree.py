"""iree-compile failing or killed is a CompileError with IREE's message, never a dead process."""

import numpy as np
import pytest

from hlobridge.compile.iree import compile_mlir
from hlobridge.compile.options import CompileOptions
from hlobridge.errors import CompileError
from hlobridge.runtime.session import Session

from tests.corpus import Case

BAD = "func.func @main(%a: tensor<f32>) -> tensor<i32> { return %a : tensor<f32> }"
GOOD = "func.func @main(%a: tensor<f32>) -> tensor<f32> { return %a : tensor<f32> }"


def test_an_iree_error_is_a_compile_error_with_its_diagnostics():
    with pytest.raises(CompileError, match=r"(?s)IREE failed to compile for llvm-cpu:.*type of return operand 0"):
        compile_mlir(BAD, CompileOptions())


def test_a_killed_iree_compile_is_a_compile_error_saying_so(tmp_path, monkeypatch):
    fake = tmp_path / "iree-compile"
    fake.write_text("#!/bin/sh\necho 'iree-compile: out of memory (simulated)' >&2\nkill -9 $$\n")
    fake.chmod(0o755)
    monkeypatch.setenv("IREE_TOOL_PATH", str(tmp_path))
    with pytest.raises(CompileError) as e:
        compile_mlir(GOOD, CompileOptions())
    assert "iree-compile was killed by signal 9" in str(e.value)
    assert "out of memory (simulated)" in str(e.value)


def test_a_module_data_tiling_cannot_compile_is_compiled_untiled(shared_graphs):
    """IREE 3.13 fails on a pack dispatch of cnn_train's step with data tiling: the step still
    compiles (untiled), it does not fall back to reference kernels."""
    case = Case.load(shared_graphs / "cnn_train")
    sess = Session(case.graph_path, cache_dir=False, compile_options=CompileOptions(data_tiling="on"))
    sess.run(case.meta["init_op"], case.init_feeds())
    _, loss = sess.run([case.meta["train_op"], case.meta["loss"]], case.step_feeds(0))
    np.testing.assert_allclose(loss, case.array(case.meta["train"]["loss_per_step"])[0], rtol=1e-5)
    assert {e.source for e in sess.compile_events} == {"compiled"}
