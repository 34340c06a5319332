"""Text GraphDefs parsed once: the binary form of a parsed `.pbtxt`, kept in the cache directory.

protobuf's text parser is Python: a frozen ResNet-50 written as text (266 MB) takes 25 s to
parse, its binary form 0.4 s; so a second process that finds every compiled cluster on disk
would still spend 25 s before its first result. The first load of a large text GraphDef keeps
the parsed graph's serialized bytes as `<cache dir>/graphdefs/<key>.pb`, keyed by a SHA-256 of
the text and of the schema it was parsed with; a later load, in any process, hashes the text
(well under a second for 266 MB) and parses those bytes instead. An edited file hashes
differently: a miss, parsed again.

The cache directory is the compile cache's (disk_cache.py: `$HLOBRIDGE_CACHE_DIR`, else
`$XDG_CACHE_HOME/hlobridge`, else `~/.cache/hlobridge`); `cache_dir=False` disables it. Entries
are sealed and written atomically, as compiled clusters are: an entry that does not unseal or
parse is a miss (with a `CacheWarning`), parsed again from the text and written anew. A disk that
cannot be written costs only the warm start (one `CacheWarning`). Text under `MIN_BYTES` is
parsed every time: it parses faster than it hashes and writes.
"""

from __future__ import annotations

import hashlib
import logging
import mmap
import warnings
from pathlib import Path

from google.protobuf import message

from ..disk_cache import cache_dir_of, unseal, write_sealed
from ..errors import CacheWarning
from .proto import schema

log = logging.getLogger(__name__)
MIN_BYTES = 1 << 20  # smaller text parses in well under 0.1 s
_SEAL = b"\0hlobridge-graphdef-sha256\0"


def entry_for_file(path: Path, cache_dir=None) -> Path | None:
    """Where the parsed form of the text file at `path` would be kept (None: not cached). The
    file is hashed through mmap: a warm start never copies the text (OSError: unreadable)."""
    directory = cache_dir_of(cache_dir)
    if directory is None or path.stat().st_size < MIN_BYTES:
        return None
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as text:
        return _entry(directory, text)


def entry_for_text(data: bytes, cache_dir=None) -> Path | None:
    """Where the parsed form of GraphDef text `data` is kept (None: not cached)."""
    directory = cache_dir_of(cache_dir)
    return None if directory is None or len(data) < MIN_BYTES else _entry(directory, data)


def _entry(directory: Path, text) -> Path:
    h = hashlib.sha256(Path(schema.__file__).read_bytes())  # a schema change parses again
    h.update(text)
    return directory / "graphdefs" / f"{h.hexdigest()[:32]}.pb"


def load(path: Path | None):
    """The GraphDef kept at `path`, or None (absent, damaged: a CacheWarning)."""
    if path is None:
        return None
    try:
        entry = path.read_bytes()
    except OSError:
        return None
    data = unseal(entry, _SEAL)
    if data is not None:
        graph_def = schema.GraphDef()
        try:
            graph_def.ParseFromString(data)
            log.info("parsed GraphDef text found in the cache: %s", path)
            return graph_def
        except message.DecodeError:
            pass
    warnings.warn(CacheWarning(f"{path}: a damaged parsed-GraphDef cache entry; parsing the text again"),
                  stacklevel=3)
    return None


def keep(path: Path | None, graph_def) -> None:
    """Write `graph_def`'s binary form to `path` (a disk that cannot be written: a CacheWarning)."""
    if path is None:
        return
    try:
        write_sealed(path, graph_def.SerializeToString(), _SEAL)
        log.info("kept the parsed GraphDef as %s", path)
    except OSError as e:
        warnings.warn(CacheWarning(f"cannot write the parsed GraphDef to {path.parent}: {e.strerror or e}; "
                                   "the next load parses the text again"), stacklevel=3)
