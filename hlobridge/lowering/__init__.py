"""A graph or cluster -> one StableHLO function in an MLIR module (`driver.py`), and the
signature recorded in it for the runtime (`signature.py`)."""
