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


def _batch(pool: np.ndarray, case: "Case", step: int) -> np.ndarray:
    """The step's rows of a feed pool, as the protocol says (batch_index, step_sizes)."""
    train = case.meta["train"]
    if not train.get("batch_index"):
        return pool
    index = case.array(train["batch_index"])[step]
    if train.get("step_sizes"):
        index = index[: case.array(train["step_sizes"])[step]]
    return pool[index]


def run_training(case: "Case", session) -> dict:
    """The corpus training protocol on a hlobridge Session: init (feeding TF's initial values
    into initial_value_tensor), the steps, then variable reads and evals."""
    meta, train = case.meta, case.meta["train"]
    init_feeds = {v["initial_value_tensor"]: case.array(v["initial_value"]["npz"])
                  for v in meta["variables"] if "npz" in v.get("initial_value", {})}
    session.run(meta["init_op"], init_feeds)
    pools = {name: case.array(src["npz"]) for name, src in train["step_feeds"].items()}
    losses = []
    for step in range(meta["steps"]):
        feeds = {name: _batch(pool, case, step) for name, pool in pools.items()}
        _, loss = session.run([meta["train_op"], meta["loss"]], feeds)
        losses.append(loss)
    variables = {v["name"]: session.run(v["read_tensor"]) for v in meta["variables"]}
    evals = {}
    for ev in meta.get("evals", []):
        feeds = {name: case.array(key) for name, key in ev["feeds"].items()}
        fetched = session.run(list(ev["expected"]), feeds)
        evals[ev["name"]] = dict(zip(ev["expected"], fetched))
    return {"losses": np.array(losses), "variables": variables, "evals": evals}


def _reference(case: "Case", spec: dict):
    """A full array, or (sample_index, sample_values, summary) for summarised arrays."""
    if "npz" in spec:
        return case.array(spec["npz"])
    s = spec["summary"]
    return case.array(s["sample_index"]), case.array(s["sample_values"]), s


def judge_training(case: "Case", result: dict) -> None:
    """The corpus README's rules: every loss elementwise; final variables within 10% of their
    update; evals within 1% (relative norm)."""
    meta, tol = case.meta, case.tolerance
    want_losses = case.array(meta["train"]["loss_per_step"])
    np.testing.assert_allclose(result["losses"], want_losses, rtol=tol["rtol"], atol=tol["atol"],
                               err_msg=f"{meta['name']}: loss per step")
    for v in meta["variables"]:
        got = np.asarray(result["variables"][v["name"]])
        final = _reference(case, v["final_value"])
        initial = _reference(case, v["initial_value"]) if "initial_value" in v else None  # slots start at 0
        if isinstance(final, tuple):  # summarised: judge on the samples and on the sum of squares
            index, values, summary = final
            start = initial[1] if isinstance(initial, tuple) else np.zeros_like(values)
            err, update = np.linalg.norm(got.reshape(-1)[index] - values), np.linalg.norm(values - start)
            np.testing.assert_allclose(np.sum(got.astype(np.float64) ** 2), summary["sum_sq"], rtol=1e-3)
        else:
            err, update = np.linalg.norm(got - final), np.linalg.norm(final - (0 if initial is None else initial))
        assert err <= 0.1 * update + 1e-12, \
            f"{meta['name']}: variable {v['name']} off by {err:.3g}, its update's norm is {update:.3g}"
    for ev in meta.get("evals", []):
        for name, key in ev["expected"].items():
            want = case.array(key)
            got = np.asarray(result["evals"][ev["name"]][name])
            assert np.linalg.norm(got - want) <= 0.01 * np.linalg.norm(want) + 1e-12, \
                f"{meta['name']}: eval {ev['name']} {name}"
