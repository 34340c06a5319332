"""Fuzz hlobridge with mutated copies of real graphs: no input may end in a traceback, a crash,
a hang or a memory blow-up.

The corpus is every graph with a case.json in ../shared/graphs (HLOBRIDGE_SHARED_GRAPHS) and
tests/conformance. Mutant `index` of run `seed` is a deterministic function of (seed, index)
(tools/fuzz_mutators.py): a corpus graph, its text (.pbtxt) or binary (.pb) form, one to three
stacked mutations, and the tools it goes through:

  compile     hlobridge-compile --emit stablehlo (every mutant; 1 in 20 compiles a .vmfb instead)
  explain     hlobridge-explain (every mutant)
  session     Session(graph, jit="off").run(init, then the case's fetches) with random feeds for
              the graph's placeholders (half the mutants; 1 in 5 of those with jit="auto", and
              1 in 6 with one feed replaced by something malformed: a ragged list, None, ...)

Each (mutant, tool) is a job run by a persistent worker subprocess (hlobridge imported once)
under RLIMIT_AS (--memory-mb); the parent enforces --timeout per job and restarts a worker that
timed out or died. Outcomes: ok, error (an HlobridgeError, or a CLI's exit 1 with its message:
what a user should see), and the defects: exception (any other exception, with its traceback),
memory (MemoryError under the limit), hang (timed out), crash (the worker died: signal, abort).
Each defect's mutant is written to OUT/defects/<seed>_<index>_<tool>/ (graph + job.json), to
replay (--replay DIR) and to keep as a regression test (tests/e2e/fuzz_regressions/). A Session
run's JitFallbackWarning (a cluster IREE failed to compile) is not a defect but a finding to look
at: counted as jit_fallback, listed in the summary's jit_fallbacks and printed.

    python tools/fuzz_graphs.py --seed 0 --count 5000 --workers 2 --out fuzz-out
    python tools/fuzz_graphs.py --replay fuzz-out/defects/0_17_session_off
    python tools/fuzz_graphs.py --keep fuzz-out/defects/0_17_session_off NAME 'REGEX' [--open REASON]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings
from pathlib import Path

from fuzz_mutators import ROOT, Mutant, Seed, load_corpus, make_mutant

DEFECTS = ("exception", "memory", "hang", "crash", "bad_message")
CLEAN = ("ok", "error")


def job_for(m: Mutant, tool: str, path: Path) -> dict:
    """What a worker needs to run one tool on one mutant (and what job.json records)."""
    case = m.case.case
    feeds = case.get("feeds") or []
    fetches = [f["name"] if isinstance(f, dict) else f for f in case.get("fetches") or []]
    return {"id": m.id, "tool": tool, "graph": str(path), "describe": m.describe(),
            "kind": case.get("kind"), "feeds": feeds, "fetches": fetches,
            "init_op": case.get("init_op"), "train_op": case.get("train_op") if case.get("kind") == "train" else None,
            "loss": case.get("loss"), "feed_seed": f"{m.seed}:{m.index}", "feed_mutation": m.feed_mutation}


# -- the worker: runs jobs in-process, one JSON line in, one out --------------------------------
def _cli_argv(job: dict, out_dir: str) -> list[str]:
    tool = job["tool"]
    if tool == "explain":
        return [job["graph"]]
    argv = [job["graph"], "-o", os.path.join(out_dir, "out.vmfb" if tool == "compile_vmfb" else "out.mlir")]
    if tool == "compile":
        argv += ["--emit", "stablehlo"]
    inputs = job["feeds"] + (_variable_reads(job["graph"], job["loss"]) if job["kind"] == "train" else [])
    for f in inputs:
        argv += ["--input-shape", f"{f['name']}=" + ",".join(str(2 if d is None else d) for d in f["shape"])]
    if job["kind"] == "train":  # the loss, with the variables' reads as inputs (VarHandleOp never compiles)
        argv += ["--inputs", ",".join(f["name"] for f in inputs), "--outputs", job["loss"]]
    elif job["fetches"]:
        argv += ["--outputs", ",".join(job["fetches"])]
    return argv


def _variable_reads(path: str, loss: str) -> list[dict]:
    """The tensors a training graph reads its variables through (ReadVariableOp of a VarHandleOp,
    a VariableV2 itself), with their shapes: compiled as inputs, they cut the variables off."""
    from hlobridge.errors import HlobridgeError
    from hlobridge.frontend.load import load_graph
    try:
        graph = load_graph(path)
    except HlobridgeError:
        return []  # the CLI reports it
    loss = graph.nodes.get(loss.split(":")[0])
    reads, needed = [], graph.ancestors([loss.name]) if loss else set()
    for node in (graph.nodes[n] for n in sorted(needed)):
        var = node if node.op in ("VariableV2", "Variable") else \
            graph.nodes[node.inputs[0].node] if node.op == "ReadVariableOp" and node.inputs else None
        if var is not None and var.op in ("VariableV2", "Variable", "VarHandleOp") and \
                isinstance(var.attr("shape"), tuple) and None not in var.attr("shape"):
            reads.append({"name": f"{node.name}:0", "shape": list(var.attr("shape"))})
    return reads


def _feed_value(rng, dtype, shape):
    """Random data of a placeholder's declared dtype and shape (unknown dims: 2)."""
    import numpy as np
    from hlobridge import dtypes
    dims = [2 if d is None or d < 0 else d for d in (shape if shape is not None else (2,))]
    if int(np.prod(dims, dtype=np.float64)) > 1 << 20:
        dims = [2] * len(dims)  # a mutated huge shape: a small feed (and an error about its shape)
    if dtype in (dtypes.RESOURCE, dtypes.VARIANT) or np.dtype(dtype) == np.object_:
        return np.full(dims, b"s", dtype=object)
    dtype = np.dtype(dtype)
    if dtype.kind == "f" or dtype.kind == "V":
        return rng.standard_normal(dims).astype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(dims) + 1j).astype(dtype)
    if dtype.kind == "b":
        return rng.random(dims) < 0.5
    return rng.integers(0, 2, dims).astype(dtype)


