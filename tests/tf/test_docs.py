"""docs/tensorflow.md's example runs as written (the first python block), and its results
have the shapes the comments say."""

from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

DOC = Path(__file__).resolve().parents[2] / "docs" / "tensorflow.md"


def test_the_guides_example_runs():
    text = DOC.read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    scope: dict = {}
    exec(compile(code, str(DOC), "exec"), scope)
    assert scope["y"].shape == (3, 4) and (scope["y"] >= 0).all()
    assert scope["probs"].shape == (16, 10)
