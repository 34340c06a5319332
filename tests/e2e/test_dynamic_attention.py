"""Keras attention layers over a `?` batch, data-tiled, match TensorFlow.

IREE 3.13 miscompiles a batched dot fed by a softmax with data tiling on (compile/iree.py);
a `?`-batch module keeps data tiling because such a dot's operands are behind barriers
(dialects/dynamic_shapes.py, BATCHED_DOT_BARRIERS). Without them these layers were wrong by up to
3.1 in a `Session(dynamic_dims="batch")` (AdditiveAttention 0.57, Dot 1.7)."""

import numpy as np
import pytest

import hlobridge
from tests.conftest import TESTS
from tests.corpus import Case, assert_matches


@pytest.mark.parametrize("layer", ["AdditiveAttention", "Attention", "Dot", "MultiHeadAttention"])
def test_attention_over_a_question_mark_batch_matches_tensorflow(layer):
    case = Case.load(TESTS / "keras_layers" / f"keras_layer_{layer}")
    sess = hlobridge.Session(case.graph_path, dynamic_dims="batch")
    for run in case.meta["runs"]:
        feeds = {k: case.array(v) for k, v in run["feeds"].items()}
        got = sess.run(list(run["expected"]), feeds)
        for (key, ref), value in zip(run["expected"].items(), got):
            assert_matches(np.asarray(value), case.array(ref), case.tolerance, f"{layer} {key}")
    assert any("?" in t for e in sess.compile_events for t in e.input_texts())  # one `?` module
