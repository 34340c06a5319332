"""The `Xla*` ops: tf2xla's own ops, which TensorFlow runs only inside XLA clusters, written by
`tensorflow.compiler.tf2xla.python.xla` and by Keras 3's TensorFlow backend (keras.ops.slice_update
is XlaDynamicUpdateSlice), each mapping almost one to one onto StableHLO (docs/xla_ops.md):

  slicing         XlaDynamicSlice, XlaDynamicUpdateSlice, XlaPad, XlaSplitND, XlaConcatND
  gather_scatter  XlaGather, XlaScatter (its update computation a library function)
  contractions    XlaDot, XlaDotV2, XlaConv, XlaConvV2, XlaEinsum
  reductions      XlaReduce, XlaVariadicReduce/V2, XlaReduceWindow, XlaSelectAndScatter (their
                  computations library functions)
  sorting         XlaSort, XlaKeyValueSort, XlaVariadicSort (its comparator a library function)
  values          XlaBroadcastHelper, XlaReducePrecision, XlaDequantize
  single_device   XlaSharding, XlaSpmdFullToShardShape/ShardToFullShape, XlaSetBound,
                  XlaSetDynamicDimensionSize, XlaRemoveDynamicDimensionSize, XlaOptimizationBarrier,
                  XlaReplicaId: annotations, on one device
  reused          XlaIf, XlaWhile, XlaSelfAdjointEig, XlaSvd: other ops' rules with fixed attributes
  rng             XlaRngBitGenerator (XLA's Philox and ThreeFry bits; rng_bits.py in NumPy)
  refused         XlaCustomCall, XlaCustomCallV2: refused at load, naming the target
  call_module     XlaCallModule (a StableHLO module: models exported from JAX), with
  stablehlo_artifact  its reader
"""

from . import (call_module, contractions, gather_scatter, reductions, refused, reused, single_device,  # noqa: F401
               rng, slicing, sorting, values)  # (registration)
