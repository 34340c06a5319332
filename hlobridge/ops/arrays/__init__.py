"""Array ops TensorFlow's XLA compiles that the shape families did not cover (issue 13, part 9),
and SparseFillEmptyRows; one module per family (importing this registers them all).

  sequences    Roll, ReverseSequence
  search       Bucketize, LowerBound, UpperBound
  construct    LinSpace, Empty, ConcatOffset
  data_format  DataFormatDimMap, DataFormatVecPermute
  unary        ToBool, _UnaryOpsComposition
  topk         InTopKV2, ApproxTopK
  strided_update  TensorStridedSliceUpdate, ResourceStridedSliceAssign
  scatter      SparseToDense, Bincount, DenseBincount
  pad_grad     MirrorPadGrad
  patches      ExtractImagePatches
  variables    VariableShape
  sparse_rows  SparseFillEmptyRows (before a sparse embedding lookup)
"""

from . import (construct, data_format, pad_grad, patches, scatter, search, sequences, sparse_rows,  # noqa: F401
               strided_update, topk, unary, variables)  # (registration)
