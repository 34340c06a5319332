"""Compiled clusters, cached in memory and on disk, keyed by what determines the binary.

The key is a hash of what determines the module's text, the backend (compile/backend.py) with
its version (IREE's, or jaxlib's and the StableHLO version of XLA's artifacts), the IREE flags,
hlobridge's own source (its decisions after the text, such as compiling a module untiled, are
code too: an edited checkout never reuses a stale binary), and for
`--iree-llvmcpu-target-cpu=host` the host CPU's model and feature flags. For a
compile of StableHLO text (`get_or_compile`) that is the text, which spells out every
argument's dtype and shape and every constant the compile saw; the Session's clusters key by
what they are lowered from (runtime/cluster_key.py), so a hit skips lowering too. So a
cluster seen with a new batch size compiles once, and a second process with the same
graph and shapes starts warm from the disk.

Compiled binaries are also kept in memory, in one `MemoryCache` per process by default
(`PROCESS_MEMORY`): sessions of one process share what they compiled. A cache built with its
own `memory` keeps to itself.

The disk cache lives in `$HLOBRIDGE_CACHE_DIR`, else `$XDG_CACHE_HOME/hlobridge`, else
`~/.cache/hlobridge`; `cache_dir=False` disables it. Entries are written atomically
(write to a temporary name, then rename), so concurrent processes never read half a file, and
a process killed while writing leaves only a temporary file no reader opens. A key is built
once however many ask at the same time (`claim`, flight.py): threads of one process wait for
the first one's build, processes sharing the directory for the one holding `<key>.lock`
(a dead holder's lock is broken). An entry gets its directory's read and write bits, so a
directory made group-readable is a cache a team shares; an entry this process cannot read
is a miss, with one `CacheWarning`. Each entry ends
with a SHA-256 of its binary (disk_cache.py): an entry truncated or damaged later is not trusted but compiled
again, with a `CacheWarning`. A disk that cannot be written (read-only, full) leaves the
compiled clusters in memory, with one `CacheWarning` per cache.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import platform
import warnings
from concurrent.futures import Future
from functools import cache
from pathlib import Path

from ..disk_cache import cache_dir_of, default_cache_dir, unseal, write_sealed  # noqa: F401  (default_cache_dir: public here too)
from ..errors import CacheWarning

from .backend import backend_of
from .flight import STALE_SECONDS, DiskClaim, SingleFlight
from .host_cpu import cpuinfo_lines
from .options import CompileOptions


class MemoryCache(dict):
    """vmfb bytes by cache key, held in memory; and the builds under way in this process
    (`flights`: the caches sharing this memory compile each key once, flight.py)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.flights = SingleFlight()


PROCESS_MEMORY = MemoryCache()  # the default: sessions of one process share compiled clusters
# What ends every disk entry: this marker and the SHA-256 of the binary before it.
_SEAL = b"\0hlobridge-vmfb-sha256\0"


@cache
def source_hash() -> bytes:
    """A hash of hlobridge's code and data files, read once per process."""
    sha = hashlib.sha256()
    for package in ("hlobridge", "hlobridge.dialects", "hlobridge.passes"):  # the last two: own dirs
        root = Path(importlib.util.find_spec(package).origin).resolve().parent
        for path in sorted(root.rglob("*")):
            if path.suffix in (".py", ".json") and "__pycache__" not in path.parts:
                sha.update(str(path.relative_to(root)).encode())
                sha.update(path.read_bytes())
    return sha.digest()


@cache
def _iree_version() -> str:
    try:
        from importlib.metadata import version
        return version("iree-base-compiler")
    except Exception:  # noqa: BLE001  (an unusual install: the flags still key the cache)
        return "unknown"


@cache
def _host_cpu() -> str:
    """What `--iree-llvmcpu-target-cpu=host` compiles for: a cache directory shared between
    machines (an NFS home) must not hand one CPU's binary to another."""
    lines = cpuinfo_lines()
    if lines is None:
        return platform.machine() + platform.processor()
    wanted = [ln for ln in lines if ln.startswith(("model name", "flags", "Features"))]
    return platform.machine() + "\n" + "\n".join(dict.fromkeys(wanted))


