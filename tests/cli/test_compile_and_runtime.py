"""The CLIs as users type them, and the runtime API's argument checking."""

import subprocess
import sys

import numpy as np
import pytest

import hlobridge
from hlobridge import HlobridgeError, InputError
from hlobridge.cli import compile as compile_cli
from hlobridge.cli import opt as opt_cli
from hlobridge.frontend.graph_builder import GraphBuilder


@pytest.fixture(scope="module")
def small_graph(tmp_path_factory):
    """x[?,3] * w + b -> Relu, plus a second output; written as .pbtxt and .pb."""
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (None, 3))
    k = b.placeholder("k", np.int32, (2,))
    w = b.const("w", np.array([1.0, -2.0, 0.5], np.float32))
    y = b.op("Relu", [b.op("Mul", [x, w], name="mul", T=np.float32)], name="y", T=np.float32)
    b.op("Square", [k], name="k2", T=np.int32)
    b.op("NoOp", [], name="init", control_inputs=[y])
    d = tmp_path_factory.mktemp("graph")
    from hlobridge.frontend.graphdef import write_graphdef
    write_graphdef(b.graph_def, d / "g.pbtxt")
    write_graphdef(b.graph_def, d / "g.pb")
    return d


@pytest.fixture(scope="module")
def small_vmfb(small_graph):
    out = small_graph / "g.vmfb"
    assert compile_cli.main([str(small_graph / "g.pbtxt"), "-o", str(out), "--input-shape", "x=4,3"]) == 0
    return out


def test_compile_and_load(small_vmfb):
    m = hlobridge.runtime.load(small_vmfb, device="cpu")
    assert m.input_names == ["x:0", "k:0"]
    assert m.output_names == ["y:0", "k2:0"]  # sinks in graph order; the NoOp is left out
    x = np.arange(12, dtype=np.float32).reshape(4, 3) - 5
    k = np.array([3, -4], np.int32)
    y, k2 = m.main(x, k)
    np.testing.assert_array_equal(y, np.maximum(x * [1, -2, 0.5], 0).astype(np.float32))
    np.testing.assert_array_equal(k2, k * k)
    outs = m.run({"x": x, "k:0": k})
    assert list(outs) == ["y:0", "k2:0"]
    np.testing.assert_array_equal(outs["y:0"], y)


def test_binary_graph_and_selected_outputs(small_graph, tmp_path):
    out = tmp_path / "m.vmfb"
    assert compile_cli.main([str(small_graph / "g.pb"), "-o", str(out), "--input-shape", "x=2,3",
                             "--inputs", "x", "--outputs", "mul:0"]) == 0
    m = hlobridge.runtime.load(out)
    assert (m.input_names, m.output_names) == (["x:0"], ["mul:0"])
    np.testing.assert_array_equal(m.main(np.ones((2, 3), np.float32)), np.tile([1, -2, 0.5], (2, 1)))


def test_a_model_compiled_from_an_intermediate_tensor_takes_the_shape_given(small_graph, tmp_path):
    """--inputs mul:0 --input-shape mul:0=2,3: the module starts at that layer with that shape
    (it was left `?`, the placeholder's, and the shape given was ignored)."""
    out = tmp_path / "tail.vmfb"
    assert compile_cli.main([str(small_graph / "g.pbtxt"), "-o", str(out), "--inputs", "mul:0",
                             "--input-shape", "mul:0=2,3", "--outputs", "y:0"]) == 0
    m = hlobridge.runtime.load(out)
    assert m.input_names == ["mul:0"] and m.functions["main"].signature.inputs[0][1].shape == (2, 3)
    np.testing.assert_array_equal(m.main(np.array([[1, -2, 3], [-1, 0, 5]], np.float32)), [[1, 0, 3], [0, 0, 5]])


@pytest.mark.parametrize("args,error", [
    ([np.ones((4, 3), np.float32)], "main() takes 2 input(s) (x:0, k:0), got 1"),
    ([np.ones((5, 3), np.float32), np.ones(2, np.int32)], "input 'x:0': expected shape [4, 3], got [5, 3]"),
    ([np.ones((4, 3), np.float64), np.ones(2, np.int32)], "input 'x:0': expected dtype float32, got float64"),
    ([np.ones((4, 3), np.float32), np.ones(2, np.int64)], "input 'k:0': expected dtype int32, got int64"),
])
def test_runtime_checks_arguments(small_vmfb, args, error):
    m = hlobridge.runtime.load(small_vmfb)
    with pytest.raises(InputError) as e:
        m.main(*args)
    assert str(e.value) == error


def test_run_names_missing_and_unknown_inputs(small_vmfb):
    m = hlobridge.runtime.load(small_vmfb)
    with pytest.raises(InputError, match=r"missing input\(s\) k:0; unknown input\(s\) z:0"):
        m.run({"x": np.ones((4, 3), np.float32), "z": 1})


def test_load_errors(tmp_path, small_vmfb):
    with pytest.raises(HlobridgeError, match="cannot read"):
        hlobridge.runtime.load(tmp_path / "missing.vmfb")
    (tmp_path / "junk.vmfb").write_bytes(b"not a module")
    with pytest.raises(HlobridgeError, match="not a loadable IREE module"):
        hlobridge.runtime.load(tmp_path / "junk.vmfb")
    with pytest.raises(HlobridgeError, match="unknown device 'tpu'"):
        hlobridge.runtime.load(small_vmfb, device="tpu")


