"""Numbered IR dumps: every stage and every pass can write what it produced.

A `Dumper` receives `(name, text)` after each stage ("graph", "shapes", "stablehlo",
"simplify", "iree-flow", ...) and after each pass inside a stage ("simplify.cse"). It
writes `NN-name.suffix` files in call order, and/or hands the text to a `sink`. A
`pattern` (a regex searched in the name) keeps only the matching ones, like XLA's
`--xla_dump_hlo_pass_re`; the numbers count the files written, so they stay dense.

`Dumper.from_flags()` falls back to HLOBRIDGE_FLAGS (hlobridge/flags.py), and
`cluster_dumper(name)` gives each Session cluster compile its own numbered subdirectory.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .. import flags
from ..errors import HlobridgeError


class Dumper:
    """Receives the IR after each stage/pass; disabled when it has neither directory nor sink."""

    def __init__(self, directory: str | os.PathLike | None = None, sink=None,
                 pattern: str | None = None):
        self.directory = Path(directory) if directory else None
        self.sink = sink
        self.count = 0
        try:
            self.pattern = re.compile(pattern) if pattern else None
        except re.error as e:
            raise HlobridgeError(f"--dump-pass: bad regular expression '{pattern}': {e}") from None
        if self.directory:
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise HlobridgeError(f"--dump-to {self.directory}: cannot create the folder: "
                                     f"{e.strerror or e}") from None

    @classmethod
    def from_flags(cls, directory=None, pattern: str | None = None) -> "Dumper":
        """Explicit options first, then HLOBRIDGE_FLAGS; disabled when neither names a directory."""
        env = flags.from_environment()
        return cls(directory or env.dump_to, pattern=pattern if pattern is not None else env.dump_pass)

    @property
    def enabled(self) -> bool:
        """Whether anything is dumped at all: a directory or a sink is set."""
        return bool(self.directory or self.sink)

    def wants(self, name: str) -> bool:
        """Whether a dump of `name` would be kept (callers skip printing the IR otherwise)."""
        return self.enabled and (self.pattern is None or self.pattern.search(name) is not None)

    def __call__(self, stage: str, text: str | bytes, suffix: str = ".mlir") -> Path | None:
        if not self.wants(stage):
            return None
        if self.sink:
            self.sink(stage, text.decode() if isinstance(text, bytes) else text)
        if not self.directory:
            return None
        path = self.directory / f"{self.count:02d}-{stage}{suffix}"
        self.count += 1
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
        return path


def numbered_subdirectory(parent: Path, name: str) -> Path:
    """parent/NNN-name, NNN one past the highest number already there (also from earlier
    processes), created atomically so two compiles never share one."""
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise HlobridgeError(f"--dump-to {parent}: cannot create the folder: {e.strerror or e}") from None
    while True:
        numbers = [int(m.group(1)) for p in parent.iterdir() if (m := re.match(r"(\d+)-", p.name))]
        path = parent / f"{max(numbers, default=-1) + 1:03d}-{name}"
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue


def cluster_dumper(name: str) -> Dumper:
    """The dumper for one Session cluster compile: HLOBRIDGE_FLAGS' directory/NNN-name."""
    env = flags.from_environment()
    if not env.dump_to:
        return Dumper()
    return Dumper(numbered_subdirectory(Path(env.dump_to), name), pattern=env.dump_pass)
