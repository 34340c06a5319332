"""The op registry, filled by importing each family package once.

The registry's core is loose here: registry (the entries), typesets (dtypes per op), helpers
(what the families share), traced and traced_logic (rules written once for NumPy and StableHLO),
kinds (op-name sets the stages ask about), signatures (TensorFlow's op signatures), coverage
(against TF's XLA), calls (the protocol of ops that call functions) and backend_style (whom a
lowering is for, where a rule lowers differently for IREE and XLA). Each family is a package:

  math      elementwise, reductions, segments, complex numbers, FFTs, special functions
  control   Const/Identity plumbing, If/While/Case, Switch/Merge, variables, optimizers, checkpoints
  linalg    matrix ops: band parts, diagonals, factorizations, solves, Einsum
  image     resizes, colour adjustments, crop-and-resize, non-max suppression
  nn        matmul, convolutions, pooling, batch norm, softmax, Grappler's fused ops
  shapes    shape queries, reshapes, slicing, gathers and scatters, block layouts
  arrays    the array ops XLA compiles that shapes/ did not cover, SparseFillEmptyRows
  text      strings, text preprocessing, unicode, hashing, lookup tables
  lists     TF2 TensorLists, TF1 TensorArrays and stacks
  quant     fake quantization, quantize-dequantize, uniform quantized ops
  random    Philox streams: stateless, stateful (tf.random.Generator), sampling
  collective  all-reduces, gathers, broadcasts between the ranks of an MPI job (hlobridge.distributed)
"""

from . import math  # noqa: F401,I001  (registration; first: lists/ extends ZerosLike and AddN)
from . import control, linalg, image, nn, shapes, text  # noqa: F401  (registration)
from . import lists  # noqa: F401  (registration: recurrent models, TF1 TensorArrays)
from . import arrays, quant, random  # noqa: F401  (registration)
from . import xla_call_module  # noqa: F401  (registration: models exported from JAX)
from . import collective  # noqa: F401  (registration: collectives between ranks, hlobridge.distributed)
from .registry import REGISTRY, OpContext, OpDef, lookup, register  # noqa: F401
