#!/usr/bin/env python3
"""Write a keras-hub causal LM's KV-cached decode step as a SavedModel signature, with
TensorFlow's greedy tokens and its eager / jit_compile speeds (issue 30, part 2).

    .tfvenv/bin/python tools/keras_hub_decode.py --arch llama3 --out tests/data/saved_models/llama3_decode
    .tfvenv/bin/python tools/keras_hub_decode.py --arch gemma --out tests/data/saved_models/gemma_decode

The model is a small configuration of the architecture with random weights (seeded). The
signature `decode_step(token int32[1, 1], cache float32[...], index int32[])` is keras-hub's own
`CausalLM.call_with_cache` (what its `generate()` runs per token): it returns the next-token
`logits` [1, vocabulary] and the updated `cache`, which Keras writes with
`keras.ops.slice_update`, i.e. TF's XlaDynamicUpdateSlice. The greedy loop feeds the prompt one
token at a time, then 32 argmax tokens; `reference.json` holds the prompt, TF's tokens (the
jit_compile run's; the eager run must agree) and TF's tokens/s in both modes on this machine.
benchmarks/keras_hub_decode.py runs the same loop through hlobridge.
"""

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
import keras_hub  # noqa: E402

VOCAB, MAX_LEN, NEW_TOKENS = 128, 48, 32
PROMPT = [1, 17, 42, 99, 7, 100, 3, 64]


def _llama3():
    backbone = keras_hub.models.Llama3Backbone(vocabulary_size=VOCAB, num_layers=2, num_query_heads=4,
                                               hidden_dim=32, intermediate_dim=64, num_key_value_heads=2)
    return keras_hub.models.Llama3CausalLM(backbone=backbone, preprocessor=None)


def _gemma():
    backbone = keras_hub.models.GemmaBackbone(vocabulary_size=VOCAB, num_layers=2, num_query_heads=4,
                                              num_key_value_heads=1, hidden_dim=32, intermediate_dim=64,
                                              head_dim=8)
    return keras_hub.models.GemmaCausalLM(backbone=backbone, preprocessor=None)


ARCHS = {"llama3": _llama3, "gemma": _gemma}
# Weight seeds: Gemma ties its output to its embedding, and with most seeds a small random one
# repeats one token; seed 2's tokens change along the 32.
SEEDS = {"llama3": 30, "gemma": 2}


def cache_shape(lm) -> list[int]:
    """keras-hub's cache: [batch, layers, 2 (key, value), max length, kv heads, head dim]."""
    b = lm.backbone
    head_dim = getattr(b, "head_dim", None) or b.hidden_dim // b.num_query_heads
    return [1, b.num_layers, 2, MAX_LEN, b.num_key_value_heads, head_dim]


class DecodeStep(tf.Module):
    """One token through keras-hub's call_with_cache: the SavedModel's `decode_step` signature;
    and keras-hub's whole greedy `generate_step` (its tf.while_loop over call_with_cache) as the
    `generate` signature: token_ids and padding_mask [1, prompt + 32] in, the same out."""

    def __init__(self, lm):
        super().__init__()
        self.weights = list(lm.weights)  # the variables alone: tracking the Keras model would save its traces too
        def step(token, cache, index):
            logits, _, cache = lm.call_with_cache(token, cache, index)
            return {"logits": logits[:, -1, :], "cache": cache}
        self.step = tf.function(step, input_signature=[
            tf.TensorSpec([1, 1], tf.int32, name="token"), tf.TensorSpec(cache_shape(lm), tf.float32, name="cache"),
            tf.TensorSpec([], tf.int32, name="index")])

        def generate(token_ids, padding_mask):
            out = lm.generate_step({"token_ids": token_ids, "padding_mask": padding_mask}, stop_token_ids=None)
            return {"token_ids": out["token_ids"], "padding_mask": out["padding_mask"]}
        length = len(PROMPT) + NEW_TOKENS
        self.generate = tf.function(generate, input_signature=[
            tf.TensorSpec([1, length], tf.int32, name="token_ids"), tf.TensorSpec([1, length], tf.bool,
                                                                                  name="padding_mask")])


def greedy(step, shape, prompt=PROMPT, new_tokens=NEW_TOKENS):
    """(tokens, seconds for the generated tokens): the prompt fed one token at a time, then argmax."""
    cache = tf.zeros(shape, tf.float32)
    for i, t in enumerate(prompt):
        logits, cache = step(tf.constant([[t]], tf.int32), cache, tf.constant(i, tf.int32))
    tokens, start = list(prompt), time.perf_counter()
    for _ in range(new_tokens):
        nxt = int(np.argmax(logits.numpy()[0]))
        tokens.append(nxt)
        logits, cache = step(tf.constant([[nxt]], tf.int32), cache, tf.constant(len(tokens) - 1, tf.int32))
    return tokens[len(prompt):], time.perf_counter() - start


def prompt_arrays():
    """The `generate` signature's inputs: the prompt padded to prompt + 32, and its mask."""
    length = len(PROMPT) + NEW_TOKENS
    ids, mask = np.zeros([1, length], np.int32), np.zeros([1, length], bool)
    ids[0, :len(PROMPT)], mask[0, :len(PROMPT)] = PROMPT, True
    return ids, mask


def time_tf(lm) -> dict:
    """TF's greedy tokens (jit_compile's; eager must agree) and tokens/s of both loops."""
    def eager(token, cache, index):
        logits, _, cache = lm.call_with_cache(token, cache, index)
        return logits[:, -1, :], cache
    jit = tf.function(eager, jit_compile=True)
    shape = cache_shape(lm)
    greedy(jit, shape, new_tokens=2)  # compile first
    want, jit_s = greedy(jit, shape)
    got, eager_s = greedy(eager, shape)
    assert got == want, f"eager {got} != jit_compile {want}"
    return {"tokens": want, "eager": NEW_TOKENS / eager_s, "jit_compile": NEW_TOKENS / jit_s}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--arch", choices=sorted(ARCHS), required=True)
    p.add_argument("--out", help="the directory to write: saved_model/ and reference.json")
    p.add_argument("--time-only", action="store_true",
                   help="rebuild the model (same seed), time TF's eager and jit_compile loops once, print JSON "
                        "(benchmarks/keras_hub_decode.py --tf)")
    args = p.parse_args(argv)
    keras.utils.set_random_seed(SEEDS[args.arch])
    lm = ARCHS[args.arch]()
    lm.compile(sampler="greedy")  # (the default sampler captures a seed variable the signature would need)
    if args.time_only:
        print(json.dumps(time_tf(lm)))
        return
    module = DecodeStep(lm)
    out = Path(args.out)
    tf.saved_model.save(module, str(out / "saved_model"),
                        signatures={"decode_step": module.step, "generate": module.generate})

    timing = time_tf(lm)
    ids, mask = prompt_arrays()
    generated = module.generate(ids, mask)["token_ids"].numpy()[0, len(PROMPT):].tolist()
    assert generated == timing["tokens"], f"generate() {generated} != the step loop's {timing['tokens']}"
    ref = {"arch": args.arch, "keras_hub": keras_hub.__version__, "tensorflow": tf.__version__,
           "signature": "decode_step", "cache_shape": cache_shape(lm), "prompt": PROMPT,
           "tokens": timing.pop("tokens"), "tf_tokens_per_s": timing}
    (out / "reference.json").write_text(json.dumps(ref, indent=1) + "\n")
    print(json.dumps(ref))


if __name__ == "__main__":
    main()
