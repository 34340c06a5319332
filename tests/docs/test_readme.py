"""README.md's code blocks, run as a user types them, so that the front page cannot go stale.

Each block is run in README order from one temporary folder laid out as a fresh clone is: it
holds `examples/` and has `../shared/graphs` beside it, with the package's console scripts on
PATH and an empty compile cache. A block that cannot run here carries a marker comment right
above its fence, `<!-- readme-test: KIND -->`, and is checked by its kind instead:

- `install`: the fresh-machine commands. Their steps are compared with `.ci/run` (the same venv,
  the same extras, the same pytest arguments) and the main job's last step is run.
- `needs-gpu`: run where a CUDA device is; elsewhere its syntax, the files it names and the
  flags it passes are checked.
- `slow`: minutes of work or TensorFlow (benchmarks); checked as `needs-gpu` is without a GPU.

A block with no language, another language or an unknown marker fails the test.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import ROOT, SHARED_GRAPHS
from tests.docs.markdown import code_blocks

README = ROOT / "README.md"
BIN = Path(sys.executable).parent
KINDS = {None, "install", "needs-gpu", "slow"}
LANGS = {"sh", "python"}


def _blocks():
    return code_blocks(README.read_text())


@pytest.fixture(scope="module")
def user_dir(tmp_path_factory) -> Path:
    """A folder as a user's clone looks from its root: examples/ in it, ../shared/graphs beside."""
    if not SHARED_GRAPHS.is_dir():
        pytest.fail(f"graph corpus not found at {SHARED_GRAPHS} (set HLOBRIDGE_SHARED_GRAPHS)")
    top = tmp_path_factory.mktemp("readme")
    (top / "shared").mkdir()
    (top / "shared" / "graphs").symlink_to(SHARED_GRAPHS)
    work = top / "clone"
    work.mkdir()
    (work / "examples").symlink_to(ROOT / "examples")
    return work


def _env(work: Path) -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "HLOBRIDGE_CACHE_DIR": str(work.parent / "cache")}


def _run(block, work: Path) -> subprocess.CompletedProcess:
    """A sh block as a shell runs it (stopping at the first failing line), a Python block as a
    script. `.venv/bin/` is this test's own venv."""
    text = block.text.replace(".venv/bin/", f"{BIN}/")
    if block.lang == "sh":
        cmd = ["bash", "-e", "-o", "pipefail", "-c", text]
    else:
        script = work / f"block_{block.line}.py"
        script.write_text(text)
        cmd = [sys.executable, str(script)]
    return subprocess.run(cmd, cwd=work, env=_env(work), capture_output=True, text=True, timeout=600)


def _check_ran(block, proc: subprocess.CompletedProcess) -> None:
    said = f"{block.where(README)} failed (exit {proc.returncode}):\n{block.text}\n{proc.stdout[-3000:]}\n" \
           f"{proc.stderr[-3000:]}"
    assert proc.returncode == 0, said
    assert "Traceback (most recent call last)" not in proc.stderr, said


def test_every_block_says_how_it_is_checked():
    blocks = _blocks()
    assert len(blocks) >= 8, "the README has lost its examples"
    for b in blocks:
        assert b.lang in LANGS, f"{b.where(README)}: a code block needs a language, one of {sorted(LANGS)}"
        assert b.marker in KINDS, f"{b.where(README)}: unknown marker {b.marker!r} (known: {sorted(KINDS - {None})})"
    runnable = [b for b in blocks if b.marker is None]
    assert {"sh", "python"} <= {b.lang for b in runnable}
    for cli in ("hlobridge-compile", "hlobridge-explain", "hlobridge-profile"):
        assert any(cli in b.text for b in runnable), f"no README example of {cli} is run"


def test_blocks_run_in_order(user_dir):
    """The unmarked blocks, in README order: a later block may read what an earlier one wrote."""
    for b in _blocks():
        if b.marker is None:
            _check_ran(b, _run(b, user_dir))


def _ci_steps() -> tuple[str, str]:
    """.ci/run's install line and its pytest arguments."""
    ci = (ROOT / ".ci" / "run").read_text()
    install = re.search(r"-m pip install (?:-q )?(-e '\.\[[\w,]+\]')", ci)
    pytest_args = re.search(r"-m pytest ([^\n]*)", ci)
    assert install and pytest_args, ".ci/run no longer installs the package or runs pytest as the README says"
    return install.group(1), pytest_args.group(1).strip()


