"""StableHLO -> vmfb: the compiler driver (`driver.py`), the iree-compile invocation
(`iree.py`), the compile cache (`cache.py`) and IREE's dispatch statistics (`iree_stats.py`)."""
