"""iree-compile failing or killed is a CompileError with IREE's message, never a dead process."""

import pytest

from hlobridge.compile.iree import compile_mlir
from hlobridge.compile.options import CompileOptions
from hlobridge.errors import CompileError

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