def test_install_commands_are_what_ci_runs(user_dir):
    install, pytest_args = _ci_steps()
    blocks = [b for b in _blocks() if b.marker == "install"]
    assert len(blocks) == 2, "the README has two fresh-machine commands: the main job, then every test"
    steps = [b.text.strip().split(" && ") for b in blocks]
    for s in steps:
        assert s[0] == "python3 -m venv .venv"
        assert s[1] == f".venv/bin/pip install {install}", f"{s[1]!r} does not install what .ci/run does"
    assert steps[1][2] == f".venv/bin/python -m pytest {pytest_args}", "the test command differs from .ci/run's"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = re.search(r"\[([\w,]+)\]", install).group(1).split(",")
    assert all(extra in project["optional-dependencies"] for extra in extras)
    low = re.match(r">=3\.(\d+)", project["requires-python"])
    assert low and int(low.group(1)) <= 11, "the README promises Python 3.11"
    main_job = steps[0][2]
    assert main_job == ".venv/bin/python examples/run_example.py"
    proc = subprocess.run(shlex.split(main_job.replace(".venv/bin/", f"{BIN}/")), cwd=user_dir,
                          env=_env(user_dir), capture_output=True, text=True, timeout=600)
    _check_ran(blocks[0], proc)
    assert "matches" in proc.stdout and "DIFFERS" not in proc.stdout, proc.stdout


def _check_unrun(block) -> None:
    """What can be checked without running: the shell's syntax, every repository file a line
    names, and every --flag it passes a script that the script's source defines."""
    syntax = subprocess.run(["bash", "-n", "-c", block.text], capture_output=True, text=True)
    assert syntax.returncode == 0, f"{block.where(README)}: {syntax.stderr}"
    for line in block.text.splitlines():
        words = shlex.split(line, comments=True)
        scripts = [w for w in words if w.endswith(".py")]
        for s in scripts:
            assert (ROOT / s).is_file(), f"{block.where(README)} names {s}, which is not in the repository"
        for flag in (w.split("=")[0] for w in words if w.startswith("--")):
            assert any(re.search(rf"{re.escape(flag)}(?![\w-])", (ROOT / s).read_text()) for s in scripts), \
                f"{block.where(README)}: {flag} is not an option of {scripts}"


@pytest.mark.parametrize("kind", ["needs-gpu", "slow"])
def test_marked_blocks_are_checked(kind, user_dir):
    from hlobridge.runtime.module import cuda_available
    blocks = [b for b in _blocks() if b.marker == kind]
    assert blocks, f"no {kind} block: drop the kind from this test if that is meant"
    for b in blocks:
        if kind == "needs-gpu" and cuda_available():
            _check_ran(b, _run(b, user_dir))
        else:
            _check_unrun(b)


def test_front_page_stays_short_and_docs_keep_no_run_diary():
    """A measurement is a dated table with its command; the story of the runs that led to it is
    for commit messages."""
    assert len(README.read_text().splitlines()) <= 250, "the README is a front page: move detail into docs/"
    for page in [README, *sorted((ROOT / "docs").glob("*.md"))]:
        text = page.read_text().lower()
        for phrase in ("the run before", "the first run that day", "the run just before", "this stop",
                       "last run of that day", "the previous run"):
            assert phrase not in text, f"run-by-run narrative in {page.name}: {phrase!r}"


def test_coverage_count_is_the_registrys():
    """The README quotes `hlobridge-ops --missing`'s count; it must be today's."""
    out = subprocess.run([BIN / "hlobridge-ops", "--missing"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"compiles (\d+) of the (\d+) ops .*?inlines (\d+) more", out)
    assert m, out[-500:]
    compiled, total, inlined = m.groups()
    assert f"{compiled} of the {total} ops" in README.read_text() and f"{inlined} more inlined" in README.read_text()


def test_extras_table_is_pyprojects():
    """Every extra in pyproject.toml is in the README's table; one the table lists that
    pyproject lacks is marked (planned)."""
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    rows = re.findall(r"^\| `hlobridge\[(\w+)\]`( \(planned\))? \|", README.read_text(), re.M)
    listed = {name for name, _ in rows}
    assert extras <= listed, f"extras missing from the README's table: {sorted(extras - listed)}"
    for name, planned in rows:
        assert (name in extras) != bool(planned), \
            f"hlobridge[{name}]: {'marked planned but in pyproject' if planned else 'not in pyproject.toml'}"