class CompileCache:
    """vmfb bytes by key; `get_or_compile` says where each came from."""

    def __init__(self, directory: str | os.PathLike | bool | None = None, memory: MemoryCache | None = None,
                 stale_seconds: float = STALE_SECONDS):
        self.memory = PROCESS_MEMORY if memory is None else memory
        self.stale_seconds = stale_seconds  # a lock file older than this is a dead process's
        self._warned_unwritable = self._warned_unreadable = False
        self.directory = cache_dir_of(directory)

    @staticmethod
    def key(mlir_text: str, options: CompileOptions) -> str:
        """The hash of what determines the binary (see the module docstring)."""
        return CompileCache.key_of([mlir_text.encode()], options)

    @staticmethod
    def key_of(parts: list[bytes], options: CompileOptions) -> str:
        """The hash of `parts` (what the module's text is a function of: the text itself, or
        what it is lowered from) with the IREE version, hlobridge's source, the flags and the host CPU."""
        h = hashlib.sha256()
        flags = [options.target] + options.iree_flags()
        host = _host_cpu() if any(f.endswith("=host") for f in flags) else ""
        backend = backend_of(options)
        if backend.name != "iree":  # (IREE's keys stay as they were)
            flags.insert(0, f"backend={backend.name} {backend.version()} matmul={options.matmul_precision}")
        for part in [_iree_version().encode(), source_hash(), " ".join(flags).encode(), host.encode(), *parts]:
            h.update(len(part).to_bytes(8, "little"))
            h.update(part)
        return h.hexdigest()[:32]

    def get_or_compile(self, mlir_text: str, options: CompileOptions, dump=None) -> tuple[bytes, str]:
        """(vmfb, source) where source is "memory", "disk" or "compiled"; `dump` receives
        IREE's phases when it compiles (a cached binary has none to show)."""
        return self.get_or_build(self.key(mlir_text, options),
                                 lambda: backend_of(options).compile(mlir_text, options, dump))

    def get_or_build(self, key: str, build) -> tuple[bytes, str]:
        """(vmfb, source) for `key`: from memory, from disk, or `build()` ("compiled") and kept;
        built once however many threads and processes ask at the same time (`claim`)."""
        claim = self.claim(key)
        if isinstance(claim, tuple):
            return claim
        if isinstance(claim, Future):
            return claim.result()
        try:
            vmfb = build()
        except BaseException as e:
            claim.fail(e)
            raise
        claim.finish(vmfb)
        return vmfb, "compiled"

    def claim(self, key: str) -> tuple[bytes, str] | Future | Build:
        """What a caller about to build `key` should do: (vmfb, source) found; a Future of
        (vmfb, "memory") another thread of this process is building; or a `Build`, this
        caller's to `finish` (or `fail`), holding the key's lock file if the cache is on disk
        (another process building it was waited for)."""
        found = self.lookup(key)
        if found is not None:
            return found
        future, leader = self.memory.flights.claim(key)
        if not leader:
            return future
        build = Build(self, key)
        found = self.lookup(key)  # kept by the build that ended as this claim began
        path = self._path(key)
        if found is None and path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError:
                pass  # (no lock file then: the build goes ahead, and _store warns)
            lock = DiskClaim(path.with_suffix(".lock"), self.stale_seconds)
            try:
                built_elsewhere = not lock.acquire(lambda: _exists(path), self._entry_mode())
            except BaseException as e:  # (KeyboardInterrupt while waiting: the waiters are told)
                build.fail(e)
                raise
            build.lock = lock
            found = self.lookup(key) if built_elsewhere or _exists(path) else None  # (or as the lock came free)
        if found is not None:
            build.end(found)
            return found
        return build

    def lookup(self, key: str) -> tuple[bytes, str] | None:
        """(vmfb, "memory" or "disk") for `key`, or None: it must be built. An entry this
        process cannot read (another user's) is a miss, with one CacheWarning per cache."""
        path = self._path(key)
        if key in self.memory:
            if path is not None and not _exists(path):  # compiled for another cache dir
                self._store(path, self.memory[key])
            return self.memory[key], "memory"
        if path is not None and _exists(path):
            try:
                entry = path.read_bytes()
            except OSError as e:
                if not self._warned_unreadable:
                    self._warned_unreadable = True
                    warnings.warn(CacheWarning(f"{path}: cannot read the compile-cache entry ({e.strerror or e}); "
                                               f"compiling again (see docs/robustness.md: a shared cache)"),
                                  stacklevel=4)
                return None
            vmfb = unseal(entry, _SEAL)
            if vmfb is not None:
                vmfb = self.memory[key] = bytes(vmfb)
                return vmfb, "disk"
            warnings.warn(CacheWarning(f"{path}: a truncated or damaged compile-cache entry; compiling again"),
                          stacklevel=4)
        return None

    def keep(self, key: str, vmfb: bytes) -> None:
        """Hold a binary built for `key`, in memory and on disk."""
        self.memory[key] = vmfb
        path = self._path(key)
        if path is not None:
            self._store(path, vmfb)

    def _path(self, key: str) -> Path | None:
        return self.directory / f"{key}.vmfb" if self.directory else None

    def _store(self, path: Path, data: bytes) -> None:
        try:
            # the directory's bits: mkstemp's 0600 would keep a shared cache's group out
            write_sealed(path, data, _SEAL, self._entry_mode())
        except OSError as e:  # a read-only or full disk costs only warm starts
            if not self._warned_unwritable:
                self._warned_unwritable = True
                warnings.warn(CacheWarning(f"cannot write the compile cache in {path.parent}: "
                                           f"{e.strerror or e}; compiled clusters stay in memory"), stacklevel=3)


    def _entry_mode(self) -> int:
        """An entry's permissions: its directory's read and write bits (a cache directory made
        group-readable, e.g. 2775 for a team, shares its entries with the group; the default
        ~/.cache/hlobridge, 0755 under the usual umask, gives 0644)."""
        try:
            return self.directory.stat().st_mode & 0o666
        except OSError:
            return 0o644


class Build:
    """The claim to build one key: `finish` keeps the binary and hands it to the waiters,
    `fail` hands them the error; either ends the claim and removes the lock file."""

    def __init__(self, cache: CompileCache, key: str):
        self.cache, self.key, self.lock = cache, key, None

    def finish(self, vmfb: bytes) -> None:
        self.cache.keep(self.key, vmfb)
        self.end((vmfb, "memory"))

    def fail(self, error: BaseException) -> None:
        self.end(error=error)

    def end(self, result=None, error: BaseException | None = None) -> None:
        if self.lock is not None:
            self.lock.release()
        self.cache.memory.flights.release(self.key, result if result is None else (result[0], "memory"), error)


def _exists(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a folder this process may not search
        return False



def clear_memory_cache() -> None:
    """Forget compiled clusters held in this process's memory (tests use it to show disk-cache hits)."""
    PROCESS_MEMORY.clear()
