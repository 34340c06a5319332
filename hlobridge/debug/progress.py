"""Where a long compile is: one status line on a terminal, nothing anywhere else.

A compile of a large model takes 10-60 s. Work that may be long runs inside `activity(label)`;
the stages report as they go (`report(stage, detail)`, `expect(total)`, `advance()`), and once
the activity has run for `DELAY` seconds a status line shows on stderr, redrawn in place every
`INTERVAL` seconds until the activity ends, when it is erased:

    hlobridge 7 s, Session.run, first run [2/5]: iree-compile (executable-targets): cluster_1 (340 ops)

Nothing shows unless stderr is a terminal (a pipe, a file, pytest's capture, a notebook get
none), or when `configure("off")` (the CLIs' -q) or `HLOBRIDGE_PROGRESS=0`; `configure("on")`
forces it (for a test, with a stream of its own). `HLOBRIDGE_PROGRESS_DELAY` sets `DELAY`. A status line is not a log: what was done is
logged through `logging` under `hlobridge.*` (`-v` on the CLIs); a log handler that writes to
the same terminal calls `clear()` before it writes (cli/common.py's does).

Activities nest: an inner one (a compile inside a Session's first run) reports into the
outer's line. Reports from other threads (iree-compile on a compile thread) update the same
line. Hand-written, not rich or tqdm: one line redrawn in place is a hundred lines of code, and
a library for it would be a dependency of the core.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time

DELAY = float(os.environ.get("HLOBRIDGE_PROGRESS_DELAY", 1.5))  # seconds before a line shows
INTERVAL = 0.25  # seconds between redraws
_ERASE = "\r\x1b[K"

_mode = "auto"
_stream = None  # None: sys.stderr as it is when an activity begins
_lock = threading.RLock()
_current: Status | None = None


def configure(mode: str = "auto", stream=None) -> None:
    """"auto" (a line when stderr is a terminal), "on" (always, to `stream` if given) or "off"."""
    global _mode, _stream
    if mode not in ("auto", "on", "off"):
        raise ValueError(f"progress mode must be auto, on or off, got {mode!r}")
    _mode, _stream = mode, stream


def _enabled(stream) -> bool:
    if _mode == "off" or os.environ.get("HLOBRIDGE_PROGRESS", "") in ("0", "off"):
        return False
    if _mode == "on":
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Status:
    """One activity's status line: its fields, the time it began, and the thread redrawing it."""

    def __init__(self, label: str, stream):
        self.label, self.stream = label, stream
        self.stage = self.detail = self.phase = ""
        self.done, self.total = 0, None
        self.start = time.monotonic()
        self.shown = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hlobridge-progress", daemon=True)
        self._thread.start()

    def line(self) -> str:
        counter = f" [{self.done}/{self.total}]" if self.total else ""
        stage = f": {self.stage}" if self.stage else ""
        phase = f" ({self.phase})" if self.phase else ""
        detail = f": {self.detail}" if self.detail else ""
        return f"hlobridge {time.monotonic() - self.start:.0f} s, {self.label}{counter}{stage}{phase}{detail}"

    def _run(self) -> None:
        if self._stop.wait(DELAY):
            return
        while not self._stop.is_set():
            self.draw()
            self._stop.wait(INTERVAL)

    def draw(self) -> None:
        with _lock:
            if not self._stop.is_set() and _mode != "off":  # (-q may come after the activity began)
                self._write(_ERASE + self.line()[:_width(self.stream) - 1])
                self.shown = True

    def clear(self) -> None:
        with _lock:
            if self.shown:
                self._write(_ERASE)
                self.shown = False

    def close(self) -> None:
        with _lock:
            self._stop.set()
            self.clear()
        self._thread.join()

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed terminal: the work goes on without its line
            self._stop.set()


def _width(stream) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 100


@contextlib.contextmanager
def activity(label: str):
    """Run the body as an activity labelled `label` (see the module docstring); inside another
    activity, the body reports into that one's line."""
    global _current
    with _lock:
        stream = _stream or sys.stderr
        status = None if _current is not None or not _enabled(stream) else Status(label, stream)
        if status is not None:
            _current = status
    try:
        yield
    finally:
        if status is not None:
            with _lock:
                _current = None
            status.close()


def report(stage: str, detail: str = "") -> None:
    """The current activity is at `stage` (e.g. "iree-compile"), on `detail` (what it works on)."""
    status = _current
    if status is not None:
        status.stage, status.detail, status.phase = stage, detail, ""


def phase(name: str) -> None:
    """The current stage's phase (IREE's, while iree-compile runs)."""
    status = _current
    if status is not None:
        status.phase = name


def showing() -> bool:
    """Whether an activity with a status line (on a terminal) is under way: only then is it
    worth extra work to say where it is."""
    return _current is not None


def expect(total: int) -> None:
    """The current activity has `total` steps (clusters to compile) to go through."""
    status = _current
    if status is not None:
        status.done, status.total = 0, total


def advance() -> None:
    """One more step of the current activity is done."""
    status = _current
    if status is not None and status.total:
        with _lock:
            status.done = min(status.done + 1, status.total)


def clear() -> None:
    """Erase the status line (it comes back at the next redraw): before other output."""
    status = _current
    if status is not None:
        status.clear()
