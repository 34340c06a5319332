"""Files in hlobridge's cache directory: where it is, and entries written so that no reader
trusts half of one.

Two caches live there: compiled clusters (compile/cache.py) and the binary form of parsed text
GraphDefs (frontend/text_cache.py). Both write atomically (a temporary name, then a rename):
concurrent processes never read half a file, and a process killed while writing leaves only a
temporary file no reader opens. Each entry ends with a seal, a marker and the SHA-256 of the
bytes before it: an entry truncated or damaged later reads as absent.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


def default_cache_dir() -> Path:
    """$HLOBRIDGE_CACHE_DIR, else $XDG_CACHE_HOME/hlobridge, else ~/.cache/hlobridge."""
    if os.environ.get("HLOBRIDGE_CACHE_DIR"):
        return Path(os.environ["HLOBRIDGE_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "hlobridge"


def cache_dir_of(directory) -> Path | None:
    """The directory a `cache_dir` argument names: None or True the default, False none."""
    if directory is False:
        return None
    return Path(directory) if directory not in (None, True) else default_cache_dir()


def write_sealed(path: Path, data: bytes, marker: bytes, mode: int | None = None) -> None:
    """Write `data` and its seal to `path` atomically, with permissions `mode` (default:
    mkstemp's 0600); OSError (read-only, full disk) leaves nothing behind."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
        if mode is not None:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:  # the data, then its seal (no copy of a large entry)
            f.write(data)
            f.write(marker + hashlib.sha256(data).digest())
        os.replace(tmp, path)
    except OSError:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        raise


def unseal(entry: bytes, marker: bytes) -> memoryview | None:
    """The data of an entry (a view: no copy of a large entry), or None if its seal or checksum
    does not hold."""
    end = len(entry) - len(marker) - 32
    if end < 0 or entry[end:end + len(marker)] != marker:
        return None
    data = memoryview(entry)[:end]
    return data if hashlib.sha256(data).digest() == entry[-32:] else None
