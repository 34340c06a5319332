"""The keras-hub sweep (tests/keras_hub, written by tools/keras_hub_sweep.py with TensorFlow):
one small frozen backbone per keras-hub family, run compiled (jit="auto", every node that does
work compiled, min_cluster_size 1) and on reference kernels (jit="off"), judged by the corpus
rules of tests/corpus.py against TF's results. XFAIL lists the backbones that cannot pass yet,
with the reason (strict: one that starts passing fails here and says so)."""

import pytest

from hlobridge.runtime.session import Session

from tests.corpus import Case, check_case
from tests.keras_checks import left_to_kernels
from tests.conftest import TESTS

SWEEP = TESTS / "keras_hub"
CASES = sorted(d.name for d in SWEEP.iterdir() if (d / "case.json").is_file()) if SWEEP.is_dir() else []
XFAIL: dict = {}  # backbone -> (modes, reason)


def _params():
    for name in CASES:
        backbone = name.removeprefix("keras_hub_")
        for jit in ("auto", "off"):
            modes, reason = XFAIL.get(backbone, ((), ""))
            marks = [pytest.mark.xfail(reason=reason, strict=True)] if jit in modes else []
            yield pytest.param(name, jit, marks=marks, id=f"{backbone}-{jit}")


@pytest.mark.parametrize("name,jit", list(_params()))
def test_keras_hub_backbone(name, jit):
    case = Case.load(SWEEP / name)
    options = dict(min_cluster_size=1) if jit == "auto" else {}
    session = Session(case.path / case.meta["graph_pb"], jit=jit, cache_dir=False, **options)
    check_case(case, session)
    if jit == "auto":
        left = [f"{node} ({op}): {code}" for node, op, code in left_to_kernels(session, case)]
        assert not left, f"{name}: ops left to reference kernels:\n  " + "\n  ".join(left)


def test_sweep_is_written():
    assert len(CASES) >= 20, f"tests/keras_hub holds {len(CASES)} cases: run tools/keras_hub_sweep.py"
    assert {"keras_hub_SwinTransformer", "keras_hub_Llama3", "keras_hub_Gemma"} <= set(CASES)
