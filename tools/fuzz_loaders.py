"""Fuzz what users load besides GraphDefs, and the command lines they type: no input may end in a
traceback, a crash, a hang or a memory blow-up (the sibling of tools/fuzz_graphs.py, with its
workers, limits and outcomes).

  --kind files   SavedModels and checkpoints (tests/data/saved_models) mutated by
                 tools/fuzz_file_mutators.py (saved_model.pb at the protobuf level; the index's
                 header and entries, its blocks with their CRCs fixed, its footer; raw bytes of
                 every file), each through one target:
                   load             load_saved_model(dir, jit="off"), then a run with zero feeds
                   session          Session(dir, jit="off")
                   compile          hlobridge-compile dir/ --emit stablehlo
                   read_checkpoint  read_checkpoint(dir or prefix)
                   restore          a RestoreV2 graph (the Saver's op) of the checkpoint's keys, run
                 (a TF1 SavedModel's load also runs its Saver's restore op: RestoreV2).
  --kind cli     hlobridge-compile, -explain and -opt with odd --input-shape, --inputs, --outputs,
                 -o, --signature, --iree-flag, other options and HLOBRIDGE_FLAGS values.

Outcomes as in fuzz_graphs.py: ok, error (an HlobridgeError, or a CLI's one-line `error:`,
argparse's included), and the defects exception, memory, hang, crash, bad_message. A defect's
mutant is written to OUT/defects/<id>_<target>/ (the files and job.json) to replay.

    nice -n 10 python tools/fuzz_loaders.py --kind files --seed 1 --count 5000 --workers 2 --out fuzz-files
    nice -n 10 python tools/fuzz_loaders.py --kind cli --seed 1 --count 2000 --workers 2 --out fuzz-cli
    python tools/fuzz_loaders.py --replay fuzz-files/defects/1_17_load
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from fuzz_file_mutators import DATA, make_cli_case, make_file_mutant
from fuzz_graphs import DEFECTS, Worker, _error_kind, _tail, _where, progress_line, run_cases, signature, worker_limits

TIMEOUTS = {"load": 30.0, "session": 30.0, "compile": 30.0, "read_checkpoint": 10.0, "restore": 30.0, "cli": 60.0}


# -- the worker -------------------------------------------------------------------------------
def _zero_feeds(model):
    """Zeros of each input's spec (unknown dims 1); None where no array can stand for one (a
    resource or variant dtype, a mutated shape of over 2^20 elements): then the model only loads."""
    import math
    import numpy as np
    from hlobridge import dtypes
    feeds = {}
    for key, spec in model.inputs.items():
        shape = [1 if d is None else d for d in (spec.shape if spec.shape is not None else ())]
        if spec.dtype in (dtypes.RESOURCE, dtypes.VARIANT) or math.prod(shape) > 1 << 20:
            return None
        dtype = np.dtype(spec.dtype)
        feeds[key] = np.full(shape, b"a", dtype=object) if dtype == np.object_ else np.zeros(shape, dtype)
    return feeds


def _restore_graph(prefix: str, keys: list):
    """A graph whose RestoreV2 reads `keys` [(name, DataType enum)] from `prefix`."""
    import numpy as np
    from hlobridge import dtypes
    from hlobridge.frontend.graph_builder import GraphBuilder
    b = GraphBuilder()
    p = b.const("prefix", np.array(prefix.encode(), dtype=object))
    names = b.const("names", np.array([k.encode() for k, _ in keys], dtype=object))
    slices = b.const("slices", np.array([b""] * len(keys), dtype=object))
    b.op("RestoreV2", [p, names, slices], name="restore", dtypes=[dtypes.from_enum(d) for _, d in keys])
    return b.graph_def


def _compile_argv(path: str, out_dir: str) -> list[str]:
    argv = [path, "-o", os.path.join(out_dir, "out.mlir"), "--emit", "stablehlo"]
    try:  # unknown dims: 2 (as a user would fix them), where the signature still reads
        from hlobridge.frontend.saved_model import SavedModelSource
        source = SavedModelSource(path)
        inputs, _ = source.signature(source.signature_name(None))
        for i in inputs:
            if i.spec.shape is not None and None in i.spec.shape:
                argv += ["--input-shape", f"{i.tensor}=" + ",".join(str(2 if d is None else d) for d in i.spec.shape)]
    except Exception:  # noqa: BLE001  (the CLI reports what is wrong)
        pass
    return argv


def _files_job(job: dict, out_dir: str) -> int:
    import hlobridge
    from hlobridge.cli import compile as compile_cli
    from hlobridge.cli.common import run_main
    target, path = job["target"], job["path"]
    if target == "load":
        model = hlobridge.load_saved_model(path, jit="off", cache_dir=False)
        feeds = _zero_feeds(model)
        if feeds is not None:
            model.run(feeds)
    elif target == "session":
        hlobridge.Session(path, jit="off", cache_dir=False)
    elif target == "compile":
        return run_main(compile_cli.PROG, compile_cli.main, _compile_argv(path, out_dir))
    elif target == "read_checkpoint":
        hlobridge.read_checkpoint(path)
    else:
        sess = hlobridge.Session(_restore_graph(path, job["keys"]), jit="off", cache_dir=False)
        sess.run([f"restore:{i}" for i in range(len(job["keys"]))])
    return 0


def _cli_job(job: dict, work: Path) -> int:
    from hlobridge import flags
    from hlobridge.cli import compile as compile_cli, explain as explain_cli, opt as opt_cli
    from hlobridge.cli.common import run_main
    cli = {"compile": compile_cli, "explain": explain_cli, "opt": opt_cli}[job["tool"]]
    argv = [a.format(tmp=work / "tmp", graph=work / "g.pbtxt", empty=work / "empty.pbtxt",
                     saved_model=DATA / "tf1_builder" / "saved_model") for a in job["argv"]]
    env = contextlib.nullcontext() if job["env_flags"] is None else flags.environment(job["env_flags"])
    with env:
        try:
            return run_main(cli.PROG, cli.main, argv)
        except SystemExit as e:  # argparse's usage error: exit status 2 and its one line
            return 2 if e.code == 2 else (e.code if isinstance(e.code, int) else 1)


def run_job(job: dict, work: Path) -> dict:
    """One job in this process: {"outcome": ok|error|exception|memory|bad_message, ...}."""
    from hlobridge.errors import HlobridgeError
    err = io.StringIO()
    try:
        with tempfile.TemporaryDirectory(dir=work) as out_dir, contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(err):
            if job["kind"] == "cli":
                (work / "tmp").mkdir(exist_ok=True)
                status = _cli_job(job, work)
                shutil.rmtree(work / "tmp", ignore_errors=True)
            else:
                try:
                    status = _files_job(job, out_dir)
                except HlobridgeError as e:
                    print(f"{job['target']}: error: {e}", file=sys.stderr)
                    status = 1
    except MemoryError:
        return {"outcome": "memory", "message": "MemoryError", "traceback": _tail(), "where": _where()}
    except BaseException as e:  # noqa: BLE001  (the defect being looked for)
        return {"outcome": "exception", "message": f"{type(e).__name__}: {str(e)[:300]}",
                "traceback": _tail(), "where": _where()}
    if status == 0:
        return {"outcome": "ok"}
    text = err.getvalue()
    lines = [ln for ln in text.splitlines() if "error: " in ln]
    if not lines or "Traceback" in text or not lines[0].split("error: ", 1)[1].strip():
        return {"outcome": "bad_message", "message": text[-500:]}
    return {"outcome": "error", "message": lines[0][:300]}


def _small_graph(path: Path) -> None:
    import numpy as np
    from hlobridge.frontend.graph_builder import GraphBuilder
    from hlobridge.frontend.graphdef import write_graphdef
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (None, 3))
    w = b.const("w", np.array([1.0, -2.0, 0.5], np.float32))
    b.op("Relu", [b.op("Mul", [x, w], name="mul", T=np.float32)], name="y", T=np.float32)
    write_graphdef(b.graph_def, path)


def worker_main(memory_mb: int) -> None:
    """Jobs (JSON lines) from stdin, answers on the protocol fd; stdout/stderr to /dev/null."""
    answer = worker_limits(memory_mb)
    import hlobridge.cli.compile, hlobridge.cli.explain, hlobridge.cli.opt  # noqa: E401,F401
    work = Path(tempfile.mkdtemp(prefix="hlobridge-fuzz-worker-"))
    _small_graph(work / "g.pbtxt")
    (work / "empty.pbtxt").write_bytes(b"")
    os.chdir(work)  # (a relative -o lands here, not in the checkout)
    answer.write("ready\n")
    answer.flush()
    for line in sys.stdin:
        answer.write(json.dumps(run_job(json.loads(line), work)) + "\n")
        answer.flush()


# -- the run ------------------------------------------------------------------------------------
def _checkpoint_keys(name: str) -> list:
    from hlobridge.frontend.tensor_bundle import BundleReader
    reader = BundleReader(DATA / name / "ckpt" / name)
    return [(k, reader.entry(k).dtype) for k in reader.keys()]


def _jobs(kind: str, seed: int, index: int, folder: Path, keys: dict) -> tuple[str, list]:
    """(description, jobs) of mutant or command line `index`, its files written under `folder`."""
    if kind == "cli":
        c = make_cli_case(seed, index)
        return c.describe(), [{"id": c.id, "kind": "cli", "target": "cli", "tool": c.tool, "argv": c.argv,
                               "env_flags": c.env_flags, "describe": c.describe()}]
    m = make_file_mutant(seed, index)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    path = m.write(folder)
    jobs = []
    for target in m.targets:
        job = {"id": m.id, "kind": "files", "target": target, "path": str(path), "describe": m.describe()}
        if target == "restore":
            job["keys"] = keys.setdefault(m.name, _checkpoint_keys(m.name))
        jobs.append(job)
    return m.describe(), jobs


def _save(job: dict, result: dict, out: Path) -> Path:
    d = out / f"{job['id']}_{job['target']}"
    if d.exists():
        shutil.rmtree(d)
    if job["kind"] == "files":
        src = Path(job["path"]) if Path(job["path"]).is_dir() else Path(job["path"]).parent
        shutil.copytree(src, d / "files")
        rel = Path(job["path"]).relative_to(src)
        job = dict(job, path=str(Path("files") / rel))
    d.mkdir(parents=True, exist_ok=True)
    (d / "job.json").write_text(json.dumps({"job": job, "result": result}, indent=1) + "\n")
    return d


def fuzz(kind: str, seed: int, count: int, *, start: int = 0, workers: int = 1, memory_mb: int = 4096,
         timeout_scale: float = 1.0, out: Path | None = None, progress=None) -> dict:
    """Run cases start..start+count-1 of `seed`; returns the summary (counts and defects)."""
    tmp = Path(tempfile.mkdtemp(prefix="hlobridge-fuzz-loaders-"))
    pool = [Worker(memory_mb, str(tmp / "cache"), script=__file__) for _ in range(workers)]
    counts, per_target = collections.Counter(), collections.defaultdict(collections.Counter)
    defects, errors, keys, done = [], collections.Counter(), {}, 0

    def run_case(k: int, index: int):
        """(description, [(job, result)]) of case `index` on worker k; or the mutator's own error."""
        try:
            describe, jobs = _jobs(kind, seed, index, tmp / f"w{k}" / "m", keys)
        except Exception as e:  # noqa: BLE001  (a mutator's own bug: counted, the run goes on)
            return e
        return describe, [(job, pool[k].run(job, TIMEOUTS[job["target"]] * timeout_scale)) for job in jobs]

    def record(index: int, case):
        nonlocal done
        done += 1
        if isinstance(case, Exception):
            counts["mutator_failed"] += 1
            print(f"mutant {index}: the mutator failed: {type(case).__name__}: {case}", file=sys.stderr)
            return
        describe, results = case
        for job, r in results:
            per_target[job["target"] if kind == "files" else job["tool"]][r["outcome"]] += 1
            counts[r["outcome"]] += 1
            if r["outcome"] in DEFECTS:
                rec = {"id": job["id"], "index": index, "tool": job["target"], "mutation": describe, **r,
                       "signature": signature(job["target"], r)}
                if out is not None:
                    rec["saved"] = str(_save(job, r, out / "defects"))
                defects.append(rec)
            elif r["outcome"] == "error":
                errors[_error_kind(r["message"])] += 1
        if progress:
            progress(done, counts)

    run_cases(range(start, start + count), pool, tmp, run_case, record)
    defects.sort(key=lambda d: (d["index"], d["tool"]))
    summary = {"kind": kind, "seed": seed, "start": start, "count": count, "outcomes": dict(counts),
               "targets": {t: dict(c) for t, c in sorted(per_target.items())},
               "errors": dict(errors.most_common(40)),
               "defect_classes": dict(collections.Counter(d["signature"] for d in defects).most_common()),
               "defects": defects}
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def replay(folders, memory_mb: int = 4096) -> dict:
    """Run saved defect folders in one fresh worker: {folder name: result}."""
    with tempfile.TemporaryDirectory(prefix="hlobridge-fuzz-") as tmp:
        w = Worker(memory_mb, tmp, script=__file__)
        try:
            results = {}
            for f in map(Path, folders):
                job = json.loads((f / "job.json").read_text())["job"]
                if job["kind"] == "files":
                    job = dict(job, path=str((f / job["path"]).resolve()))
                results[f.name] = w.run(job, TIMEOUTS[job["target"]] * 4)
            return results
        finally:
            w.stop()


