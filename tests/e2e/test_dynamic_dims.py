"""One compiled module for every batch size and sequence length (issue 31, docs/dynamic_shapes.md):
corpus cases with `None` dims compile ONCE with no --input-shape and match TensorFlow at every
run's size."""

import pytest

from hlobridge.compile.driver import compile_graph
from tests.conftest import TESTS
from tests.corpus import Case, assert_matches

CASES = {  # case -> the dims its one module leaves dynamic
    "dynamic_batch": [(None, 8, 8, 3)],          # CNN: Conv2D, BN, depthwise, Flatten, Dense at batch 1, 3, 4, 8
    "dynamic_bert": [(None, None)],               # batch and sequence length: 5, 9, 16
    "dynamic_bert_ops": [(None, None)] * 3,       # modeling.py's raw ops: OneHot, Slice to seq, h[:, 0]
    "keras_conv_bn": [(None, 8, 8, 3)],
    "keras_attention_block": [(None, 5, 8)],
    "keras_mlp_gelu": [(None, 8)],                # batch 3, 1 and 0
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_module_matches_tensorflow_at_every_size(name):
    case = Case.load(TESTS / "conformance" / name)
    run0 = case.meta["runs"][0]
    model = compile_graph(case.graph_path, inputs=list(run0["feeds"]), outputs=list(run0["expected"]))
    assert [spec.shape for _, spec in model.lowered.signature.inputs] == CASES[name]
    module = model.load()
    sizes = set()
    for run in case.meta["runs"]:
        feeds = {k: case.array(v) for k, v in run["feeds"].items()}
        sizes.add(tuple(a.shape for a in feeds.values()))
        got = module.run(feeds)
        for key, ref in run["expected"].items():
            assert_matches(got[key], case.array(ref), case.tolerance, f"{name} {run.get('name')} {key}")
    assert len(sizes) == len(case.meta["runs"]) >= 2  # the same module, at every size
