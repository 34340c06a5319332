"""Where the calling thread waits for IREE's thread pool: on the CPU of the pool's last worker.

IREE's local-task pins one worker per CPU (here iree-worker-0 on CPU 0, iree-worker-1 on CPU
1), and the thread that called into a module waits for them partly by spinning. On the 2-core
development VM that wait went wrong whenever the caller shared CPU 0 with worker 0: it spun
there while the worker it waited for could not run, and a call took up to 1.6x as long, in
whole runs at a time (mlp_adam 1.24-1.34 ms a step with the caller free to move, 1.36-1.39
pinned to CPU 0, 0.82-0.87 pinned to CPU 1, three processes, median of 7 blocks each; BERT-2
inference 2.14 against 1.44; the caller's own CPU time 0.65 against 0.22 ms a step). So for
the length of a call to the pool the caller is pinned where the last worker is, and then given
back the CPUs it had. Where that cannot be arranged (no sched_setaffinity, no pinned workers
found, a worker outside the caller's CPUs) calls go as they are. HLOBRIDGE_FLAGS
--no-pin-waiting-thread turns it off.
"""

from __future__ import annotations

import ctypes
import os
from contextlib import contextmanager
from pathlib import Path

from .. import flags

WORKER_PREFIX = "iree-worker-"


def pool_workers() -> dict[int, frozenset]:
    """{worker number: its CPUs} of IREE's pool threads in this process (empty: none found, or
    no affinity calls here)."""
    workers: dict[int, frozenset] = {}
    if not hasattr(os, "sched_getaffinity"):
        return workers
    for task in Path("/proc/self/task").glob("*"):
        try:
            name = (task / "comm").read_text().strip()
            if name.startswith(WORKER_PREFIX) and name[len(WORKER_PREFIX):].isdigit():
                workers[int(name[len(WORKER_PREFIX):])] = frozenset(os.sched_getaffinity(int(task.name)))
        except (OSError, ValueError):
            continue  # a thread that ended meanwhile
    return workers


def settled(workers: dict[int, frozenset]) -> bool:
    """Whether the workers have pinned themselves: each to CPUs of its own. A worker starts with
    the CPUs of the thread that made it and pins itself when it first runs, so a look just after
    the pool's first call can find the last one still on another worker's CPU (a pool made from a
    thread pinned to CPU 0: worker 1 on CPU 0 for a moment)."""
    seen: set = set()
    for cpus in workers.values():
        if seen & cpus:
            return False
        seen |= cpus
    return bool(workers)


def last_worker_cpus(workers: dict[int, frozenset] | None = None) -> frozenset | None:
    """The CPUs IREE's highest-numbered pool worker is pinned to, if it is pinned to fewer CPUs
    than the calling thread may use (None: no workers found, not pinned, or no affinity calls)."""
    workers = pool_workers() if workers is None else workers
    if not workers:
        return None
    cpus = workers[max(workers)]
    return cpus if cpus < os.sched_getaffinity(0) else None


def _sched_getcpu():
    """glibc's sched_getcpu as a ctypes function, or None where there is none."""
    try:
        getcpu = ctypes.CDLL(None, use_errno=True).sched_getcpu
    except (OSError, AttributeError):
        return None  # not glibc/Linux
    getcpu.restype, getcpu.argtypes = ctypes.c_int, []
    return getcpu


_GETCPU = _sched_getcpu()


def current_cpu() -> int | None:
    """The CPU the calling thread runs on now (glibc's sched_getcpu, 0.1 us), or None where it
    cannot be known."""
    if _GETCPU is None:
        return None
    cpu = _GETCPU()
    return cpu if cpu >= 0 else None


class _Pool:
    """What was found: the pool's workers exist after its first call and live as long as the
    process's device. Looked for after each pool call until they are found settled, at most
    MAX_LOOKS times (reading /proc costs about 100 us)."""
    looks = 0
    cpus: frozenset | None = None


MAX_LOOKS = 8


@contextmanager
def on_cpus(cpus):
    """Run the body with the calling thread on `cpus`, then give it back its own CPUs; as it is
    where `cpus` is empty or None, or affinity cannot be set here."""
    saved = None
    if cpus:
        try:
            saved = os.sched_getaffinity(0)
            os.sched_setaffinity(0, cpus)
        except (AttributeError, OSError):
            saved = None
    try:
        yield
    finally:
        if saved is not None:
            os.sched_setaffinity(0, saved)


@contextmanager
def waiting_beside_the_pool(driver: str):
    """Run the body (a call into a module on IREE `driver`) with the calling thread on the
    pool's last worker's CPUs, then give it back its own; only for local-task, the pool. The
    first call runs as it is and finds them (calls go on as they are until they are settled)."""
    pool = driver == "local-task"
    cpus = _Pool.cpus if pool and flags.from_environment().pin_waiting_thread else None
    try:
        with on_cpus(cpus):
            yield
    finally:
        if pool and _Pool.looks < MAX_LOOKS:
            workers = pool_workers()
            ready = settled(workers)  # else not pinned yet: look again after the next call
            _Pool.cpus = last_worker_cpus(workers) if ready else None
            _Pool.looks = MAX_LOOKS if ready else _Pool.looks + 1
