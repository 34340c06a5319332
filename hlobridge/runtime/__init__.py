"""Running compiled code and whole graphs.

`hlobridge.runtime.load(vmfb, device)` loads a compiled module (`module.py`); the Session
(`session.py`) runs a graph as a plan of units (`plan.py`): cluster launches
(`cluster_launch.py`) and single nodes on their reference kernels (`interpreter.py`).
"""

from .module import DRIVERS, CompiledFunction, LoadedModule, config, cuda_available, load

__all__ = ["DRIVERS", "CompiledFunction", "LoadedModule", "config", "cuda_available", "load"]
