"""constant-fold against IREE itself: it must produce the constants IREE would compute at run
time from the same values (exactly for exact ops, within an ulp or two for math functions)."""

import ml_dtypes
import numpy as np
import pytest
from iree.compiler import compile_str, ir

import iree.runtime as rt
from hlobridge.passes.ir import pipeline
from tests.passes.ir.iree_check import apply_passes, run_iree


# (op, operand values, element type) folded by constant-fold and computed by IREE at run time.
X = [-7.5, -2.0, -0.0, 0.0, 0.3, 1.0, 2.5, 1e30]
Y = [2.0, -4.0, 3.0, -1.0, 0.7, 3.0, 2.5, 1e-30]
CASES = [
    ("add", [X, Y], "f32"), ("subtract", [X, Y], "f32"), ("multiply", [X, Y], "f32"),
    ("divide", [X, Y], "f32"), ("remainder", [X, Y], "f32"), ("negate", [X], "f32"),
    ("abs", [X], "f32"), ("floor", [X], "f32"), ("ceil", [X], "f32"),
    ("round_nearest_even", [X], "f32"),
    ("divide", [[-7, 7, 7, -7, 0, 1, 9, -9], [2, 2, -2, -2, 3, 1, 4, 4]], "i32"),
    ("remainder", [[-7, 7, 7, -7, 0, 1, 9, -9], [2, 2, -2, -2, 3, 1, 4, 4]], "i32"),
    ("multiply", [[2**30, -3, 5, 7, 0, 1, 2**16, -(2**31)], [4, 5, 6, 7, 8, 9, 2**16, 1]], "i32"),
    ("exponential", [[-3.0, -0.5, 0.0, 0.1, 1.0, 2.0, 10.0, 80.0]], "f32"),
    ("log", [[0.001, 0.5, 1.0, 2.0, 3.0, 10.0, 1e10, 7.0]], "f32"),
    ("tanh", [[-3.0, -0.5, 0.0, 0.1, 1.0, 2.0, 10.0, 0.01]], "f32"),
    ("rsqrt", [[0.001, 0.5, 1.0, 2.0, 3.0, 10.0, 1e10, 7.0]], "f32"),
    ("logistic", [[-3.0, -0.5, 0.0, 0.1, 1.0, 2.0, 10.0, 0.01]], "f32"),
]


def _elementwise_module(op, n_args, et, constants=None):
    t = f"tensor<8x{et}>"
    params = ", ".join(f"%a{i}: {t}" for i in range(n_args)) if constants is None else ""
    body = ""
    names = [f"%a{i}" for i in range(n_args)]
    if constants is not None:
        for i, values in enumerate(constants):
            body += f"  %a{i} = stablehlo.constant dense<{values}> : {t}\n"
    body += f"  %r = stablehlo.{op} {', '.join(names)} : {t}\n"
    return f"func.func @main({params}) -> {t} {{\n{body}  return %r : {t}\n}}\n"


def _literal(values, et):
    return "[" + ", ".join(f"{float(v):.9e}" if et == "f32" else str(int(v)) for v in values) + "]"


@pytest.fixture(scope="module")
def iree_results():
    """Every case computed by IREE from function arguments, in one compiled module."""
    funcs = []
    for i, (op, args, et) in enumerate(CASES):
        funcs.append(_elementwise_module(op, len(args), et).replace("@main", f"@case{i}"))
    vmfb = compile_str("\n".join(funcs), input_type="stablehlo", target_backends=["llvm-cpu"],
                       extra_args=["--iree-llvmcpu-target-cpu=host"])
    module = rt.load_vm_flatbuffer(vmfb, driver="local-sync")
    dtype = {"f32": np.float32, "i32": np.int32}
    return [np.asarray(module[f"case{i}"](*[np.array(a, dtype[et]) for a in args]))
            for i, (op, args, et) in enumerate(CASES)]


@pytest.mark.parametrize("index", range(len(CASES)), ids=[f"{op}-{et}" for op, _, et in CASES])
def test_constant_fold_computes_what_iree_computes(index, iree_results):
    op, args, et = CASES[index]
    text = _elementwise_module(op, len(args), et, [_literal(a, et) for a in args])
    with ir.Context():
        module = ir.Module.parse(text)
        pipeline.run(module, [pipeline.lookup("constant-fold")])
        ops = [o for o in module.body.operations[0].regions[0].blocks[0].operations]
        assert [o.operation.name for o in ops] == ["stablehlo.constant", "func.return"], module
        folded = np.array(ir.DenseElementsAttr(ops[0].attributes["value"]))
    want = iree_results[index]
    folded = np.broadcast_to(folded, want.shape)
    if et == "i32" or op not in ("exponential", "log", "tanh", "rsqrt", "logistic"):
        np.testing.assert_array_equal(folded.view(want.dtype), want)  # bit-exact (zeros' signs too)
        assert (np.signbit(folded) == np.signbit(want)).all()
    else:  # math functions: NumPy in float64 rounded once vs IREE's approximations
        np.testing.assert_allclose(folded, want, rtol=4 * np.finfo(np.float32).eps)


def test_constant_fold_bf16_convert_rounds_like_iree():
    values = [1.0, 0.339, -3.14159, 1e-3, 65504.0, -0.0, 300.5, 7.0]
    text = ("func.func @main(%x: tensor<8xf32>) -> tensor<8xbf16> {\n"
            "  %r = stablehlo.convert %x : (tensor<8xf32>) -> tensor<8xbf16>\n"
            "  return %r : tensor<8xbf16>\n}\n")
    want = run_iree(text, "main", np.array(values, np.float32))[0]
    folded_text = apply_passes(text.replace("(%x: tensor<8xf32>)", "()").replace(
        "  %r", f"  %x = stablehlo.constant dense<{_literal(values, 'f32')}> : tensor<8xf32>\n  %r"),
        "constant-fold")
    got = run_iree(folded_text, "main")[0]
    assert "stablehlo.convert" not in folded_text
    np.testing.assert_array_equal(got.view(np.uint16), want.astype(ml_dtypes.bfloat16).view(np.uint16))
