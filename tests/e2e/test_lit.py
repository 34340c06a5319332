"""Runs the lit/FileCheck suite (tests/lit) as part of pytest, so one command runs everything."""

import subprocess
import sys
from pathlib import Path
from tests.conftest import TESTS

LIT_DIR = TESTS / "lit"


def test_lit_suite():
    proc = subprocess.run([sys.executable, "-c", "from lit.main import main; main()", "-v", "--order=lexical", str(LIT_DIR)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-4000:]
    assert "Passed" in proc.stdout
