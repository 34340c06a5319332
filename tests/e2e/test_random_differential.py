"""Differential testing on random graphs (tests/random_graphs, written by
tools/make_random_graphs.py with TensorFlow): inference DAGs, v1 and v2 control flow and
training graphs (random MLP and conv stacks, tf.gradients, five optimizers), each run on a
hlobridge Session and judged against TensorFlow's results by the corpus rules of
tests/corpus.py, at each case's suggested tolerance.

Every case runs under jit="auto" (a cluster that fails to compile fails the case, as in
test_conformance.py); every tenth also under jit="off". Set
HLOBRIDGE_RANDOM_GRAPHS to a folder of generated cases to run those instead (the long run, see
docs/testing.md, "Differential testing").
"""

import gzip
import os
from pathlib import Path

import pytest

from hlobridge.frontend.proto import schema
from hlobridge.runtime.session import Session

from tests.corpus import Case, check_case
from tests.conftest import TESTS

CASES_DIR = Path(os.environ.get("HLOBRIDGE_RANDOM_GRAPHS", TESTS / "random_graphs"))
CASES = sorted(d.name for d in CASES_DIR.iterdir() if (d / "case.json").is_file()) if CASES_DIR.is_dir() else []
OFF_EVERY = 10

# Cases that fail for a known reason: name -> reason. Empty: every case passes.
KNOWN_FAILURES: dict = {}


def load_graph_def(case: Case):
    """The case's GraphDef: graph.pb, or graph.pb.gz in the committed (compacted) cases."""
    path = case.path / case.meta["graph_pb"]
    data = path.read_bytes()
    graph_def = schema.GraphDef()
    graph_def.ParseFromString(gzip.decompress(data) if path.suffix == ".gz" else data)
    return graph_def


def run_case(case: Case, jit: str) -> Session:
    train = case.meta["kind"] == "train"
    # Inference graphs are small: clusters of any size. Training graphs cluster as a user's
    # would (the default minimum of 4): the step is one cluster, and the init feeds and the
    # variable reads do not each compile a one-op cluster.
    session = Session(load_graph_def(case), jit=jit, cache_dir=False,
                      **({"min_cluster_size": 1} if jit == "auto" and not train else {}))
    check_case(case, session)
    return session


def _params():
    for i, name in enumerate(CASES):
        for jit in ("auto", "off") if i % OFF_EVERY == 0 else ("auto",):
            marks = [pytest.mark.xfail(reason=KNOWN_FAILURES[name], strict=True)] if name in KNOWN_FAILURES else []
            yield pytest.param(name, jit, id=f"{name}-{jit}", marks=marks)


@pytest.mark.parametrize("name, jit", list(_params()))
def test_random_graph(name, jit, executor):
    executor(CASES.index(name))  # every other case on the thread pool, however small
    run_case(Case.load(CASES_DIR / name), jit)


def test_committed_cases_mix():
    """The committed set keeps its mix: a quarter training graphs, a sixth control flow, both
    control-flow forms and both model kinds."""
    if "HLOBRIDGE_RANDOM_GRAPHS" in os.environ:
        pytest.skip("a generated set, not the committed one")
    families = [name.split("_", 1)[1] for name in CASES]
    assert len(CASES) >= 250
    assert sum(f.startswith("train") for f in families) >= 0.25 * len(CASES)
    assert sum(f.startswith("control_flow") for f in families) >= 0.15 * len(CASES)
    assert {"train_mlp", "train_conv", "control_flow_v1", "control_flow_v2", "inference"} <= set(families)
