"""Passes over StableHLO, run as stages by `pipeline.py`: simplification (constant folding,
algebraic simplification), negation hoisting, precision reduction, and fusion into dispatch
regions (`fusion_policy.py` decides, `dispatch_regions.py` wraps)."""
