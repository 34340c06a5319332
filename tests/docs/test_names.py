"""The docs name only what exists: every `--flag` on a line that runs one of hlobridge's
commands (in a code block or inline code of README.md and docs/*.md) is in that command's
`--help`, every flag given in an `HLOBRIDGE_FLAGS` value is one hlobridge.flags parses, and every
`hlobridge.X` of their Python blocks resolves."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

BIN = Path(sys.executable).parent
CLIS = ("hlobridge-compile", "hlobridge-explain", "hlobridge-ops", "hlobridge-profile", "hlobridge-opt")
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def _command_lines() -> list[tuple[str, str, str]]:
    """(page, command, the text after it) for each mention of a command with its arguments."""
    out = []
    for page in PAGES:
        for line in page.read_text().splitlines():
            for span in re.findall(r"`([^`]+)`", line) or [line]:
                for cli in CLIS:
                    for m in re.finditer(rf"(?<![\w/-]){cli}(?![\w-])", span):
                        rest = span[m.end():].split("#")[0]   # a shell comment is prose
                        out.append((page.name, cli, rest))
    return out


@pytest.fixture(scope="module")
def helps() -> dict[str, set[str]]:
    """Each command's options, as its --help spells them (whole words: --cpu is not --cpu-triple)."""
    return {cli: set(FLAG.findall(subprocess.run([BIN / cli, "--help"], capture_output=True, text=True,
                                                 check=True).stdout)) for cli in CLIS}


def test_documented_cli_flags_exist(helps):
    lines = _command_lines()
    assert len(lines) > 30, "the docs lost their command examples, or this test lost its parser"
    unknown = sorted({f"{page}: {cli} {flag}" for page, cli, rest in lines for flag in FLAG.findall(rest)
                      if flag not in helps[cli]})
    assert not unknown, "options the commands do not have:\n  " + "\n  ".join(unknown)


def test_documented_hlobridge_flags_exist():
    from hlobridge import flags
    source = Path(flags.__file__).read_text()
    known = set(FLAG.findall(source))
    mentioned = set()
    for page in PAGES:
        for value in re.findall(r"HLOBRIDGE_FLAGS=\"?([^\"`\n]+)", page.read_text()):
            mentioned |= set(FLAG.findall(value))
    assert {"--dump-to", "--no-compile-ahead"} <= mentioned
    assert not mentioned - known, f"not HLOBRIDGE_FLAGS options: {sorted(mentioned - known)}"


def _tf_public_names():
    """The names hlobridge/tf/__init__.py exports, read without importing TensorFlow."""
    import ast
    tree = ast.parse((ROOT / "hlobridge" / "tf" / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def test_python_names_in_docs_exist():
    """Every `hlobridge.X.Y` and `from hlobridge.X import Y` in the Python blocks of the docs
    resolves, so an API renamed in the code cannot stay documented under its old name."""
    import importlib
    import importlib.util
    from tests.docs.markdown import code_blocks
    refs = set()
    for page in PAGES:
        for block in code_blocks(page.read_text()):
            if block.lang == "python" or "import hlobridge" in block.text:
                refs |= {(page.name, r) for r in re.findall(r"\bhlobridge(?:\.[A-Za-z_]\w*)+", block.text)}
                refs |= {(page.name, f"{mod}.{name.strip()}") for mod, names in
                         re.findall(r"from (hlobridge[\w.]*) import ([\w, ]+)", block.text) for name in names.split(",")}
    assert len(refs) > 10
    missing = []
    for page, ref in sorted(refs):
        parts = ref.split(".")
        if parts[:2] == ["hlobridge", "tf"] and importlib.util.find_spec("tensorflow") is None:
            # hlobridge.tf imports TensorFlow (an optional extra): read its public names instead
            if not set(parts[2:3]) <= _tf_public_names():
                missing.append(f"{page}: {ref}")
            continue
        obj = importlib.import_module(parts[0])
        for i, part in enumerate(parts[1:], 1):
            if not hasattr(obj, part):
                try:
                    obj = importlib.import_module(".".join(parts[:i + 1]))
                    continue
                except ImportError:
                    missing.append(f"{page}: {ref}")
                    break
            obj = getattr(obj, part)
    assert not missing, "documented names that do not exist:\n  " + "\n  ".join(missing)
