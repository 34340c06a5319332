"""Launching test programs under `mpiexec` (the MPI wheel's, beside this Python)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def mpiexec() -> str:
    """The mpiexec beside this Python (pip's `mpich` wheel installs one), else on PATH; the
    test is skipped without mpi4py or an mpiexec (CI installs hlobridge[distributed])."""
    pytest.importorskip("mpi4py", reason="hlobridge[distributed] (mpi4py) is not installed")
    found = Path(sys.executable).parent / "mpiexec"
    if found.exists():
        return str(found)
    on_path = shutil.which("mpiexec")
    if on_path is None:
        pytest.skip("no mpiexec (pip install 'hlobridge[distributed]' installs MPICH's)")
    return on_path


def launch(args: list[str], n: int = 2, launcher_args=(), timeout: float = 240, env=None):
    """`mpiexec -n N [launcher_args] python -m ARGS...` from the repository root; the completed process."""
    cmd = [mpiexec(), *launcher_args, "-n", str(n), sys.executable, "-m", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
