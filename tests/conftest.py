import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
SHARED_GRAPHS = Path(os.environ.get("HLOBRIDGE_SHARED_GRAPHS", ROOT.parent / "shared" / "graphs"))


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