def test_emit_stablehlo_to_stdout(small_graph, capsys):
    assert compile_cli.main([str(small_graph / "g.pbtxt"), "-o", "-", "--emit", "stablehlo",
                             "--input-shape", "x=4,3"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("module @hlobridge") and "stablehlo.maximum" in text


def test_dump_ir_writes_every_stage_numbered(small_graph, tmp_path):
    dumps = tmp_path / "dumps"
    assert compile_cli.main([str(small_graph / "g.pbtxt"), "-o", str(tmp_path / "m.vmfb"),
                             "--input-shape", "x=4,3", "--dump-ir", str(dumps)]) == 0
    names = sorted(p.name for p in dumps.iterdir())
    assert names[:4] == ["00-graph.pbtxt", "01-shapes.txt", "02-stablehlo.mlir", "03-simplify.inline.mlir"]
    assert any(n.endswith("-simplify.mlir") for n in names)  # the stage, after its passes
    assert any(n.endswith("-iree-flow.mlir") for n in names)
    assert names[-1].endswith("-iree-vm.mlir")
    assert [int(n[:2]) for n in names] == list(range(len(names)))


def test_cuda_vmfb_is_produced_without_a_gpu(small_graph, tmp_path):
    out = tmp_path / "m_cuda.vmfb"
    assert compile_cli.main([str(small_graph / "g.pbtxt"), "-o", str(out), "--target", "cuda",
                             "--input-shape", "x=4,3"]) == 0
    assert out.stat().st_size > 1000


def test_cross_compiled_aarch64_refuses_to_load_here(small_graph, tmp_path):
    out = tmp_path / "m_arm.vmfb"
    assert compile_cli.main([str(small_graph / "g.pbtxt"), "-o", str(out), "--cpu", "generic",
                             "--cpu-triple", "aarch64", "--input-shape", "x=4,3"]) == 0
    import platform
    if platform.machine() != "aarch64":
        with pytest.raises(HlobridgeError):
            hlobridge.runtime.load(out)


@pytest.mark.parametrize("argv,message", [
    (["missing.pbtxt", "-o", "x.vmfb"], "missing.pbtxt: cannot read"),
    (["{graph}", "-o", "x.vmfb", "--input-shape", "x=4;3"], "bad shape '4;3'"),
    (["{graph}", "-o", "x.vmfb", "--input-shape", "nope=4,3"], "no node named 'nope'"),
    (["{graph}", "-o", "x.vmfb", "--input-shape", "x=4,3,2"], "does not fit the placeholder's shape"),
    (["{graph}", "-o", "x.vmfb", "--input-shape", "x=4,3", "--target", "cuda", "--cuda-arch", "hopper"],
     "--cuda-arch must look like sm_80"),
    (["{graph}", "-o", "x.vmfb", "--input-shape", "x=?,3,?"], "does not fit the placeholder's shape"),
    (["{graph}", "-o", "x.vmfb", "--inputs", "mul:0", "--input-shape", "mul:0=2,4", "--outputs", "y:0"],
     "--input-shape mul:0=2,4 does not fit the tensor's inferred shape float32[?,3]"),
    # found by tools/fuzz_graphs.py: an intermediate --inputs tensor the outputs do not read was a KeyError
    (["{graph}", "-o", "x.vmfb", "--input-shape", "x=4,3", "--inputs", "x,mul:0", "--outputs", "k2:0"],
     "input(s) mul:0 are not read by the outputs (k2:0); leave them out of --inputs"),
])
def test_compile_errors_exit_1_with_a_message(small_graph, tmp_path, capsys, argv, message):
    argv = [a.replace("{graph}", str(small_graph / "g.pbtxt")) for a in argv]
    argv = [str(tmp_path / a) if a == "x.vmfb" else a for a in argv]
    assert compile_cli.run_main("hlobridge-compile", compile_cli.main, argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("hlobridge-compile: error: ") and message in err
    assert "Traceback" not in err


def test_console_scripts_run_as_installed(small_graph, tmp_path):
    """The real entry points, as a user types them (bad usage exits 2, like any CLI)."""
    bindir = __import__("pathlib").Path(sys.executable).parent
    proc = subprocess.run([bindir / "hlobridge-compile", small_graph / "g.pbtxt", "-o", tmp_path / "m.vmfb",
                           "--input-shape", "x:0=4,3"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "wrote" in proc.stderr and (tmp_path / "m.vmfb").exists()
    proc = subprocess.run([bindir / "hlobridge-compile", small_graph / "g.pbtxt", "-o", "m", "--target", "tpu"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "invalid choice: 'tpu'" in proc.stderr
    proc = subprocess.run([bindir / "hlobridge-opt", "--list-stages"], capture_output=True, text=True)
    assert proc.returncode == 0 and "stablehlo" in proc.stdout.split()


def test_opt_stage_from_python(small_graph, capsys):
    assert opt_cli.main([str(small_graph / "g.pbtxt"), "--stage", "shapes", "--input-shape", "x=2,3"]) == 0
    assert "y (Relu): float32[2,3]" in capsys.readouterr().out


@pytest.mark.cuda
def test_cuda_runtime_matches_cpu(small_graph, tmp_path):
    out = tmp_path / "m_cuda.vmfb"
    assert compile_cli.main([str(small_graph / "g.pbtxt"), "-o", str(out), "--target", "cuda",
                             "--input-shape", "x=4,3"]) == 0
    m = hlobridge.runtime.load(out, device="cuda")
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    y, _ = m.main(x, np.array([1, 2], np.int32))
    np.testing.assert_allclose(y, np.maximum(x * [1, -2, 0.5], 0), rtol=1e-6)
