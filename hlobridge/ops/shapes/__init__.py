"""Shape, layout and indexing ops, one module per family (importing this registers them all).

Most take their shapes, axes and indices as tensors that must be compile-time constants
(StableHLO wants them static). Shape inference must still work when those tensors are
not known yet (a graph with batch dimension -1 computes them from Shape at run time):
each infer rule then gives what it can (the rank, None dims). The folded values appear
once the graph inputs' shapes are fixed.

  queries         Shape, ShapeN, Size, Rank, BroadcastGradientArgs, BroadcastArgs
  reshape         Reshape, ExpandDims, Squeeze, Transpose, InvertPermutation, Reverse
  join_split      Concat, Pack, Unpack, Split
  slicing         Slice, StridedSlice(Grad), Pad, MirrorPad
  construct       Tile, BroadcastTo, Fill, Range, OneHot
  gather_scatter  Gather, GatherNd, DynamicStitch, ScatterNd, TensorScatter*
  scans           Cumsum, Cumprod, TopKV2
  layout          DepthToSpace, SpaceToDepth, SpaceToBatch(ND), BatchToSpace(ND)
  data_dependent  Where, Unique, UniqueV2, ListDiff, DynamicPartition (no lowering: their output
                  shapes depend on values)
"""

from . import (construct, data_dependent, gather_scatter, join_split, layout, queries, reshape, scans,  # noqa: F401
               slicing)  # (registration)
