"""The world of ranks a process belongs to: an MPI communicator (mpi4py) behind the few
collectives hlobridge issues, each with a deadline.

Why a deadline: an MPI collective blocks until every rank has entered it. A rank that died
or hung would leave the others waiting forever, which is the failure users of Horovod and
tf.distribute meet most (a "silent hang"). Every collective here is started non-blocking
(`Iallreduce`, `Ibcast`, `Iallgather`) and polled until it completes or its deadline passes;
then it raises `CollectiveError` naming the collective, what it waited for and how long. An
MPI error (MPICH reports a dead peer when the launcher keeps the job alive:
`mpiexec -disable-auto-cleanup`) becomes the same error.

mpi4py is imported only here and only by `MpiWorld`: the core never imports it
(`hlobridge[distributed]` installs it with an MPI wheel).
"""

from __future__ import annotations

import atexit
import os
import sys
import time

import numpy as np

from ..errors import HlobridgeError

DEFAULT_TIMEOUT = 300.0  # seconds a collective may wait for the other ranks
TIMEOUT_ENV = "HLOBRIDGE_COLLECTIVE_TIMEOUT"
SPIN = 1.0  # seconds a collective polls MPI without pausing

_current = None  # the World init() made


class CollectiveError(HlobridgeError):
    """A collective did not complete: a rank died, hung, or issued a different collective."""


def collective_timeout() -> float:
    """The deadline of one collective, seconds: HLOBRIDGE_COLLECTIVE_TIMEOUT, else 300."""
    raw = os.environ.get(TIMEOUT_ENV)
    if raw is None:
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        raise HlobridgeError(f"{TIMEOUT_ENV}={raw!r}: not a number of seconds") from None
    if value <= 0:
        raise HlobridgeError(f"{TIMEOUT_ENV}={raw!r}: must be positive")
    return value