def _mutate_feed(kind: str, value):
    import numpy as np
    return {"ragged": lambda: [[1.0, 2.0], [3.0]], "none": lambda: None, "string": lambda: "abc",
            "object": lambda: object(), "complex": lambda: value.astype(np.complex64) if value.dtype.kind in "biuf" else 1j,  # (text has no complex cast)
            "wrong_rank": lambda: value[None, ...], "scalar": lambda: np.float32(1),
            "huge_list": lambda: [2 ** 70] * 3, "nan": lambda: np.full_like(value, np.nan) if value.dtype.kind in "fc" else np.float32(np.nan),
            "non_contiguous": lambda: np.repeat(value, 2, axis=-1)[..., ::2] if value.ndim else value,
            "read_only": lambda: value.copy()}[kind]()


def _session_job(job: dict, cache_dir: str):
    import numpy as np
    import hlobridge
    rng = np.random.default_rng([int(x) for x in job["feed_seed"].split(":")])
    sess = hlobridge.Session(job["graph"], jit="auto" if job["tool"] == "session_auto" else "off",
                             device="cpu", cache_dir=cache_dir)
    graph = sess.graph
    feeds = {f"{name}:0": _feed_value(rng, graph.nodes[name].attr("dtype"), graph.nodes[name].attr("shape"))
             for name in graph.placeholders()}
    if job["feed_mutation"] and feeds:
        name = sorted(feeds)[0]
        feeds[name] = _mutate_feed(job["feed_mutation"], feeds[name])
        if job["feed_mutation"] == "read_only" and isinstance(feeds[name], np.ndarray):
            feeds[name].flags.writeable = False
    if job["init_op"] and job["init_op"] in graph.nodes:
        sess.run(job["init_op"])
    fetches = ([job["train_op"], job["loss"]] if job["train_op"] else []) + job["fetches"]
    sess.run(fetches, feeds)


def run_job(job: dict, cache_dir: str) -> dict:
    """Run one job in this process: {"outcome": ok|error|exception|memory|bad_message, ...}."""
    from hlobridge.cli import compile as compile_cli, explain as explain_cli
    from hlobridge.cli.common import run_main
    from hlobridge.errors import HlobridgeError, JitFallbackWarning
    err, fallbacks = io.StringIO(), []
    try:
        with tempfile.TemporaryDirectory() as out_dir, contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(err):
            if job["tool"].startswith("session"):
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", JitFallbackWarning)
                    try:
                        _session_job(job, cache_dir)
                    except HlobridgeError as e:
                        print(f"Session: error: {e}", file=sys.stderr)
                        status = 1
                    else:
                        status = 0
                fallbacks = [str(w.message)[:300] for w in caught if issubclass(w.category, JitFallbackWarning)]
            else:
                cli = explain_cli if job["tool"] == "explain" else compile_cli
                status = run_main(cli.PROG, cli.main, _cli_argv(job, out_dir))
    except MemoryError:
        return {"outcome": "memory", "message": "MemoryError", "traceback": _tail(), "where": _where()}
    except BaseException as e:  # noqa: BLE001  (everything else is the defect being looked for)
        return {"outcome": "exception", "message": f"{type(e).__name__}: {str(e)[:300]}",
                "traceback": _tail(), "where": _where()}
    found = {"fallback": fallbacks[0]} if fallbacks else {}  # a cluster IREE failed: a finding to look at
    if status == 0:
        return {"outcome": "ok", **found}
    lines = [line for line in err.getvalue().splitlines() if ": error: " in line]
    message = err.getvalue()[err.getvalue().find(lines[0]):] if lines else err.getvalue()
    if not lines or "Traceback" in message or not lines[0].split(": error: ", 1)[1].strip():
        return {"outcome": "bad_message", "message": message[-500:]}
    return {"outcome": "error", "message": message[:500], **found}


