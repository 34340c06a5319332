"""The `Xla*` ops: tf2xla's own ops, which TensorFlow runs only inside XLA clusters, written by
`tensorflow.compiler.tf2xla.python.xla` and by Keras 3's TensorFlow backend (keras.ops.slice_update
is XlaDynamicUpdateSlice), each mapping almost one to one onto StableHLO (docs/xla_ops.md):

  slicing         XlaDynamicSlice, XlaDynamicUpdateSlice, XlaPad, XlaSplitND, XlaConcatND
  call_module     XlaCallModule (a StableHLO module: models exported from JAX), with
  stablehlo_artifact  its reader
"""

from . import call_module, slicing  # noqa: F401  (registration)
