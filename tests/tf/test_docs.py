"""docs/tensorflow.md's examples run as written: the first python block (a function and a Keras
model), then the training step on the first block's model."""

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tensorflow")

DOC = Path(__file__).resolve().parents[2] / "docs" / "tensorflow.md"


def _blocks() -> list[str]:
    return [part.split("```", 1)[0] for part in DOC.read_text().split("```python\n")[1:]]


def test_the_guides_examples_run():
    first, training = _blocks()
    scope: dict = {}
    exec(compile(first, str(DOC), "exec"), scope)
    assert scope["y"].shape == (3, 4) and (scope["y"] >= 0).all()
    assert scope["probs"].shape == (16, 10)

    rng = np.random.default_rng(0)
    scope["batches"] = [(rng.normal(size=(n, 28, 28, 1)).astype(np.float32), rng.integers(0, 10, n))
                        for n in (8, 8, 4)]
    before = [w.copy() for w in scope["model"].get_weights()]
    exec(compile(training, str(DOC), "exec"), scope)
    assert np.isfinite(scope["loss"]) and scope["loss"].shape == ()
    assert int(scope["opt"].iterations.numpy()) == 3
    assert all((a != b).any() for a, b in zip(before, scope["model"].get_weights()))
