"""Many processes, one training job: MPI through mpi4py, the Horovod model (docs/distributed.md).

    import hlobridge, hlobridge.distributed as dist
    rank, size = dist.init()                       # under: mpiexec -n 2 python train.py
    sess = hlobridge.Session("graph.pb", data_parallel=True, device=dist.device())
    sess.run(init_op)                              # variables are broadcast from rank 0
    sess.run([train_op, loss], {x: x_shard, y: y_shard})   # gradients averaged over the ranks

`init()` starts MPI (mpi4py, the optional extra `hlobridge[distributed]`), makes IREE safe to
start under the launcher (iree_env.py), narrows this rank's GPU to its local rank, and installs
the world every collective goes through (world.py). The core never imports mpi4py: only
`init()` does.
"""

from __future__ import annotations

from ..errors import HlobridgeError
from . import iree_env, world as _world
from .world import CollectiveError, collective_timeout, current, is_initialized

__all__ = ["init", "rank", "size", "local_rank", "comm", "device", "is_initialized", "current",
           "CollectiveError", "collective_timeout"]


def init(timeout: float | None = None, *, gpu: bool = True, iree_channels: bool = False) -> tuple[int, int]:
    """Start MPI (once per process) and return (rank, size). `timeout`: seconds a collective
    waits for the other ranks (default HLOBRIDGE_COLLECTIVE_TIMEOUT or 300). `gpu=False`
    leaves CUDA_VISIBLE_DEVICES alone. `iree_channels=True` keeps the launcher visible to IREE,
    for collectives inside compiled code: a data-parallel `cuda` Session then averages gradients
    on the device, on IREE's NCCL channel (docs/distributed.md, "GPUs"; launch under OpenMPI)."""
    if _world.is_initialized():
        w = _world.current()
        return w.rank, w.size
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        raise HlobridgeError("hlobridge.distributed needs mpi4py and an MPI: "
                             "pip install 'hlobridge[distributed]'") from None
    world = _world.MpiWorld(timeout=timeout)
    iree_env.prepare(iree_channels)  # before any IREE device exists
    world.iree_channels = iree_channels
    if gpu:
        iree_env.pin_gpu(world.local_rank)
    _world.set_current(world)
    return world.rank, world.size


def rank() -> int:
    """This process's rank in the world (0 .. size-1)."""
    return _world.current().rank


def size() -> int:
    """How many ranks the world has."""
    return _world.current().size


def local_rank() -> int:
    """This process's index among the ranks on its host (its GPU, on a GPU host)."""
    return _world.current().local_rank


def comm():
    """The mpi4py communicator (COMM_WORLD), for the script's own collectives."""
    return _world.current().comm


def device() -> str:
    """The Session device for this rank: "cuda" where IREE finds a GPU (this rank's, after
    init() narrowed CUDA_VISIBLE_DEVICES), else "cpu-task"."""
    from ..runtime.module import cuda_available

    return "cuda" if iree_env.gpu_count() and cuda_available() else "cpu-task"
