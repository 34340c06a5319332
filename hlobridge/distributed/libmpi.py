"""`python -m hlobridge.distributed.libmpi`: print a folder for LD_LIBRARY_PATH that holds a
loadable `libmpi.so` for the MPI wheel installed beside this Python, and a `libnccl.so` where an
nvidia-nccl wheel is installed (iree_env.py says why)."""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import HlobridgeError
from .iree_env import libmpi_link_dir, link_nccl


def main(argv=None) -> int:
    """Print the folder; a one-line error (exit 1) when this environment has no MPI wheel."""
    args = sys.argv[1:] if argv is None else argv
    prefix_lib = Path(args[0]) if args else Path(sys.prefix) / "lib"
    try:
        folder = libmpi_link_dir(prefix_lib)
        link_nccl(folder)
        print(folder)
    except HlobridgeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
