"""Running compiled code and whole graphs.

`hlobridge.runtime.load(path, device)` loads a compiled module (`artifact.py`: an IREE vmfb,
`module.py`, or XLA's portable artifact, `pjrt.py`); the Session
(`session.py`) runs a graph as a plan of units (`plan.py`): cluster launches
(`cluster_launch.py`) and single nodes on their reference kernels (`interpreter.py`).
"""

from .artifact import load
from .module import DRIVERS, CompiledFunction, LoadedModule, config, cuda_available

__all__ = ["DRIVERS", "CompiledFunction", "LoadedModule", "config", "cuda_available", "load"]
