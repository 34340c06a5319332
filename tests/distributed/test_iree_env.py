"""Starting IREE under an MPI launcher, and each rank's GPU (hlobridge/distributed/iree_env.py)."""

import ctypes
import subprocess
import sys

import pytest

from hlobridge.distributed import iree_env
from hlobridge.distributed.libmpi import main as libmpi_main


def test_the_launcher_variables_iree_reacts_to_are_removed():
    env = {"PMI_SIZE": "2", "PMI_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2", "PATH": "/bin"}
    assert iree_env.hide_launcher_from_iree(env) == {"PMI_SIZE": "2", "OMPI_COMM_WORLD_SIZE": "2"}
    assert env == {"PMI_RANK": "1", "PATH": "/bin"}  # MPI's own rank variables stay


def test_each_local_rank_gets_its_gpu(tmp_path):
    env = {}
    assert iree_env.pin_gpu(3, env, gpus=8) == "3" and env["CUDA_VISIBLE_DEVICES"] == "3"
    env = {"CUDA_VISIBLE_DEVICES": "4,5,6,7"}
    assert iree_env.pin_gpu(1, env) == "5" and env["CUDA_VISIBLE_DEVICES"] == "5"
    env = {}
    assert iree_env.pin_gpu(1, env, gpus=0) is None and env == {}  # a CPU host: nothing to narrow
    (tmp_path / "0").mkdir()
    (tmp_path / "1").mkdir()
    assert iree_env.gpu_count(tmp_path) == 2 and iree_env.gpu_count(tmp_path / "none") == 0


def test_a_wheels_linker_script_resolves_to_a_loadable_library(tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "libmpi.so").write_text("INPUT(libmpi.so.12)\n")  # what pip's mpich wheel installs
    real = lib / "libmpi.so.12"
    real.write_bytes(b"\x7fELF")
    assert iree_env.real_libmpi(lib) == real
    folder = iree_env.libmpi_link_dir(lib, cache=tmp_path / "cache")
    assert (folder / "libmpi.so").resolve() == real
    assert iree_env.libmpi_link_dir(lib, cache=tmp_path / "cache") == folder  # made once


def test_the_installed_mpi_wheel_gives_a_dlopen_able_libmpi(tmp_path, capsys):
    lib = __import__("pathlib").Path(sys.prefix) / "lib"
    if iree_env.real_libmpi(lib) is None:

        pytest.skip("no MPI wheel in this environment")
    assert libmpi_main([str(lib)]) == 0
    folder = capsys.readouterr().out.strip()
    mpi4py = pytest.importorskip("mpi4py")
    mpi4py.rc.initialize = False  # load libmpi as init() does (its dependencies by its own path), no MPI_Init
    from mpi4py import MPI  # noqa: F401
    ctypes.CDLL(f"{folder}/libmpi.so")  # dlopen accepts it (the wheel's own libmpi.so it rejects)


def test_libmpi_cli_without_an_mpi_is_a_one_line_error(tmp_path):
    done = subprocess.run([sys.executable, "-m", "hlobridge.distributed.libmpi", str(tmp_path)],
                          capture_output=True, text=True)
    assert done.returncode == 1 and done.stderr.startswith("error: ") and len(done.stderr.splitlines()) == 1


def test_init_hides_the_launcher_unless_iree_makes_the_channels(monkeypatch):
    env = {"PMI_SIZE": "2"}
    iree_env.prepare(False, env)
    assert env == {}
    monkeypatch.setattr(ctypes, "CDLL", lambda name: (_ for _ in ()).throw(OSError(f"{name}: file too short")))
    with pytest.raises(iree_env.HlobridgeError, match=r"IREE's NCCL channels need libmpi.so loadable "
                                                      r"\(libmpi.so: file too short\); launch with mpiexec"):
        iree_env.prepare(True, {"PMI_SIZE": "2"})


def test_an_nccl_wheel_gets_the_libnccl_so_iree_dlopens(tmp_path):
    lib = tmp_path / "nvidia" / "nccl" / "lib"
    lib.mkdir(parents=True)
    (lib / "libnccl.so.2").write_bytes(b"\x7fELF")  # pip's nvidia-nccl-cu13 ships only this name
    folder = tmp_path / "links"
    folder.mkdir()
    assert iree_env.link_nccl(folder, [lib]) == folder / "libnccl.so"
    assert (folder / "libnccl.so").resolve() == lib / "libnccl.so.2"
    assert iree_env.link_nccl(folder, [tmp_path]) is None  # no wheel: nothing
