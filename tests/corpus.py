"""Reading the graph corpus format (case.json + data.npz) and judging results by its rules."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class Case:
    path: Path
    meta: dict
    data: dict

    @classmethod
    def load(cls, path: Path) -> "Case":
        meta = json.loads((path / "case.json").read_text())
        with np.load(path / "data.npz", allow_pickle=True) as npz:
            data = {k: npz[k] for k in npz.files}
        return cls(path, meta, data)

    @property
    def graph_path(self) -> Path:
        return self.path / self.meta.get("graph_pbtxt", "graph.pbtxt")

    @property
    def tolerance(self) -> dict:
        return self.meta["suggested_tolerance"]

    def array(self, key: str) -> np.ndarray:
        return self.data[key]


def assert_matches(got, want, tol: dict, what: str) -> None:
    """Elementwise within tolerance; ints and bools exactly; NaN/inf where TF has them."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, TensorFlow {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, TensorFlow {want.dtype}"
    if want.dtype.kind in "biuOSU":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        np.testing.assert_allclose(got, want, rtol=tol["rtol"], atol=tol["atol"], err_msg=what)
