"""One compile per signature, however many threads and processes make their first runs at once
(issue 33 part 2), and a compile cache shared by several users (part 3). Compiles are counted
by wrapping the compiler the Session calls, not by timing."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
import warnings

import numpy as np
import pytest

import hlobridge
from hlobridge.compile import cache as cache_module
from hlobridge.compile.cache import CompileCache, MemoryCache
from hlobridge.compile.options import CompileOptions
from hlobridge.errors import CacheWarning, RecompilationWarning
from hlobridge.frontend.graph_builder import GraphBuilder
from hlobridge.frontend.graphdef import write_graphdef
from hlobridge.compile import iree
from tests.conftest import ROOT

W = np.random.default_rng(33).standard_normal((8, 4)).astype(np.float32)
MODULE = "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> { %0 = stablehlo.add %a, %a : tensor<4xf32>\n return %0 : tensor<4xf32> }"


def _graph(path):
    """y = Relu(x[?,8] . W + 1): one cluster."""
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (None, 8))
    m = b.op("MatMul", [x, b.const("w", W)], name="m", T=np.float32)
    b.op("Relu", [b.op("AddV2", [m, b.const("one", np.float32(1))], name="a", T=np.float32)], name="y", T=np.float32)
    write_graphdef(b.graph_def, path)
    return path


def _expected(x):
    return np.maximum(x @ W + 1, 0)


@pytest.fixture
def counted(monkeypatch):
    """The compiles the Session starts (a list of module texts), with this process's memory cache cold."""
    monkeypatch.setattr(cache_module, "PROCESS_MEMORY", MemoryCache())
    calls, real = [], iree.compile_mlir
    lock = threading.Lock()

    def counting(text, options, *a, **k):
        with lock:
            calls.append(text)
        return real(text, options, *a, **k)
    monkeypatch.setattr(iree, "compile_mlir", counting)
    return calls