def _tail(frames: int = 6) -> str:
    return "".join(traceback.format_exc().splitlines(keepends=True)[-2 * frames - 1:])


def _where() -> str:
    """The innermost hlobridge frame of the exception being handled: 'path:line in function'."""
    tb = traceback.extract_tb(sys.exc_info()[2])
    own = [f for f in tb if "/hlobridge/" in f.filename or "/passes/" in f.filename or "/dialects/" in f.filename]
    f = (own or tb)[-1]
    path = f.filename.split("/hlobridge/")[-1] if "/hlobridge/" in f.filename else f.filename
    return f"{path}:{f.lineno} in {f.name}"


def worker_limits(memory_mb: int):
    """A worker's setup: RLIMIT_AS, no core files, stdout to /dev/null, warnings off; returns
    the protocol file (the original stdout) its answers go to."""
    import resource
    if memory_mb:
        resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    answer = os.fdopen(os.dup(1), "w")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    warnings.simplefilter("ignore")
    return answer


def worker_main(memory_mb: int) -> None:
    """Read jobs (JSON lines) from stdin, answer on the protocol fd; stdout/stderr go to /dev/null."""
    answer = worker_limits(memory_mb)
    import hlobridge.cli.compile, hlobridge.cli.explain  # noqa: E401,F401  (imported once, before any job)
    cache_dir = os.environ["HLOBRIDGE_CACHE_DIR"]
    answer.write("ready\n")
    answer.flush()
    for line in sys.stdin:
        result = run_job(json.loads(line), cache_dir)
        answer.write(json.dumps(result) + "\n")
        answer.flush()


class Worker:
    """A worker subprocess; `run` enforces the timeout and restarts the worker after a hang or crash."""

    def __init__(self, memory_mb: int, cache_dir: str, script: str = __file__):
        self.memory_mb, self.cache_dir, self.proc, self.script = memory_mb, cache_dir, None, script

    def _start(self):
        env = dict(os.environ, HLOBRIDGE_CACHE_DIR=self.cache_dir, PYTHONFAULTHANDLER="1")
        env.pop("HLOBRIDGE_FLAGS", None)
        self.proc = subprocess.Popen([sys.executable, self.script, "--worker", "--memory-mb", str(self.memory_mb)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env, cwd=ROOT, start_new_session=True)
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError(f"fuzz worker failed to start: {self.proc.stderr.read()[-2000:]}")

    def run(self, job: dict, timeout: float) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:  # timed out: kill the worker and its children (iree-compile)
            self.stop()
            return {"outcome": "hang", "message": f"no answer in {timeout:.0f} s"}
        line = self.proc.stdout.readline()
        if line:
            return json.loads(line)
        rc = self.proc.wait()  # end of file: the worker died
        stderr = self.proc.stderr.read()[-3000:]
        self.proc = None
        return {"outcome": "crash", "message": f"worker died (exit status {rc})", "traceback": stderr}

    def stop(self):
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, 9)
            except ProcessLookupError:
                pass
            self.proc.wait()
            self.proc = None


# -- the run ---------------------------------------------------------------------------------
TIMEOUTS = {"compile": 1.0, "explain": 1.0, "session_off": 2.0, "compile_vmfb": 4.0, "session_auto": 4.0}


