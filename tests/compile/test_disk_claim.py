"""When a cache lock file is stale (compile/flight.py's DiskClaim): the others wait while its
process lives, and break it once that process is gone, however it died."""

import os
import socket
import time

from hlobridge.compile.flight import UNFINISHED_SECONDS, DiskClaim


def _lock(tmp_path, text: str, age: float):
    path = tmp_path / "k.lock"
    path.write_text(text)
    then = time.time() - age
    os.utime(path, (then, then))
    return DiskClaim(path)


def test_a_live_process_keeps_its_lock(tmp_path):
    assert not _lock(tmp_path, f"{socket.gethostname()} {os.getpid()}\n", age=60)._stale()


def test_a_dead_process_loses_its_lock(tmp_path):
    assert _lock(tmp_path, f"{socket.gethostname()} 999999999\n", age=0)._stale()


def test_a_lock_left_half_written_is_broken_soon_not_after_ten_minutes(tmp_path):
    half = f"{socket.gethostname()} {os.getpid()}"[:5]  # killed in the middle of its one write
    assert not _lock(tmp_path, half, age=0)._stale()  # (its process may still be writing)
    assert _lock(tmp_path, half, age=UNFINISHED_SECONDS + 1)._stale()
