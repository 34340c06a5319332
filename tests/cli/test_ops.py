"""hlobridge-ops: lists the registry as it is (compiles or kernel only, declared dtypes)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hlobridge.cli import ops as ops_cli
from hlobridge.ops import REGISTRY


def run(capsys, *argv):
    code = ops_cli.run_main(ops_cli.PROG, ops_cli.main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_table_lists_every_op_with_a_summary(capsys):
    code, out, _ = run(capsys)
    lines = out.strip().splitlines()
    assert code == 0 and lines[0].split() == ["op", "compiles", "kernel", "stateful", "dtypes"]
    n_compile = sum(e.compiles for e in REGISTRY.values())
    assert lines[-1].startswith(f"{len(REGISTRY)} ops, {n_compile} compile, ")
    assert len(lines) == len(REGISTRY) + 2
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:-1]}
    assert rows["Sin"][:2] == ["yes", "yes"] and "f32" in rows["Sin"] and "i32" not in rows["Sin"]
    assert rows["Unique"][0] == "no"  # data-dependent output shape: kernel only


def test_json_is_the_registry(capsys):
    code, out, _ = run(capsys, "--json")
    records = json.loads(out)
    assert code == 0 and [r["op"] for r in records] == sorted(REGISTRY)
    by_op = {r["op"]: r for r in records}
    for name, entry in REGISTRY.items():
        r = by_op[name]
        assert r["compiles"] is entry.compiles and r["kernel"] is (entry.kernel is not None)
        assert r["stateful"] is entry.stateful and r["dtypes"] == list(entry.dtypes)
    assert by_op["Cast"]["dtype_attrs"] == ["SrcT", "DstT"]
    assert "bool" in by_op["LogicalAnd"]["dtypes"] and "float32" not in by_op["LogicalAnd"]["dtypes"]
    assert by_op["AssignVariableOp"]["stateful"] is True


def test_filters(capsys):
    _, out, _ = run(capsys, "--compiles", "--json")
    assert all(r["compiles"] for r in json.loads(out))
    _, out, _ = run(capsys, "--kernel-only", "--json")
    kernel_only = json.loads(out)
    assert kernel_only and not any(r["compiles"] for r in kernel_only)
    _, out, _ = run(capsys, "Conv2D*", "matmul", "--json")  # a glob and a case-insensitive substring
    names = {r["op"] for r in json.loads(out)}
    assert {"Conv2D", "Conv2DBackpropInput", "MatMul", "BatchMatMulV2", "_FusedMatMul"} <= names
    assert "DepthwiseConv2dNative" not in names
    _, out, _ = run(capsys, "--dtype", "uint8", "--json")
    names = {r["op"] for r in json.loads(out)}
    assert "Add" in names and "Sin" not in names and "Neg" not in names
    code, out, _ = run(capsys, "Relu", "--compiles")
    assert code == 0 and out.strip().splitlines()[-1].endswith(f"(filtered from {len(REGISTRY)})")


@pytest.mark.parametrize("argv,message", [
    (["--dtype", "float33"], "unknown dtype 'float33'; known: "),
    (["NoSuchOp"], "no op matches 'NoSuchOp'"),
])
def test_unknown_filters_are_one_line_errors(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 1 and out == ""
    assert err.startswith(f"hlobridge-ops: error: {message}") and "Traceback" not in err


def test_conflicting_filters_are_usage_errors(capsys):
    with pytest.raises(SystemExit) as e:
        ops_cli.main(["--compiles", "--kernel-only"])
    assert e.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


def test_console_script_runs_as_installed():
    script = Path(sys.executable).parent / "hlobridge-ops"
    proc = subprocess.run([script, "--compiles", "--json"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    records = json.loads(proc.stdout)
    assert len(records) == sum(e.compiles for e in REGISTRY.values()) >= 150
    proc = subprocess.run([script, "--dtype", "nope"], capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stderr.startswith("hlobridge-ops: error: unknown dtype")


def test_missing_lists_every_uncompiled_xla_op_with_a_reason(capsys):
    from hlobridge.ops.coverage import all_xla_ops
    code, out, _ = run(capsys, "--missing")
    lines = out.strip().splitlines()
    assert code == 0 and lines[0].split() == ["op", "status", "reason"]
    rows = {line.split()[0]: line for line in lines[1:-1]}
    for op in all_xla_ops():
        entry = REGISTRY.get(op)
        inlined = op in ("PartitionedCall", "StatefulPartitionedCall", "_Arg", "_Retval")
        assert (op in rows) == (not inlined and not (entry and entry.compiles)), op
    assert "Unique" in rows and "data-dependent output shape" in rows["Unique"]
    assert "MatMul" not in rows and "PartitionedCall" not in rows
    assert "XlaCustomCall" in rows and "XlaDynamicUpdateSlice" not in rows  # XLA's own ops count too
    n = len(all_xla_ops())
    assert n == 489 and lines[-1].startswith("hlobridge compiles ") and f" of the {n} ops TensorFlow" in lines[-1]


def test_missing_filters_by_name_and_prints_json(capsys):
    code, out, _ = run(capsys, "--missing", "--json", "Unique*")
    records = json.loads(out)
    assert code == 0 and {r["op"] for r in records} <= {"Unique", "UniqueV2"} and records
    assert all(set(r) == {"op", "status", "reason"} and r["reason"] for r in records)
    code, _, err = run(capsys, "--missing", "--dtype", "int8")
    assert code != 0 and "--missing lists ops" in err
