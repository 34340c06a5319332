"""The compile cache under faults: a process killed while writing, a damaged entry, a full or
read-only disk. Nothing a later run trusts is ever half written; the cache degrades, compiles
go on."""

import errno
import os
import subprocess
import sys
import textwrap

import pytest

from hlobridge.compile.cache import CompileCache, MemoryCache
from hlobridge.compile.options import CompileOptions
from hlobridge.errors import CacheWarning
from tests.conftest import ROOT

MODULE = "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> { %0 = stablehlo.add %a, %a : tensor<4xf32>\n return %0 : tensor<4xf32> }"

KILLED_WHILE_WRITING = textwrap.dedent("""
    import os, sys
    from hlobridge.compile import cache
    from tests.kill_midway import DyingFile
    real_fdopen = os.fdopen
    cache.os.fdopen = lambda fd, mode: DyingFile(real_fdopen(fd, mode))
    cache.CompileCache(sys.argv[1], memory=cache.MemoryCache()).get_or_compile(sys.argv[2], cache.CompileOptions())
""")


def _cache(directory):
    return CompileCache(directory, memory=MemoryCache())


def test_a_process_killed_while_writing_leaves_nothing_a_later_run_trusts(tmp_path):
    proc = subprocess.run([sys.executable, "-c", KILLED_WHILE_WRITING, str(tmp_path), MODULE], capture_output=True,
                          cwd=ROOT)
    assert proc.returncode == -9
    # the half-written temporary, and the dead process's lock file, which the next run breaks
    assert [p.suffix for p in tmp_path.iterdir() if not p.name.startswith(".tmp-")] == [".lock"]
    vmfb, source = _cache(tmp_path).get_or_compile(MODULE, CompileOptions())
    assert source == "compiled" and vmfb
    assert [p.suffix for p in tmp_path.iterdir() if not p.name.startswith(".tmp-")] == [".vmfb"]


@pytest.mark.parametrize("damage", [lambda b: b[: len(b) // 2], lambda b: b[:100] + b"\xff" + b[101:], lambda b: b""])
def test_a_damaged_entry_is_compiled_again_with_a_warning(tmp_path, damage):
    _cache(tmp_path).get_or_compile(MODULE, CompileOptions())
    (entry,) = tmp_path.glob("*.vmfb")
    entry.write_bytes(damage(entry.read_bytes()))
    with pytest.warns(CacheWarning, match="truncated or damaged"):
        vmfb, source = _cache(tmp_path).get_or_compile(MODULE, CompileOptions())
    assert source == "compiled"
    assert _cache(tmp_path).get_or_compile(MODULE, CompileOptions()) == (vmfb, "disk")  # rewritten whole


def test_a_full_disk_degrades_to_memory_with_one_warning(tmp_path, monkeypatch):
    def full(*args):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr("hlobridge.compile.cache.os.replace", full)
    cache = _cache(tmp_path)
    with pytest.warns(CacheWarning, match="No space left on device; compiled clusters stay in memory"):
        vmfb, source = cache.get_or_compile(MODULE, CompileOptions())
    assert source == "compiled" and list(tmp_path.iterdir()) == []  # no temporary file left behind
    assert cache.get_or_compile(MODULE, CompileOptions()) == (vmfb, "memory")


def test_a_read_only_cache_directory_works_from_memory(tmp_path, monkeypatch):
    def denied(*args, **kwargs):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
    monkeypatch.setattr("hlobridge.disk_cache.tempfile.mkstemp", denied)
    with pytest.warns(CacheWarning, match="cannot write the compile cache .*: Permission denied"):
        assert _cache(tmp_path).get_or_compile(MODULE, CompileOptions())[1] == "compiled"
