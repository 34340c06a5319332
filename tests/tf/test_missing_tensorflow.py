"""Without TensorFlow, `import hlobridge.tf` says what to install, in one line. Runs in every
venv: TensorFlow's absence is simulated (a None in sys.modules makes its import fail)."""

import importlib
import sys

import pytest


def test_import_without_tensorflow_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorflow", None)
    for name in [m for m in sys.modules if m == "hlobridge.tf" or m.startswith("hlobridge.tf.")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(ImportError) as raised:
        importlib.import_module("hlobridge.tf")
    assert str(raised.value) == ("hlobridge.tf needs TensorFlow, which is not installed: "
                                 "pip install hlobridge[tf]")
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


def test_the_core_never_imports_tensorflow():
    # hlobridge/tf/ is the one place that does; importing hlobridge must not load it
    import subprocess
    code = "import sys, hlobridge, hlobridge.cli.compile; print('tensorflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
