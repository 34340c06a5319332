"""Text generation with keras-hub causal LMs (issue 30, part 2): the KV-cached decode step of a
Llama-3-architecture and a Gemma-architecture model (small configurations, random weights),
saved as a SavedModel signature by tools/keras_hub_decode.py, compiled whole by
`hlobridge-compile dir --signature decode_step`, generates TensorFlow's 32 greedy tokens with
the cache a DeviceArray that stays on the device between steps."""

import warnings

import numpy as np
import pytest
from iree import runtime as rt

from benchmarks.keras_hub_decode import compile_decode_step, generate
from hlobridge import flags, runtime

from tests.conftest import TESTS

MODELS = TESTS / "data" / "saved_models"


@pytest.mark.parametrize("arch", ["llama3", "gemma"])
def test_greedy_decoding_gives_tensorflows_tokens(arch, tmp_path):
    import json
    model_dir = MODELS / f"{arch}_decode"
    ref = json.loads((model_dir / "reference.json").read_text())
    # Keras 3 writes the cache update (keras.ops.slice_update) as tf2xla's XlaDynamicUpdateSlice
    assert b"XlaDynamicUpdateSlice" in (model_dir / "saved_model" / "saved_model.pb").read_bytes()
    vmfb = tmp_path / "step.vmfb"
    compile_decode_step(model_dir, vmfb)
    step = runtime.load(str(vmfb)).main
    assert step.input_names == ["cache", "index", "token"] and step.output_names == ["cache", "logits"]
    tokens, _ = generate(step, ref["prompt"], len(ref["tokens"]), ref["cache_shape"])
    assert tokens == ref["tokens"]


def test_the_cache_stays_on_the_device(tmp_path):
    import json
    model_dir = MODELS / "llama3_decode"
    ref = json.loads((model_dir / "reference.json").read_text())
    vmfb = tmp_path / "step.vmfb"
    compile_decode_step(model_dir, vmfb)
    step = runtime.load(str(vmfb)).main
    cache = np.zeros(ref["cache_shape"], np.float32)
    for i in range(3):
        cache, logits = step.call_device(cache, np.int32(i), np.array([[5]], np.int32))
        assert isinstance(cache, rt.DeviceArray) and tuple(logits.shape) == (1, 128)


def test_keras_hubs_own_generate_loop_compiles_whole_and_gives_tensorflows_tokens(tmp_path):
    """keras-hub's generate_step (its tf.while_loop over call_with_cache) as one signature: the
    variables the loop carries are read before it (passes/graph/hoist_loop_reads.py), the
    token slice at the loop's index is a dynamic_slice, and the whole signature is one cluster,
    with the While inside; hlobridge-compile compiles it too. The hoisting is opt-in
    (HLOBRIDGE_FLAGS=--hoist-loop-reads)."""
    import json
    model_dir = MODELS / "llama3_decode"
    ref = json.loads((model_dir / "reference.json").read_text())
    p, n = len(ref["prompt"]), len(ref["tokens"])
    ids, mask = np.zeros([1, p + n], np.int32), np.zeros([1, p + n], bool)
    ids[0, :p], mask[0, :p] = ref["prompt"], True
    feeds = {"token_ids": ids, "padding_mask": mask}
    with flags.environment("--hoist-loop-reads"):
        _generate_compiles_whole(model_dir, ref, feeds, tmp_path)


def _generate_compiles_whole(model_dir, ref, feeds, tmp_path):
    import hlobridge
    from hlobridge.cli import compile as compile_cli
    p = len(ref["prompt"])
    model = hlobridge.load_saved_model(model_dir / "saved_model", signature="generate", jit="auto", cache_dir=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a cluster that falls back to kernels warns
        out = model.run(feeds)
    assert out["token_ids"][0, p:].tolist() == ref["tokens"] and out["padding_mask"].all()
    session = model.session
    plan = session.clustering([io.tensor for io in model._outputs],
                              {io.tensor: feeds[io.key] for io in model._inputs})
    loops = [n for n, node in session.graph.nodes.items() if node.op == "While"]
    assert loops and all(n in plan.cluster_of for n in loops)
    vmfb = tmp_path / "generate.vmfb"
    assert compile_cli.main([str(model_dir / "saved_model"), "-o", str(vmfb), "--signature", "generate"]) == 0
    got = runtime.load(str(vmfb)).run(feeds)
    assert got["token_ids"][0, p:].tolist() == ref["tokens"]
