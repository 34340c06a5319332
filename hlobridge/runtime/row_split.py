"""A large inference cluster's batch cut into row parts, each part run on a CPU of its own.

On IREE's thread pool (local-task) every dispatch's tiles are shared out among the workers as
they come free, so a worker's next tiles read activations the other core has just written:
they cross between the cores' caches at every one of a model's ~100 dispatches. Measured on
the 2-core VM (MobileNetV2 96x96, batch 2, IREE's per-dispatch profile): the tiles' CPU time on
two workers was 1.45x (median over dispatches) their time on one thread, so the pool ran the
call only 1.2-1.3x faster than one thread, where ONNX Runtime's two threads run it 1.7x faster.
Two independent one-thread calls, one per core, slow each other by only 2-6%.

So where no op lets a row of the batch see another (analysis/batch_rows.py: the same proof that
allows padding a batch), the Session runs the call as parts of whole examples: part i on the
i-th CPU, on IREE's local-sync (the calling thread runs the first part, pinned workers the
others), each part a module compiled for its rows, the outputs joined along axis 0. Each core
then keeps its examples' activations in its own cache and no dispatch waits for the other core.
MobileNetV2 batch 2 ran 2.0-2.2 ms split against 2.7 on the pool; the 2-layer BERT at batch 8,
1.1 against 1.9 (iree-benchmark-module and the Session, 2026-11-28; benchmarks/models.py).

Only clusters whose estimated work (passes/ir/work_estimate.py) is at least HLOBRIDGE_FLAGS
--row-split-flops (default 1e8: the bench models split are 0.34-1.4 Gflop, cnn_infer_bn's 6
Mflop runs whole on the calling thread) are split, as each part costs a compile of its own and a
hand-off to a worker; --no-row-split turns it off.
"""

from __future__ import annotations

import os
import queue
import threading

import numpy as np

from .caller_affinity import on_cpus
from .host import to_host

# Every part reads all of the cluster's constants, so constants that do not stay in the cores'
# shared cache come from memory once per part: Keras ResNet50's 102 MB ran 5% slower split
# (10.4 against 9.9 ms at batch 2), MobileNetV2's 14 MB and the 2-layer BERT's gained.
MAX_SPLIT_WEIGHT_BYTES = 32 << 20


def usable_cpus() -> list[int]:
    """The CPUs this process may run on, in order (one where affinity is unknown)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return [0]


def part_sizes(batch: int, parts: int) -> list[int]:
    """`batch` rows cut into at most `parts` parts that differ by at most one row, largest first."""
    parts = max(1, min(parts, batch))
    base, extra = divmod(batch, parts)
    return [base + 1] * extra + [base] * (parts - extra)


class _Workers:
    """One daemon thread per CPU after the first, each pinned to its CPU, taking calls from a
    queue of its own (threads made once: starting a thread per call cost more than the split
    saved). IREE's invoke releases the GIL, so the parts run at once."""

    def __init__(self, cpus: list[int]):
        self.cpus = cpus
        self.pid = os.getpid()  # a forked child has none of these threads: it makes its own
        self.inboxes = []
        for cpu in cpus[1:]:
            inbox: queue.SimpleQueue = queue.SimpleQueue()
            threading.Thread(target=self._serve, args=(cpu, inbox), name=f"hlobridge-rows-{cpu}",
                             daemon=True).start()
            self.inboxes.append(inbox)

    @staticmethod
    def _serve(cpu: int, inbox: queue.SimpleQueue) -> None:
        try:
            os.sched_setaffinity(0, {cpu})
        except (AttributeError, OSError):
            pass  # unpinned: still a thread of its own
        while True:
            call, args, done = inbox.get()
            try:
                done.put((True, call(args)))
            except BaseException as e:  # the caller raises it
                done.put((False, e))
            del call, args, done  # hold no module while idle (at exit: nanobind's leak report)


_workers: _Workers | None = None
_workers_lock = threading.Lock()


def workers() -> _Workers:
    global _workers
    with _workers_lock:
        if _workers is None or _workers.pid != os.getpid():
            _workers = _Workers(usable_cpus())
        return _workers


class RowSplit:
    """A signature's call as parts: `calls[i]` (a part executable's call, each with a VM context
    of its own) takes the next `sizes[i]` rows of the inputs at `batched` positions and every
    other input whole."""

    def __init__(self, calls: list, sizes: list[int], batched: list[int]):
        self.calls = calls
        self.sizes = sizes
        self.starts = np.cumsum([0, *sizes]).tolist()
        self.batched = set(batched)
        self.lock = threading.Lock()  # one split call at a time: each part's VM context is not shared

    def call(self, args: list) -> tuple:
        """The whole call's results: each output the parts' outputs joined along axis 0. Part 0
        runs on the calling thread, part i on worker i (a part beyond the workers, after it)."""
        pool = workers()
        args = [np.asarray(to_host(a)) if j in self.batched else a for j, a in enumerate(args)]
        parts = [[a[lo:hi] if j in self.batched else a for j, a in enumerate(args)]
                 for lo, hi in zip(self.starts, self.starts[1:])]
        with self.lock:
            pending = []
            for i, inbox in zip(range(1, len(self.calls)), pool.inboxes):
                done: queue.SimpleQueue = queue.SimpleQueue()
                inbox.put((self.calls[i], parts[i], done))
                pending.append(done)
            with on_cpus({pool.cpus[0]}):
                mine = [self.calls[i](parts[i]) for i in range(len(self.calls)) if i == 0 or i > len(pending)]
            results = mine[:1]
            for done in pending:
                ok, value = done.get()
                if not ok:
                    raise value
                results.append(value)
            results += mine[1:]
        return tuple(np.concatenate([np.asarray(to_host(r[k])) for r in results]) for k in range(len(results[0])))
