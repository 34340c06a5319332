"""A large text GraphDef is parsed once: its binary form is kept in the cache directory
(frontend/text_cache.py), and a later load, in this process or another, parses that instead."""

import os
import subprocess
import sys

import pytest

from hlobridge import load_graph
from hlobridge.disk_cache import write_sealed
from hlobridge.errors import CacheWarning
from hlobridge.frontend import graphdef, text_cache
from hlobridge.frontend.graphdef import read_graphdef
from tests.conftest import ROOT


@pytest.fixture
def pbtxt(tmp_path, shared_graphs, monkeypatch):
    """A copy of a corpus graph's text, cached whatever its size."""
    monkeypatch.setattr(text_cache, "MIN_BYTES", 0)
    path = tmp_path / "graph.pbtxt"
    path.write_bytes((shared_graphs / "cnn_infer_bn" / "graph.pbtxt").read_bytes())
    return path


def _entries(cache):
    return sorted((cache / "graphdefs").glob("*.pb")) if (cache / "graphdefs").is_dir() else []


def _no_text_parse(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the text was parsed")
    monkeypatch.setattr(graphdef, "parse_text", refuse)


def test_a_second_load_parses_the_kept_binary(pbtxt, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    first = read_graphdef(pbtxt, cache)
    assert len(_entries(cache)) == 1
    _no_text_parse(monkeypatch)
    assert read_graphdef(pbtxt, cache) == first


def test_another_process_finds_the_entry_through_the_environment(pbtxt, tmp_path):
    cache = tmp_path / "cache"
    expected = read_graphdef(pbtxt, cache)
    code = ("import sys; from hlobridge.frontend import graphdef, text_cache; text_cache.MIN_BYTES = 0\n"
            "graphdef.parse_text = None  # a text parse would fail\n"
            "sys.stdout.buffer.write(graphdef.read_graphdef(sys.argv[1]).SerializeToString(deterministic=True))")
    run = subprocess.run([sys.executable, "-c", code, str(pbtxt)], cwd=ROOT, capture_output=True,
                         env={**os.environ, "HLOBRIDGE_CACHE_DIR": str(cache)})
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    assert run.stdout == expected.SerializeToString(deterministic=True)


def test_an_edited_file_misses(pbtxt, tmp_path):
    cache = tmp_path / "cache"
    read_graphdef(pbtxt, cache)
    text = pbtxt.read_text()
    assert 'name: "images"' in text
    pbtxt.write_text(text.replace('name: "images"', 'name: "pictures"', 1))
    edited = read_graphdef(pbtxt, cache)
    assert "pictures" in {n.name for n in edited.node}
    assert len(_entries(cache)) == 2


@pytest.mark.parametrize("damage", ["truncate", "flip", "not_a_graph"])
def test_a_damaged_entry_is_a_miss_and_is_written_again(pbtxt, tmp_path, damage):
    cache = tmp_path / "cache"
    expected = read_graphdef(pbtxt, cache)
    [entry] = _entries(cache)
    data = entry.read_bytes()
    if damage == "truncate":
        entry.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        entry.write_bytes(data[:100] + bytes([data[100] ^ 0xFF]) + data[101:])
    else:  # sealed correctly, but not a GraphDef's bytes
        write_sealed(entry, b"\xff\xff\xff\xff", text_cache._SEAL)
    with pytest.warns(CacheWarning, match="damaged"):
        assert read_graphdef(pbtxt, cache) == expected
    assert text_cache.load(entry) == expected  # rewritten whole


def test_no_entry_without_a_cache_dir_or_for_small_text(pbtxt, tmp_path, monkeypatch):
    monkeypatch.setenv("HLOBRIDGE_CACHE_DIR", str(tmp_path / "default"))
    read_graphdef(pbtxt, False)
    assert not (tmp_path / "default").exists()
    monkeypatch.setattr(text_cache, "MIN_BYTES", pbtxt.stat().st_size + 1)
    read_graphdef(pbtxt)
    assert not (tmp_path / "default").exists()
    monkeypatch.setattr(text_cache, "MIN_BYTES", 0)
    read_graphdef(pbtxt)  # None: the default directory
    assert len(_entries(tmp_path / "default")) == 1


def test_an_unwritable_cache_costs_only_the_warm_start(pbtxt, tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache directory would be")
    with pytest.warns(CacheWarning, match="cannot write the parsed GraphDef"):
        graph_def = read_graphdef(pbtxt, blocked)
    assert graph_def == read_graphdef(pbtxt, False)


def test_a_session_keeps_its_parse_in_its_cache_dir(pbtxt, tmp_path, monkeypatch):
    from hlobridge import Session
    cache = tmp_path / "cache"
    Session(pbtxt, jit="off", cache_dir=cache)
    _no_text_parse(monkeypatch)
    assert len(_entries(cache)) == 1
    assert set(load_graph(pbtxt, cache).nodes) == set(Session(pbtxt, jit="off", cache_dir=cache).graph.nodes)
