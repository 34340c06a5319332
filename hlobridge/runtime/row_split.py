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

Whether the parts beat the pool depends on the machine, not only on the model: on a 2-core Zen 4
VM MobileNetV2 batch 2 ran split in 0.62 of its pool time; on a 2-core Zen 3 VM (AVX2, its
memory shared with other tenants) in 1.16 of it, each part slowed by the other's weight
traffic, where BERT batch 8 still ran in 0.86 (2026-11-29, one process, 25 interleaved pairs of
blocks, medians of the pairs' ratios). No rule over the model tells these apart, so a
`SplitTrial` times both on a signature's first calls and keeps the faster (--no-row-split-trial:
the parts always), as XLA autotunes a convolution's algorithm on the GPU it runs on.
"""

from __future__ import annotations

import os
import queue
import statistics
import threading
from dataclasses import dataclass

import numpy as np

from .caller_affinity import current_cpu, on_cpus
from .host import to_host
from .straight_call import StraightCall, read_only_view

# Every part reads all of the cluster's constants, so constants that do not stay in the cores'
# shared cache come from memory once per part: Keras ResNet50's 102 MB ran 5% slower split
# (10.4 against 9.9 ms at batch 2), MobileNetV2's 14 MB and the 2-layer BERT's gained.
MAX_SPLIT_WEIGHT_BYTES = 32 << 20


# SplitTrial: calls each way left out (the first wake the workers' threads and fill the caches),
# then calls each way timed. Its 18 calls are 0.1 s of MobileNetV2 batch 2.
TRIAL_WARMUP = 2
TRIAL_CALLS = 7


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
    """One daemon thread per CPU, each pinned to its CPU, taking calls from a queue of its own
    (threads made once: starting a thread per call cost more than the split saved). IREE's
    invoke releases the GIL, so the parts run at once."""

    def __init__(self, cpus: list[int]):
        self.cpus = cpus
        self.pid = os.getpid()  # a forked child has none of these threads: it makes its own
        self.inbox_of: dict[int, queue.SimpleQueue] = {}
        for cpu in cpus:
            inbox: queue.SimpleQueue = queue.SimpleQueue()
            threading.Thread(target=self._serve, args=(cpu, inbox), name=f"hlobridge-rows-{cpu}",
                             daemon=True).start()
            self.inbox_of[cpu] = inbox
        # per CPU the caller may be on: the other CPUs' inboxes (asked on every split call)
        self.others = {cpu: [inbox for c, inbox in self.inbox_of.items() if c != cpu] for cpu in cpus}

    def around_caller(self) -> tuple[list, set | None]:
        """The inboxes of the workers that take the other parts, and the CPUs the calling thread
        runs its own part on, pinned for the call. The caller stays on the CPU it is on and the
        workers of the others take the parts: moving the caller cost more than the split's
        hand-off (it sleeps while it waits, wakes on the CPU of the worker that woke it, and
        pinning it back took ~50 us, MobileNetV2 batch 2 on the 2-core VM); pinned there, the
        scheduler cannot move it onto a worker's CPU mid-call. Where the CPU is not known, the
        caller is pinned to the first CPU and the other workers take the parts."""
        here = current_cpu()
        if here in self.others:
            return self.others[here], {here}
        return self.others[self.cpus[0]], {self.cpus[0]}

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


@dataclass
class PipedRow:
    """The last row of an odd batch on two CPUs, as two calls cut between layers
    (analysis/layer_cut.py): `first` computes the cut from the cluster's arguments at
    `first_args`, `second` the outputs from the cut and the arguments at `second_args`."""

    first: StraightCall
    second: StraightCall
    first_args: list[int]
    second_args: list[int]


class RowSplit:
    """A signature's call as parts: `parts[i]` (a part executable's StraightCall, each with a VM
    context of its own) takes the next `sizes[i]` rows of the inputs at `batched` positions and
    every other input whole; with a `piped` row, the batch's last row runs as its two halves,
    the first on the calling thread before part 0, the second on the worker after part 1."""

    def __init__(self, parts: list, sizes: list[int], batched: list[int], piped: PipedRow | None = None):
        self.parts = parts
        self.sizes = sizes
        self.starts = np.cumsum([0, *sizes]).tolist()
        self.batched = set(batched)
        self.piped = piped
        self.lock = threading.Lock()  # one split call at a time: each part's VM context is not shared

    def _prepare(self, i: int, args: list) -> tuple:
        lo, hi = self.starts[i], self.starts[i + 1]
        return self.parts[i].prepare([a[lo:hi] if j in self.batched else a for j, a in enumerate(args)])

    def call(self, args: list) -> tuple:
        """The whole call's results: each output the parts' outputs joined along axis 0 (arrays
        of their own). Part 0 runs on the calling thread, the others on the workers of the other
        CPUs (a part beyond the workers, on the calling thread after part 0).

        The hand-off is what a split costs: a worker wakes 20-50 us after it is called on this
        VM, and each time it finds the GIL held it sleeps again. So this thread packs every
        part's arguments (under the GIL) and hands a worker only the invoke, which releases the
        GIL at once; a worker's part is packed and handed off before this thread packs its own,
        so the wake-up overlaps that packing; the results are read here after the join
        (MobileNetV2 batch 2 on the 2-core VM: the worker began its part 90 us after the call
        and the caller resumed 64 us after the worker's end, when the worker packed its own
        arguments and made its results' arrays)."""
        inboxes, pin = workers().around_caller()
        args = [np.asarray(to_host(a)) if j in self.batched else a for j, a in enumerate(args)]
        if self.piped is not None:
            return self._call_piped(args, inboxes[0] if inboxes else None, pin)
        n = len(self.parts)
        prepared: list = [None] * n
        with self.lock:
            pending = []
            try:
                for i, inbox in zip(range(1, n), inboxes):
                    prepared[i] = self._prepare(i, args)
                    done: queue.SimpleQueue = queue.SimpleQueue()
                    inbox.put((self.parts[i].invoke, prepared[i], done))
                    pending.append(done)
                mine = [0, *range(len(pending) + 1, n)]
                for i in mine:
                    prepared[i] = self._prepare(i, args)
                with on_cpus(pin):
                    for i in mine:
                        self.parts[i].invoke(prepared[i])
            finally:  # every handed-off part ends before its context is used again
                outcomes = [done.get() for done in pending]
            for ok, value in outcomes:
                if not ok:
                    raise value
        return _joined([StraightCall.result_views(p) for p in prepared])

    def _call_piped(self, args: list, inbox: queue.SimpleQueue | None, pin: set | None) -> tuple:
        """Two equal parts and the last row piped: this thread runs the row's first half, then
        part 0; the worker part 1, then the row's second half on the cut this thread handed it
        (long since, as the first half is the shorter call). Each CPU does half a row more.
        Without a worker of another CPU (`inbox` None: the process's CPUs narrowed since the
        split was made), this thread runs the worker's side too, as `call` runs every part."""
        piped, row = self.piped, self.starts[-1]
        last = lambda j: args[j][row:row + 1] if j in self.batched else args[j]  # noqa: E731
        cut: queue.SimpleQueue = queue.SimpleQueue()

        def worker_side(part):
            self.parts[1].invoke(part)
            first = cut.get()
            if first is None:
                return None  # the first half failed on the calling thread, which raises it
            second = piped.second.prepare([first, *(last(j) for j in piped.second_args)])
            piped.second.invoke(second)
            return second

        with self.lock:
            done: queue.SimpleQueue = queue.SimpleQueue()
            theirs = self._prepare(1, args)
            if inbox is not None:
                inbox.put((worker_side, theirs, done))
            handed = False
            try:
                first = piped.first.prepare([last(j) for j in piped.first_args])
                mine = self._prepare(0, args)
                with on_cpus(pin):
                    piped.first.invoke(first)
                    cut.put(read_only_view(StraightCall.result_views(first)[0]))
                    handed = True
                    self.parts[0].invoke(mine)
                    if inbox is None:
                        outcome = (True, worker_side(theirs))
            finally:
                if not handed:
                    cut.put(None)
                if inbox is not None:  # the worker's side ends before its contexts are used again
                    outcome = done.get()
            ok, second = outcome
            if not ok:
                raise second
        return _joined([StraightCall.result_views(p) for p in (mine, theirs, second)])


def _joined(views: list) -> tuple:
    """Each output the parts' outputs (buffer views, in row order) joined along axis 0."""
    return tuple(np.concatenate([read_only_view(v[k]) for v in views]) for k in range(len(views[0])))


class SplitTrial:
    """Row parts against the pool on a signature's first calls: the two alternate (`pick`), each
    call's time is recorded, and once both have had TRIAL_WARMUP + TRIAL_CALLS calls `record`
    says whether the parts' median time was at most the pool's. A call of the trial holds
    `lock`, so that concurrent calls neither race over the counts nor slow the call timed."""

    def __init__(self, warmup: int = TRIAL_WARMUP, calls: int = TRIAL_CALLS):
        self.lock = threading.Lock()
        self.warmup = warmup
        self.seconds: dict[bool, list[float]] = {True: [], False: []}  # split? -> timed calls
        self.calls = {True: 0, False: 0}
        self.per_way = warmup + calls

    def pick(self) -> bool:
        """Whether the next call runs as parts: the way with fewer calls so far, parts first."""
        return self.calls[True] <= self.calls[False]

    def record(self, split: bool, seconds: float) -> bool | None:
        """Count a call that took `seconds`; once the trial is over, whether the parts are kept."""
        self.calls[split] += 1
        if self.calls[split] > self.warmup:
            self.seconds[split].append(seconds)
        if min(self.calls.values()) < self.per_way:
            return None
        return self.median_ms(True) <= self.median_ms(False)

    def median_ms(self, split: bool) -> float:
        return statistics.median(self.seconds[split]) * 1e3
