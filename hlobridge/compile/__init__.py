"""StableHLO -> a backend's artifact: the compiler driver (`driver.py`), the backends behind one
interface (`backend.py`): IREE (`iree.py`, with IREE's dispatch statistics `iree_stats.py`) and
XLA through PJRT (`xla_input.py`, `xla.py`: the `xla` extra), the compile options
(`options.py`) and the compile cache (`cache.py`)."""
