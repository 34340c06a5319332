"""Dumps outside the CLI (tests/lit/cli/dumps has the CLI's): HLOBRIDGE_FLAGS parsing, the
Session JIT's numbered subdirectory per cluster compile, and the Dumper's filter."""

from pathlib import Path

import numpy as np
import pytest

from hlobridge import flags
from hlobridge.compile.cache import clear_memory_cache
from hlobridge.compile.driver import compile_graph
from hlobridge.debug.dump import Dumper, numbered_subdirectory
from hlobridge.errors import HlobridgeError
from hlobridge.runtime.session import Session

from tests.corpus import Case
from tests.conftest import TESTS


@pytest.fixture
def env_flags(monkeypatch):
    """Set HLOBRIDGE_FLAGS for one test (the process reads it once, so the cache is reset)."""
    def set_flags(value):
        monkeypatch.setenv(flags.ENV_VAR, value)
        flags.from_environment.cache_clear()
    yield set_flags
    monkeypatch.delenv(flags.ENV_VAR, raising=False)
    flags.from_environment.cache_clear()


def test_flags_parse_like_tf_xla_flags():
    assert flags.parse("") == flags.Flags()
    assert flags.parse("--dump-to=/tmp/d --dump-pass=simplify") == flags.Flags("/tmp/d", "simplify")
    assert flags.parse("--dump-ir '/tmp/a b'") == flags.Flags("/tmp/a b", None)  # old name, quoting
    with pytest.raises(HlobridgeError, match=r"HLOBRIDGE_FLAGS: unknown flag\(s\) --xla_dump_to=x"):
        flags.parse("--xla_dump_to=x")
    with pytest.raises(HlobridgeError, match="HLOBRIDGE_FLAGS: .*expected one argument"):
        flags.parse("--dump-to")


def test_session_dumps_each_cluster_compile_in_its_own_numbered_directory(shared_graphs, tmp_path,
                                                                            env_flags):
    env_flags(f"--dump-to={tmp_path} --dump-pass=^shapes$|^stablehlo$|^simplify$|iree-flow")
    clear_memory_cache()  # IREE's phases dump only when the cluster really compiles
    case = Case.load(shared_graphs / "seed_linreg_resource")
    for _ in range(2):  # a second session compiles the same cluster again: the next number
        sess = Session(case.graph_path, cache_dir=False)
        sess.run(case.meta["init_op"], case.init_feeds())
        loss = sess.run([case.meta["train_op"], case.meta["loss"]], case.step_feeds(0))[1]
        np.testing.assert_allclose(loss, case.array(case.meta["train"]["loss_per_step"])[0], rtol=1e-5)
        clear_memory_cache()
    dirs = sorted(p.name for p in tmp_path.iterdir())
    clusters = {e.cluster for e in sess.compile_events}
    assert len(dirs) == 2 * len(clusters) and dirs[0].startswith("000-cluster_")
    assert [d[:3] for d in dirs] == [f"{i:03d}" for i in range(len(dirs))]
    first = tmp_path / dirs[0]
    assert sorted(p.name for p in first.iterdir()) == [
        "00-shapes.txt", "01-stablehlo.mlir", "02-simplify.mlir", "03-iree-flow.mlir"]
    assert "stablehlo." in (first / "01-stablehlo.mlir").read_text()
    assert "flow.executable" in (first / "03-iree-flow.mlir").read_text()


def test_clusters_compiled_ahead_dump_one_directory_each(tmp_path, env_flags):
    """A plan that would compile its clusters side by side (runtime/cluster_launch.compile_ahead)
    compiles them as they run when dumps are wanted: one numbered directory per cluster, each
    with its dump, and no empty one left by the compile that did not start ahead."""
    from tests.runtime.test_compile_ahead import two_cluster_graph
    env_flags(f"--dump-to={tmp_path} --dump-pass=^shapes$")
    clear_memory_cache()
    x = np.random.default_rng(0).standard_normal((4, 16)).astype(np.float32)
    Session(two_cluster_graph(), cache_dir=False).run("brelu2:0", {"x:0": x})
    dirs = sorted(tmp_path.iterdir())
    assert [d.name for d in dirs] == ["000-cluster_0", "001-cluster_1"]
    assert all([p.name for p in d.iterdir()] == ["00-shapes.txt"] for d in dirs)


def test_compile_graph_reads_the_environment_and_explicit_options_win(tmp_path, env_flags):
    graph = TESTS / "lit" / "lowering" / "softmax.pbtxt"
    env_flags(f"--dump-to={tmp_path / 'env'} --dump-pass=^stablehlo$")
    compile_graph(graph)
    assert [p.name for p in (tmp_path / "env").iterdir()] == ["00-stablehlo.mlir"]
    compile_graph(graph, dump_dir=tmp_path / "explicit")
    assert [p.name for p in (tmp_path / "explicit").iterdir()] == ["00-stablehlo.mlir"]  # env's regex
    compile_graph(graph, dump=Dumper(tmp_path / "own", pattern="^graph$"))
    assert [p.name for p in (tmp_path / "own").iterdir()] == ["00-graph.pbtxt"]


def test_dumper_filter_and_numbering(tmp_path):
    seen = {}
    dump = Dumper(tmp_path, sink=seen.__setitem__, pattern=r"cse|flow")
    for name in ("stablehlo", "simplify.cse", "simplify", "precision.cse", "iree-flow"):
        dump(name, f"// {name}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "00-simplify.cse.mlir", "01-precision.cse.mlir", "02-iree-flow.mlir"]
    assert list(seen) == ["simplify.cse", "precision.cse", "iree-flow"]
    assert not Dumper().wants("anything")
    with pytest.raises(HlobridgeError, match="bad regular expression"):
        Dumper(tmp_path, pattern="(")


def test_numbered_subdirectories_continue_after_existing_ones(tmp_path):
    (tmp_path / "007-cluster_3").mkdir()
    (tmp_path / "notes.txt").write_text("")
    assert numbered_subdirectory(tmp_path, "cluster_0").name == "008-cluster_0"
    assert numbered_subdirectory(tmp_path, "cluster_0").name == "009-cluster_0"