def run_cases(indices, pool: list, tmp: Path, run_case, record) -> None:
    """The cases `indices`, one thread per worker of `pool`: each thread takes the next index,
    runs `run_case(k, index)` on its worker k and hands the result to `record(index, result)`,
    one record at a time (the tallies need no locks of their own); then the workers stopped
    and `tmp` removed."""
    todo, lock = iter(indices), threading.Lock()

    def drain(k: int):
        while True:
            with lock:
                index = next(todo, None)
            if index is None:
                return
            result = run_case(k, index)
            with lock:
                record(index, result)

    try:
        threads = [threading.Thread(target=drain, args=(k,)) for k in range(len(pool))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for w in pool:
            w.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def progress_line(total: int, t0: float):
    """A fuzz run's progress callback: one stderr line every 100 cases and at the end."""
    def progress(done: int, counts) -> None:
        if done % 100 == 0 or done == total:
            print(f"[{time.time() - t0:6.0f} s] {done}/{total} " +
                  ", ".join(f"{k} {v}" for k, v in sorted(counts.items())), file=sys.stderr, flush=True)
    return progress


def save_mutant(m: Mutant, tool: str, job: dict, result: dict, out: Path) -> Path:
    d = out / f"{m.id}_{tool}"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"graph.{m.fmt}").write_bytes(m.data)
    job = dict(job, graph=f"graph.{m.fmt}")
    (d / "job.json").write_text(json.dumps({"job": job, "result": result}, indent=1) + "\n")
    return d


def _error_kind(message: str) -> str:
    """A clean error's message without the tool, file and names: what kind of error it is."""
    text = message.split(": error: ", 1)[-1].split("\n")[0]
    text = re.sub(r"'[^']*'|\"[^\"]*\"|\S*/\S*|\d+", "_", text)
    return text[:70]


def signature(tool: str, result: dict) -> str:
    """A defect class: tool family, outcome, exception type and where it was raised."""
    kind = result["message"].split(":", 1)[0] if result["outcome"] == "exception" else ""
    return f"{tool.split('_')[0]} {result['outcome']} {kind} {result.get('where', '')}".strip()


def fuzz(seed: int, count: int, *, start: int = 0, workers: int = 1, memory_mb: int = 4096,
         timeout: float = 30.0, out: Path | None = None, corpus: list[Seed] | None = None,
         session_rate: float = 0.5, tools: set | None = None, progress=None) -> dict:
    """Run mutants start..start+count-1 of `seed`; returns the summary (counts and defects)."""
    corpus = corpus or load_corpus()
    tmp = Path(tempfile.mkdtemp(prefix="hlobridge-fuzz-"))
    pool = [Worker(memory_mb, str(tmp / "cache")) for _ in range(workers)]
    counts, per_tool = collections.Counter(), collections.defaultdict(collections.Counter)
    defects, done, errors, fallbacks = [], 0, collections.Counter(), []

    def one(k: int, index: int):
        worker = pool[k]
        m = make_mutant(seed, index, corpus, session_rate)
        path = tmp / f"w{k}" / f"graph.{m.fmt}"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(m.data)
        results = []
        for tool in m.tools:
            if tools and tool.split("_")[0] not in tools and tool not in tools:
                continue
            job = job_for(m, tool, path)
            results.append((m, tool, job, worker.run(job, timeout * TIMEOUTS[tool])))
        return results

    def record(index: int, results: list):
        nonlocal done
        worst = "ok"
        for m, tool, job, r in results:
            per_tool[tool][r["outcome"]] += 1
            if r.get("fallback"):  # JitFallbackWarning: not a defect, a finding (issue 33)
                per_tool[tool]["jit_fallback"] += 1
                fallbacks.append({"id": m.id, "tool": tool, "mutation": m.describe(), "message": r["fallback"]})
            if r["outcome"] in DEFECTS:
                worst = r["outcome"]
                rec = {"id": m.id, "index": m.index, "tool": tool, "mutation": m.describe(), **r,
                       "signature": signature(tool, r)}
                if out is not None:
                    rec["saved"] = str(save_mutant(m, tool, job, r, out / "defects"))
                defects.append(rec)
            elif r["outcome"] == "error":
                worst = "error" if worst == "ok" else worst
                errors[_error_kind(r["message"])] += 1
        counts[worst] += 1
        done += 1
        if progress:
            progress(done, counts)

    run_cases(range(start, start + count), pool, tmp, one, record)
    defects.sort(key=lambda d: (d["index"], d["tool"]))
    classes = collections.Counter(d["signature"] for d in defects)
    summary = {"seed": seed, "start": start, "count": count, "mutants": dict(counts),
               "jobs": {t: dict(c) for t, c in sorted(per_tool.items())},
               "errors": dict(errors.most_common()), "defect_classes": dict(classes.most_common()),
               "defects": defects, "jit_fallbacks": sorted(fallbacks, key=lambda f: f["id"])}
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def _saved_job(folder: Path) -> dict:
    job = json.loads((folder / "job.json").read_text())["job"]
    return dict(job, graph=str((folder / job["graph"]).resolve()))


def _saved_timeout(folder: Path, default: float) -> float:
    """A regression's own time limit (expect.timeout: a former hang need not wait the default)."""
    return json.loads((folder / "job.json").read_text()).get("expect", {}).get("timeout", default)


