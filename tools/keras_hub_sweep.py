#!/usr/bin/env python3
"""The keras-hub sweep (issue 30, part 3): one small configuration per keras-hub backbone class
in BACKBONES, random seeded weights, frozen, with TensorFlow's result, written in the corpus
format to tests/keras_hub/ (graph.pb only), as tools/keras_sweep.py writes keras.layers.

    .tfvenv/bin/python tools/keras_hub_sweep.py                  # every backbone in BACKBONES
    .tfvenv/bin/python tools/keras_hub_sweep.py SwinTransformer  # some
    .tfvenv/bin/python tools/keras_hub_sweep.py --check          # which backbone classes are not swept

Each backbone is called in a tf.function with training=False on a batch of 2 (token ids of length
8 with a padding mask whose second row ends in padding, or 32x32 images), frozen with
convert_variables_to_constants_v2 (conformance_cases.registry.frozen_graph) and run once in TF in
the reference environment by make_conformance_corpus.record. keras-hub needs keras-hub 0.32 in
.tfvenv (pip install --no-deps keras-hub tokenizers kagglehub kagglesdk regex, so that pip keeps
tensorflow-cpu as it is). tests/e2e/test_keras_hub_models.py runs every case under jit="auto"
(every node compiled) and jit="off". `--check` lists the keras-hub backbone classes that are not
in BACKBONES: the sweep covers the common families, not all 78.
"""

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
# tf_corpus sets the reference environment before it imports TensorFlow: import it first.
import tf_corpus  # noqa: F401,E402

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from conformance_cases.models import keras_seed  # noqa: E402
from conformance_cases.registry import TOL_MODEL, Built, CaseDef, frozen_graph  # noqa: E402
from keras_sweep import write_cases  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "tests" / "keras_hub"
STYLE = "keras-hub backbone (small config, random weights) in a tf.function (training=False), frozen"
VOCAB, SEQ, IMAGE = 64, 8, (32, 32, 3)
MAX_BYTES = 320 * 1024  # a graph.pb: keras-hub's graphs are 1-3k nodes with long names (weights are small)
TEXT = dict(vocabulary_size=VOCAB, num_layers=2, hidden_dim=16, intermediate_dim=32)
POSITIONS = dict(max_sequence_length=16)  # (a 512-row position table would be most of the file)
GQA = dict(TEXT, num_query_heads=4, num_key_value_heads=2)

# backbone class (without "Backbone") -> its constructor's arguments
BACKBONES = {
    "Bert": dict(TEXT, **POSITIONS, num_heads=2),
    "Roberta": dict(TEXT, **POSITIONS, num_heads=2),
    "DistilBert": dict(TEXT, **POSITIONS, num_heads=2),
    "Albert": dict(TEXT, **POSITIONS, num_heads=2, embedding_dim=8),
    "DebertaV3": dict(TEXT, **POSITIONS, num_heads=2, bucket_size=8),
    "XLNet": dict(TEXT, num_heads=2),
    "FNet": dict(TEXT, **POSITIONS),
    "GPT2": dict(TEXT, **POSITIONS, num_heads=2),
    "OPT": dict(TEXT, **POSITIONS, num_heads=2),
    "Bloom": dict(TEXT, num_heads=2),
    "GPTNeoX": dict(TEXT, **POSITIONS, num_heads=2),
    "Llama3": GQA,
    "Mistral": GQA,
    "Qwen": GQA,
    "Qwen3": dict(GQA, head_dim=4),
    "Phi3": GQA,
    "Gemma": dict(GQA, head_dim=4),
    "ViT": dict(image_shape=IMAGE, patch_size=8, num_layers=2, num_heads=2, hidden_dim=16, mlp_dim=32),
    "SwinTransformer": dict(image_shape=IMAGE, embed_dim=8, depths=[2, 2], num_heads=[2, 2], window_size=4),
    "DINOV2": dict(patch_size=8, num_layers=2, hidden_dim=16, num_heads=2, intermediate_dim=32,
                   image_shape=IMAGE),
    "VGG": dict(stackwise_num_repeats=[1, 1], stackwise_num_filters=[8, 16], image_shape=IMAGE),
}


def case_name(backbone: str) -> str:
    return f"keras_hub_{backbone}"


def _feed(name: str, shape, dtype, rng):
    """Token ids below the vocabulary, a padding mask whose second row ends in padding, zeros
    for segment ids, normal floats for images."""
    if dtype.startswith("float"):
        return rng.standard_normal(shape).astype(np.float32)
    if "mask" in name:
        mask = np.ones(shape, bool if dtype == "bool" else np.int32)
        mask[1, -3:] = 0
        return mask
    if "segment" in name:
        return np.zeros(shape, np.int32)
    return rng.integers(1, VOCAB, shape).astype(np.int32)


def builder(backbone: str):
    def build(rng) -> Built:
        keras = keras_seed(rng)
        import keras_hub
        model = getattr(keras_hub.models, f"{backbone}Backbone")(**BACKBONES[backbone])
        inputs = model.inputs if isinstance(model.input, (list, dict)) or len(model.inputs) > 1 else [model.input]
        names = [x.name.split(":")[0].split("/")[0] for x in inputs]
        shapes = [(2, *[d if d is not None else SEQ for d in x.shape[1:]]) for x in inputs]
        feeds = [_feed(n, s, str(x.dtype), rng) for n, s, x in zip(names, shapes, inputs)]
        specs = [tf.TensorSpec([None, *s[1:]], tf.as_dtype(f.dtype), name=n) for n, s, f in zip(names, shapes, feeds)]
        as_dict = isinstance(model.input, dict) or len(inputs) > 1

        def call(*xs):
            out = model(dict(zip(names, xs)) if as_dict else xs[0], training=False)
            return out if isinstance(out, dict) else {"output": out}
        graph_def, outputs, _ = frozen_graph(call, *specs)
        keras.backend.clear_session()
        return Built(graph_def, outputs, [("batch2", {f"{n}:0": f for n, f in zip(names, feeds)})])
    return build


def case_def(backbone: str) -> CaseDef:
    config = ", ".join(f"{k}={v}" for k, v in BACKBONES[backbone].items())
    return CaseDef(case_name(backbone), "keras_hub", f"keras_hub.models.{backbone}Backbone({config}), frozen.",
                   STYLE, TOL_MODEL, builder(backbone))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("backbones", nargs="*", help="backbone names without 'Backbone' (default: all of BACKBONES)")
    p.add_argument("--out", default=str(DEFAULT_OUT))
    p.add_argument("--check", action="store_true", help="list the backbone classes the sweep does not cover")
    args = p.parse_args(argv)
    import keras_hub
    if args.check:
        every = sorted(m[:-len("Backbone")] for m in dir(keras_hub.models) if m.endswith("Backbone") and m != "Backbone")
        print(f"keras-hub {keras_hub.__version__}: {len(BACKBONES)} of {len(every)} backbones swept; not swept: "
              f"{', '.join(b for b in every if b not in BACKBONES)}")
        return 0
    write_cases(args.backbones or list(BACKBONES), case_def, Path(args.out), max_bytes=MAX_BYTES)
    return 0


if __name__ == "__main__":
    sys.exit(main())
