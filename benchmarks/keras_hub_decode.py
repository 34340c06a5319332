"""Greedy text generation with a keras-hub causal LM's KV-cached decode step through hlobridge,
against TensorFlow's tokens and speeds (issue 30, part 2).

    .tfvenv/bin/python tools/keras_hub_decode.py --arch llama3 --out tests/data/saved_models/llama3_decode
    python benchmarks/keras_hub_decode.py tests/data/saved_models/llama3_decode tests/data/saved_models/gemma_decode

Each directory holds the `decode_step` SavedModel signature and TF's reference.json. hlobridge
compiles the signature whole with `hlobridge-compile dir/saved_model --signature decode_step`
(inputs and outputs named by the signature's keys), then runs the loop of
tools/keras_hub_decode.py: the prompt one token at a time, then 32 argmax tokens. The cache is
the compiled call's own output, handed back as a DeviceArray: it never comes to the host; only
the [1, vocabulary] logits do, for the argmax. With --tf, TensorFlow's eager and jit_compile
loops run in a .tfvenv subprocess between hlobridge's rounds (A/B interleaved), each timing
only the 32 generated tokens, as hlobridge's does.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from hlobridge import runtime
from hlobridge.cli import compile as compile_cli
from hlobridge.runtime.host import to_host

ROOT = Path(__file__).resolve().parent.parent


def compile_decode_step(model_dir: Path, out: Path) -> None:
    """The user's command: hlobridge-compile of the SavedModel's decode_step signature."""
    code = compile_cli.main([str(model_dir / "saved_model"), "-o", str(out), "--signature", "decode_step"])
    if code:
        raise SystemExit(f"hlobridge-compile failed for {model_dir}")


def generate(step, prompt, new_tokens, cache_shape):
    """(tokens, seconds for the generated tokens), the cache kept on the device between calls."""
    feeds = {"cache": np.zeros(cache_shape, np.float32)}
    names, outs = step.input_names, step.output_names

    def call(token, index):
        feeds.update(token=np.array([[token]], np.int32), index=np.int32(index))
        results = dict(zip(outs, step.call_device(*[feeds[n] for n in names])))
        feeds["cache"] = results["cache"]  # a DeviceArray: stays on the device
        return to_host(results["logits"])
    for i, t in enumerate(prompt):
        logits = call(t, i)
    tokens, start = list(prompt), time.perf_counter()
    for _ in range(new_tokens):
        tokens.append(int(np.argmax(logits[0])))
        logits = call(tokens[-1], len(tokens) - 1)
    return tokens[len(prompt):], time.perf_counter() - start


def tf_round(arch: str, tf_python: str) -> dict:
    out = subprocess.run([tf_python, str(ROOT / "tools" / "keras_hub_decode.py"), "--arch", arch, "--time-only"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("models", nargs="+", type=Path, help="directories written by tools/keras_hub_decode.py")
    p.add_argument("--device", default="cpu", help="hlobridge's device (default cpu: IREE local-sync)")
    p.add_argument("--repeat", type=int, default=3, help="rounds (default 3); medians are reported")
    p.add_argument("--tf", action="store_true", help="interleave TensorFlow's eager and jit_compile rounds")
    p.add_argument("--tf-python", default=os.environ.get("HLOBRIDGE_TF_PYTHON", str(ROOT / ".tfvenv/bin/python")))
    args = p.parse_args(argv)
    rows = []
    for model_dir in args.models:
        ref = json.loads((model_dir / "reference.json").read_text())
        with tempfile.TemporaryDirectory() as tmp:
            vmfb = Path(tmp) / "decode_step.vmfb"
            compile_decode_step(model_dir, vmfb)
            step = runtime.load(str(vmfb), device=args.device).main
            generate(step, ref["prompt"], 2, ref["cache_shape"])  # warm up
            ours, theirs = [], {"eager": [], "jit_compile": []}
            for _ in range(args.repeat):
                tokens, seconds = generate(step, ref["prompt"], len(ref["tokens"]), ref["cache_shape"])
                if tokens != ref["tokens"]:
                    raise SystemExit(f"{model_dir}: hlobridge's tokens {tokens} differ from TF's {ref['tokens']}")
                ours.append(len(tokens) / seconds)
                if args.tf:
                    t = tf_round(ref["arch"], args.tf_python)
                    for k in theirs:
                        theirs[k].append(t[k])
        row = {"model": ref["arch"], "tokens_equal_tf": True, "hlobridge": float(np.median(ours))}
        row.update({k: float(np.median(v)) for k, v in theirs.items() if v})
        rows.append(row)
        print(json.dumps(row), flush=True)
    print("\n| model | tokens | hlobridge tok/s | TF eager tok/s | TF jit_compile tok/s |\n|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | = TF's 32 | {r['hlobridge']:.0f} | {r.get('eager', float('nan')):.0f} | "
              f"{r.get('jit_compile', float('nan')):.0f} |")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
