import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
SHARED_GRAPHS = Path(os.environ.get("HLOBRIDGE_SHARED_GRAPHS", ROOT.parent / "shared" / "graphs"))
# The backend the corpus, conformance and training tests compile with: "iree" (the default) or
# "xla" (HLOBRIDGE_TEST_BACKEND=xla runs them all on XLA's CPU plugin: docs/backends.md).
TEST_BACKEND = os.environ.get("HLOBRIDGE_TEST_BACKEND", "iree")


def pytest_collection_modifyitems(config, items):
    from hlobridge.runtime.module import cuda_available
    if os.environ.get("HLOBRIDGE_REQUIRE_CUDA") == "1":
        return  # the cuda preset: a missing GPU is a failure, not a skip
    if any("cuda" in item.keywords for item in items) and not cuda_available():
        skip = pytest.mark.skip(reason="no CUDA device (IREE cuda driver unavailable)")
        for item in items:
            if "cuda" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def shared_graphs() -> Path:
    if not SHARED_GRAPHS.is_dir():
        pytest.fail(f"graph corpus not found at {SHARED_GRAPHS} (set HLOBRIDGE_SHARED_GRAPHS)")
    return SHARED_GRAPHS


@pytest.fixture
def flag_values(monkeypatch):
    """flag_values(text): HLOBRIDGE_FLAGS set to `text` for the rest of the test (read anew),
    the process's own given back after."""
    from hlobridge import flags

    def set_to(text: str):
        monkeypatch.setenv(flags.ENV_VAR, text)
        flags.from_environment.cache_clear()
    yield set_to
    monkeypatch.undo()
    flags.from_environment.cache_clear()


@pytest.fixture
def executor(monkeypatch):
    """executor(i): for the i-th case of a corpus, every cluster on IREE's thread pool (local-task,
    HLOBRIDGE_FLAGS --small-cluster-flops=0) when i is odd, the Session's default when even
    (small clusters on the calling thread, local-sync). The corpora are small graphs, which the
    default runs on the calling thread: alternating keeps the asynchronous driver tested too,
    at no extra cost. Returns the executor's name, for the test's id."""
    from hlobridge import flags

    def choose(i: int) -> str:
        if i % 2:
            monkeypatch.setenv(flags.ENV_VAR, " ".join(filter(None, [os.environ.get(flags.ENV_VAR, ""),
                                                                     "--small-cluster-flops=0"])))
        flags.from_environment.cache_clear()
        return "pool" if i % 2 else "by size"

    yield choose
    monkeypatch.undo()
    flags.from_environment.cache_clear()
