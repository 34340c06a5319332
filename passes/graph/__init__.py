"""Passes over the TF graph: functionalizing v1 control flow, and clustering
(mark_for_compilation) as TensorFlow's XLA JIT does it."""
