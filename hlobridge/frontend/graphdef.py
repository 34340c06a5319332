"""Reading GraphDef files: `.pbtxt` text and `.pb` binary, as TensorFlow writes them.

Errors name the file and, for text, the line and column, with protobuf's own message
("no field named ...", "expected ...") but none of its traceback. A large text file is parsed
once: its binary form is kept in the cache directory (text_cache.py).
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from google.protobuf import message, text_format

from ..debug import progress
from ..errors import GraphDefError
from . import text_cache
from .proto.schema import GraphDef

log = logging.getLogger(__name__)

TEXT_SUFFIXES = (".pbtxt", ".pbtext", ".txt", ".prototxt")


def parse_text(text: str, filename: str = "<string>"):
    """GraphDef text (.pbtxt) -> GraphDef proto; a parse error becomes GraphDefError
    "file:line:col: message"."""
    graph_def = GraphDef()
    try:
        text_format.Parse(text, graph_def)
    except text_format.ParseError as e:
        line, col = getattr(e, "_line", None), getattr(e, "_column", None)
        msg = str(e)
        if line is not None:
            # protobuf prefixes "line:col : " (1-based); keep one location, with the file name.
            prefix = f"{line}:{col} : "
            msg = msg[len(prefix):] if msg.startswith(prefix) else msg
            raise GraphDefError(f"{filename}:{line}:{col}: {msg}") from None
        raise GraphDefError(f"{filename}: {msg}") from None
    return graph_def


def parse_binary(data: bytes, filename: str = "<bytes>"):
    """Serialized GraphDef bytes (.pb) -> GraphDef proto; GraphDefError naming the file and size
    when they do not parse."""
    graph_def = GraphDef()
    try:
        graph_def.ParseFromString(data)
    except message.DecodeError as e:
        raise GraphDefError(
            f"{filename}: not a valid binary GraphDef ({len(data)} bytes; truncated or corrupt?): {e}"
        ) from None
    return graph_def


def _looks_like_text(data: bytes) -> bool:
    head = data[:4096]
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return head.lstrip().split(b" ", 1)[0].rstrip(b"{:") in (b"node", b"versions", b"library",
                                                              b"version", b"debug_info", b"#")


def read_graphdef(path: str | os.PathLike, cache_dir=None):
    """Read a GraphDef from `path`: text if the suffix says so (or the bytes look like text).
    A text file (by its suffix) of a MiB or more is parsed once per content: `cache_dir` (None:
    the default, False: none) keeps its binary form (text_cache.py)."""
    path = Path(path)
    text_suffix = path.suffix in TEXT_SUFFIXES
    try:
        cached = text_cache.load(text_cache.entry_for_file(path, cache_dir)) if text_suffix else None
        if cached is not None:
            return cached
        data = path.read_bytes()
    except OSError as e:
        raise GraphDefError(f"{path}: cannot read: {e.strerror}") from None
    if text_suffix or (path.suffix != ".pb" and _looks_like_text(data)):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise GraphDefError(f"{path}: not UTF-8 text (a binary .pb?): {e}") from None
        with progress.activity("loading"):
            progress.report("parsing", f"{path.name} ({len(data) / 1e6:.0f} MB of text)")
            start = time.perf_counter()
            graph_def = parse_text(text, str(path))
            log.info("parsed %s (%.0f MB of text) in %.1f s", path, len(data) / 1e6, time.perf_counter() - start)
        if text_suffix:  # keyed by the bytes parsed (the file may have changed since it was hashed)
            text_cache.keep(text_cache.entry_for_text(data, cache_dir), graph_def)
        return graph_def
    return parse_binary(data, str(path))


def write_graphdef(graph_def, path: str | os.PathLike) -> None:
    """Write text for text suffixes, deterministic binary otherwise (as tf.io.write_graph)."""
    path = Path(path)
    if path.suffix in TEXT_SUFFIXES:
        path.write_text(text_format.MessageToString(graph_def))
    else:
        path.write_bytes(graph_def.SerializeToString(deterministic=True))
