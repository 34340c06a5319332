"""A file object that writes half of what it is given, then SIGKILLs its own process: what a
process killed while writing a cache entry or a checkpoint leaves behind. Used by the fault tests
in a subprocess (`python -c`, run from the repository root)."""

import os
import signal


class DyingFile:
    """Wraps an open file; the first `write` writes half its data and kills the process."""

    def __init__(self, f):
        self.f = f

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def write(self, data):
        self.f.write(data[: len(data) // 2])
        self.f.flush()
        os.kill(os.getpid(), signal.SIGKILL)
