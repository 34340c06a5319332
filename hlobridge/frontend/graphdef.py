"""Reading GraphDef files: `.pbtxt` text and `.pb` binary, as TensorFlow writes them.

Errors name the file and, for text, the line and column, with protobuf's own message
("no field named ...", "expected ...") but none of its traceback.
"""

from __future__ import annotations

import os
from pathlib import Path

from google.protobuf import message, text_format

from ..errors import GraphDefError
from .proto.schema import GraphDef

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


def read_graphdef(path: str | os.PathLike):
    """Read a GraphDef from `path`: text if the suffix says so (or the bytes look like text)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise GraphDefError(f"{path}: cannot read: {e.strerror}") from None
    if path.suffix in TEXT_SUFFIXES or (path.suffix != ".pb" and _looks_like_text(data)):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise GraphDefError(f"{path}: not UTF-8 text (a binary .pb?): {e}") from None
        return parse_text(text, str(path))
    return parse_binary(data, str(path))


def write_graphdef(graph_def, path: str | os.PathLike) -> None:
    """Write text for text suffixes, deterministic binary otherwise (as tf.io.write_graph)."""
    path = Path(path)
    if path.suffix in TEXT_SUFFIXES:
        path.write_text(text_format.MessageToString(graph_def))
    else:
        path.write_bytes(graph_def.SerializeToString(deterministic=True))
