"""What tools/fuzz_loaders.py found, each kept as a regression test: every one was a traceback
and is now a one-line error (or works)."""

from __future__ import annotations

import shutil

import pytest

import hlobridge
from hlobridge import flags
from hlobridge.cli import compile as compile_cli
from hlobridge.cli import opt as opt_cli
from hlobridge.cli.common import run_main
from hlobridge.errors import HlobridgeError
from hlobridge.frontend.proto.saved_model_schema import SavedModel

from tests.frontend.saved_model_data import case
from tests.robustness.test_careless_cli import graph  # noqa: F401  (the fixture)


def _edited_saved_model(tmp_path, name, edit):
    root, _ = case(name)
    shutil.copytree(root / "saved_model", tmp_path / "sm")
    pb = tmp_path / "sm" / "saved_model.pb"
    saved = SavedModel.FromString(pb.read_bytes())
    edit(saved.meta_graphs[0])
    pb.write_bytes(saved.SerializeToString())
    return tmp_path / "sm"


def _one_line_error(capsys, cli, argv) -> str:
    assert run_main(cli.PROG, cli.main, argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_a_variable_shared_name_that_is_not_utf8(tmp_path):
    """(files seed 0, mutant 305: UnicodeDecodeError in SavedModelSource._bind_captures)"""
    def edit(meta):
        for node in meta.graph_def.node:
            if node.op == "VarHandleOp":
                node.attr["shared_name"].s = b"\xff" * 8
    sm = _edited_saved_model(tmp_path, "keras_export", edit)
    with pytest.raises(HlobridgeError, match="variable"):
        hlobridge.load_saved_model(sm, jit="off", cache_dir=False).run({})


def test_an_object_graph_child_with_a_negative_node_id(tmp_path):
    """(files seed 1, mutant 792: IndexError in saved_model._paths)"""
    def edit(meta):
        meta.object_graph_def.nodes[0].children[0].node_id = -2 ** 31
    sm = _edited_saved_model(tmp_path, "module", edit)
    try:
        hlobridge.Session(sm, jit="off", cache_dir=False)
    except HlobridgeError:
        pass  # (a child the object graph no longer reaches: its variable may be missing)


def test_hlobridge_flags_with_an_unclosed_quote(graph, tmp_path, capsys):  # noqa: F811
    """(cli seed 0, case 110: ValueError 'No closing quotation' from shlex in flags.parse)"""
    with flags.environment("'--dump-to"):
        err = _one_line_error(capsys, compile_cli, [str(graph), "-o", str(tmp_path / "m.mlir"), "--emit",
                                                    "stablehlo", "--input-shape", "x=4,3"])
    assert "error: HLOBRIDGE_FLAGS: cannot split ''--dump-to' into flags: No closing quotation" in err


def test_dump_to_a_folder_that_cannot_be_made(graph, tmp_path, capsys):  # noqa: F811
    """(cli seed 0, case 194: FileNotFoundError from Dumper's mkdir)"""
    err = _one_line_error(capsys, compile_cli, [str(graph), "-o", str(tmp_path / "m.mlir"), "--emit", "stablehlo",
                                                "--input-shape", "x=4,3", "--dump-to", "/proc/d"])
    assert "error: --dump-to /proc/d: cannot create the folder" in err


def test_opt_output_that_cannot_be_written(graph, capsys):  # noqa: F811
    """(cli seed 0, case 22: FileNotFoundError writing hlobridge-opt's -o)"""
    err = _one_line_error(capsys, opt_cli, [str(graph), "-o", "/proc/x.vmfb", "--input-shape", "x=2,3"])
    assert "error: -o /proc/x.vmfb: cannot write in /proc" in err


def test_a_vmfb_to_stdout(graph, capsys):  # noqa: F811
    err = _one_line_error(capsys, compile_cli, [str(graph), "-o", "-", "--input-shape", "x=4,3"])
    assert "error: -o -: a .vmfb is binary" in err


@pytest.mark.parametrize("flag", ["--iree-flag=--", "--iree-flag=", "--iree-flag=x"])
def test_an_iree_flag_that_is_not_a_flag(graph, tmp_path, capsys, flag):  # noqa: F811
    """(cli seed 1, case 487: argparse makes --iree-flag=-- a [], a TypeError inside compile_str)"""
    err = _one_line_error(capsys, compile_cli, [str(graph), "-o", str(tmp_path / "m.vmfb"), "--input-shape", "x=4,3",
                                                flag])
    assert "error: --iree-flag '" in err and "expected an iree-compile flag" in err


def test_hlobridge_flags_dump_to_a_folder_that_cannot_be_made(tmp_path, capsys):
    """(cli seed 1, case 865: FileNotFoundError from numbered_subdirectory, the frozen
    SavedModel's Session dumping its clusters)"""
    root, _ = case("tf1_builder")
    with flags.environment("--dump-to=/proc/x"):
        err = _one_line_error(capsys, compile_cli, [str(root / "saved_model"), "-o", str(tmp_path / "m.mlir"),
                                                    "--emit", "stablehlo"])
    assert "error: --dump-to /proc/x: cannot create the folder" in err


def test_a_string_length_past_the_tensor_bytes(tmp_path):
    """(files seed 2, mutant 769: struct.error packing a length over 2^32 for the checksum)"""
    import numpy as np
    from hlobridge.frontend import sstable, tensor_bundle
    prefix = str(tmp_path / "ckpt")
    w = tensor_bundle.BundleWriter(prefix)
    w.add("s", np.array([b"a" * 8, b"b" * 8], dtype=object))
    w.finish()
    data = tensor_bundle.data_filename(prefix, 0, 1)
    raw = open(data, "rb").read()
    huge = sstable.varint(2 ** 33)
    open(data, "wb").write(huge + raw[len(huge):])
    with pytest.raises(hlobridge.CheckpointError, match=r"tensor 's': a string of 8589934592 bytes in 22: corrupt"):
        hlobridge.read_checkpoint(prefix)


def test_freezing_a_read_whose_identity_lost_its_input():
    """(files seed 2, mutant 4177: IndexError in runtime/saved_model._variable_name)"""
    import numpy as np
    from hlobridge.frontend.graph_builder import GraphBuilder, Shape
    from hlobridge.frontend.load import graph_from_graphdef
    from hlobridge.runtime.saved_model import _variable_name
    b = GraphBuilder()
    v = b.op("VarHandleOp", name="v", dtype=np.float32, shape=Shape((2,)), shared_name="v", container="")
    b.op("ReadVariableOp", [b.op("Identity", [v], name="i", T=np.float32)], name="r", dtype=np.float32)
    gd = b.graph_def
    del next(n for n in gd.node if n.name == "i").input[:]
    graph = graph_from_graphdef(gd, "g")
    with pytest.raises(HlobridgeError, match=r"node 'i' \(Identity\) has no input 0; cannot follow it to the "
                                             r"variable 'r' reads"):
        _variable_name(graph, graph.nodes["r"])


def test_an_asset_file_name_with_a_nul(tmp_path):
    """(files seed 3, mutant 993: ValueError 'embedded null byte' resolving the asset's path)"""
    def edit(meta):
        meta.asset_file_def[0].filename = "vocab\x00.txt"
    sm = _edited_saved_model(tmp_path, "module", edit)
    with pytest.raises(HlobridgeError, match=r"asset file name 'vocab\\x00.txt' is not a path"):
        with pytest.warns(UserWarning):
            hlobridge.load_saved_model(sm, jit="off", cache_dir=False)