def replay_all(folders, memory_mb: int = 4096, timeout: float = 120.0) -> dict:
    """Run saved jobs (defect folders or regression tests) in one fresh worker: {folder name: result}."""
    with tempfile.TemporaryDirectory(prefix="hlobridge-fuzz-") as tmp:
        w = Worker(memory_mb, tmp)
        try:
            return {Path(f).name: w.run(_saved_job(Path(f)), _saved_timeout(Path(f), timeout)) for f in folders}
        finally:
            w.stop()


def keep(defect: Path, name: str, message: str, open_reason: str | None) -> Path:
    """Copy a defect folder into tests/e2e/fuzz_regressions/NAME with the error it should give."""
    saved = json.loads((defect / "job.json").read_text())
    dest = ROOT / "tests" / "e2e" / "fuzz_regressions" / name
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(defect / saved["job"]["graph"], dest / saved["job"]["graph"])
    result = saved["result"]
    expect = {"message": message, "found": f"{defect.name}: {saved['job']['describe']}",
              "defect": f"{result['message'][:200]} ({result.get('where', result['outcome'])})"}
    if open_reason:
        expect["open"] = open_reason
    (dest / "job.json").write_text(json.dumps({"job": saved["job"], "expect": expect}, indent=1) + "\n")
    return dest


def format_summary(s: dict) -> str:
    lines = [f"seed {s['seed']}, mutants {s['start']}..{s['start'] + s['count'] - 1}: " +
             ", ".join(f"{k} {v}" for k, v in sorted(s["mutants"].items()))]
    for tool, c in s["jobs"].items():
        lines.append(f"  {tool}: " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
    for f in s.get("jit_fallbacks", [])[:20]:  # findings to look at: a cluster that did not compile
        lines.append(f"  JitFallbackWarning {f['id']} {f['tool']}: {f['message'][:200]}\n        {f['mutation'][:160]}")
    if s["defect_classes"]:
        lines.append(f"{len(s['defects'])} defect(s) in {len(s['defect_classes'])} class(es):")
        for sig, n in s["defect_classes"].items():
            d = next(d for d in s["defects"] if d["signature"] == sig)
            lines.append(f"  {n:4d}x {sig}\n        {d['message'][:160]}\n        e.g. {d['id']} "
                         f"{d['tool']}: {d['mutation'][:200]}" + (f"\n        {d['saved']}" if "saved" in d else ""))
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--count", type=int, default=200, help="number of mutants")
    p.add_argument("--start", type=int, default=0, help="first mutant index")
    p.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--memory-mb", type=int, default=4096, help="RLIMIT_AS per worker (default 4096)")
    p.add_argument("--timeout", type=float, default=30.0,
                   help="seconds per cheap job; vmfb compiles and jit=auto runs get 4x (default 30)")
    p.add_argument("--session-rate", type=float, default=0.5, help="share of mutants also run in a Session")
    p.add_argument("--tools", default=None, help="comma-separated: compile,explain,session (default all)")
    p.add_argument("--max-graph-bytes", type=int, default=None, help="skip corpus graphs larger than this")
    p.add_argument("--out", type=Path, default=None, help="write summary.json and defects/ here")
    p.add_argument("--replay", type=Path, nargs="+", default=None,
                   help="run saved defect (or regression) folders and print the results")
    p.add_argument("--keep", nargs=3, metavar=("DEFECT_DIR", "NAME", "MESSAGE_REGEX"), default=None,
                   help="make a defect folder a regression test in tests/e2e/fuzz_regressions/NAME")
    p.add_argument("--open", default=None, metavar="REASON", help="with --keep: the defect is not fixed yet")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker_main(args.memory_mb)
        return 0
    if args.replay:
        print(json.dumps(replay_all(args.replay, args.memory_mb, args.timeout * 4), indent=1))
        return 0
    if args.keep:
        print(keep(Path(args.keep[0]), args.keep[1], args.keep[2], args.open))
        return 0
    t0 = time.time()
    progress = progress_line(args.count, t0)
    s = fuzz(args.seed, args.count, start=args.start, workers=args.workers, memory_mb=args.memory_mb,
             timeout=args.timeout, out=args.out, corpus=load_corpus(args.max_graph_bytes),
             session_rate=args.session_rate, tools=set(args.tools.split(",")) if args.tools else None,
             progress=progress)
    print(format_summary(s))
    print(f"{time.time() - t0:.0f} s")
    return 1 if s["defects"] else 0


if __name__ == "__main__":
    sys.exit(main())
