"""Single flight: one build per key, however many callers ask for it at once.

In a process, `SingleFlight` gives the first caller of a key the claim (a `Future` it resolves)
and every later caller that future to wait on. Across processes sharing a disk cache,
`DiskClaim` is a lock file beside the entry (`<key>.lock`, created with O_EXCL): the process
that creates it builds, the others poll until the entry appears or the lock goes away. A lock
whose process is gone (same host, pid not running) or older than `stale_seconds` is stale and
broken, so a process killed mid-compile delays the others by at most that long (one killed while
writing the lock's line, by UNFINISHED_SECONDS). Two processes
breaking the same stale lock at once may both build; the entry's atomic rename keeps that to
wasted work, never a torn entry.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from concurrent.futures import Future
from pathlib import Path

STALE_SECONDS = 600.0  # a compile longer than this on another host is taken for a dead one
# A lock whose one line ("host pid\n") is still unfinished this long after it was made belongs to a
# process killed while writing it (its creator writes the line at once); without this rule a
# later run waited STALE_SECONDS for it (tests/compile/test_cache.py's killed process).
UNFINISHED_SECONDS = 2.0
POLL_SECONDS = 0.05


class SingleFlight:
    """Claims by key within one process."""

    def __init__(self):
        self._lock = threading.Lock()
        self._calls: dict = {}

    def claim(self, key) -> tuple[Future, bool]:
        """(the key's future, whether this caller is the one to resolve it with `release`)."""
        with self._lock:
            future = self._calls.get(key)
            if future is not None:
                return future, False
            future = self._calls[key] = Future()
            return future, True

    def release(self, key, result=None, error: BaseException | None = None) -> None:
        """End the claim on `key`: waiters get `result`, or `error` raised."""
        with self._lock:
            future = self._calls.pop(key)
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def do(self, key, fn):
        """fn() for the first caller of `key`; callers meanwhile wait and share its result."""
        future, leader = self.claim(key)
        if not leader:
            return future.result()
        try:
            result = fn()
        except BaseException as e:
            self.release(key, error=e)
            raise
        self.release(key, result)
        return result


class DiskClaim:
    """The lock file of one key in a cache directory (see the module docstring)."""

    def __init__(self, path: Path, stale_seconds: float = STALE_SECONDS):
        self.path, self.stale_seconds, self.held = path, stale_seconds, False

    def acquire(self, done, mode: int = 0o644) -> bool:
        """Take the lock (True), or wait until `done()` (another process built the entry: False).
        A directory where no lock can be made (read-only) counts as taken: build without it."""
        while True:
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode)
            except FileExistsError:
                if done():
                    return False
                if self._stale():
                    self._break()
                    continue
                time.sleep(POLL_SECONDS)
                continue
            except OSError:
                return True
            with os.fdopen(fd, "w") as f:
                f.write(f"{socket.gethostname()} {os.getpid()}\n")
            self.held = True
            return True

    def release(self) -> None:
        if self.held:
            self.held = False
            try:
                os.unlink(self.path)
            except OSError:
                pass

    def _stale(self) -> bool:
        try:
            text = self.path.read_text()
            age = time.time() - self.path.stat().st_mtime
        except OSError:
            return False  # gone (released) or unreadable: look again
        if not text.endswith("\n"):  # still being written, or its writer was killed: its pid may be cut short
            return age > UNFINISHED_SECONDS
        host, _, pid = text.strip().partition(" ")
        if host == socket.gethostname() and pid.isdigit() and not _running(int(pid)):
            return True
        return age > self.stale_seconds

    def _break(self) -> None:
        try:
            os.unlink(self.path)
        except OSError:
            pass


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True
