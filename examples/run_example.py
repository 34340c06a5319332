"""The main job, end to end: compile a TensorFlow graph with hlobridge-compile, run it, check it.

    python examples/run_example.py [--device cpu|cuda] [--target llvm-cpu|cuda]

Uses the bundled frozen conv net (examples/cnn_infer_bn, written by TensorFlow 2.21)
and compares the outputs with the numbers TensorFlow computed for the same images.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import hlobridge

HERE = Path(__file__).parent / "cnn_infer_bn"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--target", default="llvm-cpu")
    args = p.parse_args()
    case = json.loads((HERE / "case.json").read_text())
    data = np.load(HERE / "data.npz")
    run = case["runs"][0]
    images = data[run["feeds"]["images:0"]]
    vmfb = Path(tempfile.mkdtemp()) / "model.vmfb"
    cmd = [str(Path(sys.executable).parent / "hlobridge-compile"), str(HERE / "graph.pbtxt"), "-o", str(vmfb),
           "--target", args.target, "--input-shape", f"images:0={','.join(map(str, images.shape))}"]
    shown = ["hlobridge-compile", "examples/cnn_infer_bn/graph.pbtxt", "-o", "model.vmfb", *cmd[4:]]
    print("$", " ".join(shown), flush=True)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    print(f"compiled in {time.perf_counter() - t0:.2f} s")

    m = hlobridge.runtime.load(vmfb, device=args.device)
    print(f"inputs {m.input_names} -> outputs {m.output_names}")
    logits, probs = m.main(images)
    tol = case["suggested_tolerance"]
    ok = True
    for name, got in zip(m.output_names, (logits, probs)):
        want = data[run["expected"][name]]
        err = np.max(np.abs(got - want))
        match = np.allclose(got, want, rtol=tol["rtol"], atol=tol["atol"])
        ok &= match
        print(f"{case['output_names'][name]:>6} ({name}): shape {got.shape}, max |hlobridge - TensorFlow| "
              f"= {err:.2e} -> {'matches' if match else 'DIFFERS'}")
    print("predicted classes:", probs.argmax(axis=1).tolist())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