class MpiWorld:
    """The collectives of one communicator (COMM_WORLD unless given), each with a deadline.

    Arrays go in and come out as NumPy arrays on the host (the CPU path; on CUDA devices the
    design in docs/distributed.md keeps them on the device)."""

    def __init__(self, comm=None, timeout: float | None = None):
        from mpi4py import MPI  # the optional extra: hlobridge[distributed]

        if not MPI.Is_initialized():  # the script set mpi4py.rc.initialize = False
            MPI.Init_thread()
        self.MPI = MPI
        self.comm = comm if comm is not None else MPI.COMM_WORLD
        self.comm.Set_errhandler(MPI.ERRORS_RETURN)  # a dead peer: an exception, not an abort
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        self.local_rank, self.local_size = _local_rank(self.comm, MPI)
        self.timeout = timeout if timeout is not None else collective_timeout()
        self.issued = 0  # collectives issued so far, for error messages
        self.broken = False  # a collective failed: the communicator cannot be finalized
        self.iree_channels = False  # init(iree_channels=True): IREE's cuda device can make NCCL channels

    # -- the collectives ---------------------------------------------------------------------
    def allreduce(self, array: np.ndarray, what: str, op: str = "sum", timeout: float | None = None) -> np.ndarray:
        """The elementwise `op` ("sum", "max", "min", "prod") of `array` over the ranks."""
        send = np.ascontiguousarray(array)
        out = np.empty_like(send)
        mpi_op = {"sum": self.MPI.SUM, "max": self.MPI.MAX, "min": self.MPI.MIN, "prod": self.MPI.PROD}[op]
        self._wait(lambda: self.comm.Iallreduce(send, out, mpi_op), what, timeout)
        return out

    def broadcast(self, array: np.ndarray, what: str, root: int = 0, timeout: float | None = None) -> np.ndarray:
        """`array` of rank `root`, on every rank (each passes an array of the same dtype and shape)."""
        buf = np.array(array, copy=True, order="C")
        self._wait(lambda: self.comm.Ibcast(buf, root=root), what, timeout)
        return buf

    def allgather(self, array: np.ndarray, what: str, timeout: float | None = None) -> np.ndarray:
        """Every rank's `array` (same dtype and shape everywhere), stacked on a new axis 0."""
        send = np.ascontiguousarray(array)
        out = np.empty((self.size,) + send.shape, send.dtype)
        self._wait(lambda: self.comm.Iallgather(send, out), what, timeout)
        return out

    def alltoall(self, array: np.ndarray, what: str, timeout: float | None = None) -> np.ndarray:
        """Chunk j of `array` (split on axis 0 into `size` equal chunks) goes to rank j; the
        chunks received, in rank order, concatenated on axis 0."""
        send = np.ascontiguousarray(array)
        out = np.empty_like(send)
        self._wait(lambda: self.comm.Ialltoall(send, out), what, timeout)
        return out

    def allgather_bytes(self, data: bytes, what: str, timeout: float | None = None) -> list[bytes]:
        """Every rank's `data` (any length): two gathers, the lengths, then the bytes padded."""
        lengths = self.allgather(np.array([len(data)], np.int64), what, timeout)[:, 0]
        buf = np.zeros(int(lengths.max()), np.uint8)
        buf[: len(data)] = np.frombuffer(data, np.uint8)
        rows = self.allgather(buf, what, timeout)
        return [bytes(rows[i, : lengths[i]]) for i in range(self.size)]

    def abort(self, code: int = 1) -> None:
        """End every rank of the job (after a CollectiveError the communicator is unusable)."""
        self.comm.Abort(code)

    def _broken(self) -> None:
        """After a failed collective, MPI_Finalize would wait for the lost rank forever: at exit
        (after the error has been reported) abort the job instead."""
        if not self.broken:
            self.broken = True
            atexit.register(self._abort_at_exit)

    def _abort_at_exit(self) -> None:
        sys.stderr.flush()
        self.comm.Abort(1)

    # -- deadlines -----------------------------------------------------------------------------
    def _wait(self, start, what: str, timeout: float | None = None) -> None:
        """Start a non-blocking collective and poll it until done or past the deadline
        (`timeout`, else the world's)."""
        limit = self.timeout if timeout is None else timeout
        self.issued += 1
        number = self.issued
        began = time.monotonic()
        try:
            request = start()
            pause = 0.0
            while not request.Test():
                waited = time.monotonic() - began
                if waited > limit:
                    self._broken()
                    source = f"the timeout, {TIMEOUT_ENV}" if timeout is None else "the op's timeout_seconds"
                    raise CollectiveError(
                        f"{what}: rank {self.rank} of {self.size} waited {waited:.0f} s ({source}) for the other "
                        f"ranks to join collective #{number}: a rank died, hung, or runs a different step")
                # MPI progresses a non-blocking collective only inside Test: poll without pause
                # for the first SPIN seconds, as a blocking MPI call spins (with a pause per poll a
                # 1 MiB all-reduce took 15.6 ms vs 4.4 blocking, once, on a loaded VM), then every
                # 1 ms (a rank far behind: keep the cores)
                if waited > SPIN:
                    pause = min(1e-3, pause * 2 or 1e-5)
                    time.sleep(pause)
        except self.MPI.Exception as e:
            self._broken()
            raise CollectiveError(f"{what}: rank {self.rank} of {self.size}: collective #{number} "
                                  f"failed in MPI: {e.Get_error_string()} (a rank died?)") from None


def _local_rank(comm, MPI) -> tuple[int, int]:
    """(this rank's index among the ranks on its host, how many ranks its host has)."""
    local = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())
    try:
        return local.Get_rank(), local.Get_size()
    finally:
        local.Free()


def current():
    """The World `hlobridge.distributed.init()` made; an error saying so when it was not called."""
    if _current is None:
        raise HlobridgeError("no distributed world: call hlobridge.distributed.init() first "
                             "(and launch with mpiexec -n N)")
    return _current


def set_current(world) -> None:
    """Install `world` (init() does; tests may install their own)."""
    global _current
    _current = world


def is_initialized() -> bool:
    """Whether init() has made the world."""
    return _current is not None