def format_summary(s: dict) -> str:
    lines = [f"{s['kind']} seed {s['seed']}, cases {s['start']}..{s['start'] + s['count'] - 1}: " +
             ", ".join(f"{k} {v}" for k, v in sorted(s["outcomes"].items()))]
    for t, c in s["targets"].items():
        lines.append(f"  {t}: " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
    if s["defect_classes"]:
        lines.append(f"{len(s['defects'])} defect(s) in {len(s['defect_classes'])} class(es):")
        for sig, n in s["defect_classes"].items():
            d = next(d for d in s["defects"] if d["signature"] == sig)
            lines.append(f"  {n:4d}x {sig}\n        {d['message'][:200]}\n        e.g. {d['id']}: {d['mutation'][:200]}")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kind", choices=("files", "cli"), default="files")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--count", type=int, default=200)
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--memory-mb", type=int, default=4096, help="RLIMIT_AS per worker (default 4096)")
    p.add_argument("--timeout-scale", type=float, default=1.0, help="multiply every per-job time limit")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--replay", type=Path, nargs="+", default=None)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker_main(args.memory_mb)
        return 0
    if args.replay:
        print(json.dumps(replay(args.replay, args.memory_mb), indent=1))
        return 0
    t0 = time.time()
    progress = progress_line(args.count, t0)
    s = fuzz(args.kind, args.seed, args.count, start=args.start, workers=args.workers, memory_mb=args.memory_mb,
             timeout_scale=args.timeout_scale, out=args.out, progress=progress)
    print(format_summary(s))
    print(f"{time.time() - t0:.0f} s")
    return 1 if s["defects"] else 0


if __name__ == "__main__":
    sys.exit(main())
