"""The TensorFlow-written SavedModels and checkpoints of tests/data/saved_models (written by
tools/make_saved_models.py) and their reference.json, as the tests read them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

DATA = Path(__file__).resolve().parents[1] / "data" / "saved_models"


def case(name: str) -> tuple[Path, dict]:
    """(directory, reference.json) of a case; skips a large case that was not written here."""
    root = DATA / name
    if not (root / "reference.json").exists():
        pytest.skip(f"{root} not written: run .tfvenv/bin/python tools/make_saved_models.py {name}")
    return root, json.loads((root / "reference.json").read_text())


def array(entry: dict) -> np.ndarray:
    return np.array(entry["data"], dtype=entry["dtype"]).reshape(entry["shape"])


def digest(value: np.ndarray) -> str:
    """The SHA-256 make_saved_models.py recorded: raw bytes, or length-prefixed strings."""
    value = np.asarray(value)
    if value.dtype == object:
        data = b"".join(len(v).to_bytes(8, "little") + v for v in value.ravel())
    else:
        data = np.ascontiguousarray(value).tobytes()
    return hashlib.sha256(data).hexdigest()


def assert_bit_exact(values: dict, reference: dict) -> None:
    assert sorted(values) == sorted(reference)
    for key, ref in reference.items():
        assert list(values[key].shape) == ref["shape"], key
        assert digest(values[key]) == ref["sha256"], key