def test_eight_threads_first_runs_compile_each_signature_once(tmp_path, counted):
    sess = hlobridge.Session(_graph(tmp_path / "g.pbtxt"), cache_dir=tmp_path / "cache", min_cluster_size=1)
    feeds = [np.random.default_rng(i).standard_normal((6 if i % 2 else 3, 8)).astype(np.float32) for i in range(8)]
    start, results, errors = threading.Barrier(8), [None] * 8, []

    def first_run(i):
        try:
            start.wait()
            results[i] = sess.run("y:0", {"x:0": feeds[i]})
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecompilationWarning)
        threads = [threading.Thread(target=first_run, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []
    for x, y in zip(feeds, results):
        np.testing.assert_allclose(y, _expected(x), rtol=1e-5, atol=1e-5)
    assert len(counted) == 2  # batch 3 and batch 6, once each
    assert sorted(e.source for e in sess.compile_events).count("compiled") == 2
    assert [len(seen) for seen in sess._jit_state.history.values()] == [2]  # signatures, not compiles


def test_threads_of_one_cache_build_a_key_once(tmp_path):
    cache, builds = CompileCache(tmp_path, memory=MemoryCache()), []
    start = threading.Barrier(6)

    def build():
        builds.append(1)
        time.sleep(0.3)
        return b"binary"
    out = []
    threads = [threading.Thread(target=lambda: (start.wait(), out.append(cache.get_or_build("k", build))))
               for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert builds == [1]
    assert sorted(source for _, source in out) == ["compiled"] + ["memory"] * 5
    assert not (tmp_path / "k.lock").exists()


def test_a_failed_build_fails_its_waiters_and_the_next_caller_builds_again(tmp_path):
    cache = CompileCache(tmp_path, memory=MemoryCache())

    def fail():
        raise hlobridge.HlobridgeError("no")
    with pytest.raises(hlobridge.HlobridgeError):
        cache.get_or_build("k", fail)
    assert not (tmp_path / "k.lock").exists()
    assert cache.get_or_build("k", lambda: b"binary") == (b"binary", "compiled")


TWO_PROCESSES = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    import hlobridge
    from hlobridge.compile import iree
    graph, cache_dir, go = sys.argv[1:4]
    calls, real = [], iree.compile_mlir
    iree.compile_mlir = lambda text, options, *a, **k: calls.append(1) or real(text, options, *a, **k)
    sess = hlobridge.Session(graph, cache_dir=cache_dir, min_cluster_size=1)
    x = np.ones((5, 8), np.float32)
    while not os.path.exists(go):
        time.sleep(0.01)
    y = sess.run("y:0", {"x:0": x})
    print(len(calls), float(y.sum()))
""")


def test_two_processes_sharing_a_cold_cache_compile_each_cluster_once(tmp_path):
    graph, go = _graph(tmp_path / "g.pbtxt"), tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", TWO_PROCESSES, str(graph), str(tmp_path / "cache"), str(go)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT) for _ in range(2)]
    time.sleep(1.0)
    go.touch()
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e[-2000:] for _, e in outs]
    counts = sorted(int(o.split()[0]) for o, _ in outs)
    assert counts == [0, 1], (counts, sorted(p.name for p in (tmp_path / "cache").iterdir()))
    for o, _ in outs:
        assert float(o.split()[1]) == pytest.approx(float(_expected(np.ones((5, 8), np.float32)).sum()), rel=1e-5)
    assert [p.suffix for p in (tmp_path / "cache").iterdir()] == [".vmfb"]


def test_a_dead_process_lock_is_broken(tmp_path):
    key = CompileCache.key(MODULE, CompileOptions())
    (tmp_path / f"{key}.lock").write_text(f"{os.uname().nodename} 999999999\n")  # no such pid
    started = time.monotonic()
    _, source = CompileCache(tmp_path, memory=MemoryCache()).get_or_compile(MODULE, CompileOptions())
    assert source == "compiled" and time.monotonic() - started < 120
    assert not (tmp_path / f"{key}.lock").exists()


def test_another_host_lock_older_than_the_stale_timeout_is_broken(tmp_path):
    (tmp_path / "k.lock").write_text("some-other-host 1\n")
    started = time.monotonic()
    cache = CompileCache(tmp_path, memory=MemoryCache(), stale_seconds=0.5)
    assert cache.get_or_build("k", lambda: b"binary") == (b"binary", "compiled")
    assert 0.5 <= time.monotonic() - started < 30  # it waited for the lock to go stale


def test_entries_take_their_directory_permissions(tmp_path):
    shared = tmp_path / "team-cache"
    shared.mkdir()
    os.chmod(shared, 0o2770)
    CompileCache(shared, memory=MemoryCache()).get_or_build("k", lambda: b"binary")
    assert oct((shared / "k.vmfb").stat().st_mode & 0o777) == oct(0o660)
    private = tmp_path / "mine"
    private.mkdir(mode=0o700)
    os.chmod(private, 0o700)
    CompileCache(private, memory=MemoryCache()).get_or_build("k", lambda: b"binary")
    assert oct((private / "k.vmfb").stat().st_mode & 0o777) == oct(0o600)


def test_an_entry_this_process_cannot_read_is_a_miss_with_one_warning(tmp_path, counted, monkeypatch):
    """Another user's entry (-rw------- as hlobridge wrote them before): compiled again, one
    CacheWarning, no PermissionError. Root reads every file, so there the read is made to fail."""
    graph = _graph(tmp_path / "g.pbtxt")
    x = np.ones((2, 8), np.float32)
    hlobridge.Session(graph, cache_dir=tmp_path / "cache", min_cluster_size=1).run("y:0", {"x:0": x})
    (entry,) = (tmp_path / "cache").glob("*.vmfb")
    os.chmod(entry, 0)
    if os.geteuid() == 0:
        real = cache_module.Path.read_bytes

        def denied(self):
            if self.suffix == ".vmfb":
                raise PermissionError(13, "Permission denied", str(self))
            return real(self)
        monkeypatch.setattr(cache_module.Path, "read_bytes", denied)
    monkeypatch.setattr(cache_module, "PROCESS_MEMORY", MemoryCache())
    with pytest.warns(CacheWarning) as caught:
        sess = hlobridge.Session(graph, cache_dir=tmp_path / "cache", min_cluster_size=1)
        np.testing.assert_allclose(sess.run("y:0", {"x:0": x}), _expected(x), rtol=1e-5)
        np.testing.assert_allclose(sess.run("y:0", {"x:0": 2 * x}), _expected(2 * x), rtol=1e-5)
    messages = [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
    assert len(messages) == 1 and "cannot read the compile-cache entry (Permission denied)" in messages[0]
    assert len(counted) == 2  # the first session's, and the second's (it could not read the entry)
