"""Compute an f32 graph in bf16 or f16, keeping f32 where precision is made or lost.

    elementwise math (add, multiply, exp, compare, select, ...)   -> runs in the low type:
        f32 operands are converted down, the result is converted back up to f32
    dot_general, convolution                                       -> low operands, f32 result:
        the result type is StableHLO's "preferred element type", so products
        accumulate in f32 (IREE emits a mixed-precision matmul)
    reduce, reduce_window, scatter, select_and_scatter, sort       -> untouched: their bodies
        add in f32, so sums accumulate in f32 (inputs are the f32 up-converts)
    reshape, transpose, broadcast, slice, concatenate, pad, ...     -> follow their operand:
        low when every f32 operand already is low (moved, never rounded again)
    the elementwise tail of each function result                    -> stays f32

Function arguments and results stay f32, so the signature does not change. The ops that
reach a result through elementwise and data-movement ops alone (up to the last contraction,
reduction or argument) stay f32, as mixed-precision training keeps f32 master weights and an
f32 optimizer: a cluster's variable updates (`var - lr * m / (sqrt(v) + eps)`) are such tails,
and computing them in bf16 rounds every variable to bf16 each step. Measured on mlp_adam
(Adam, 10 steps) before this rule: bf16 losses 137% off TensorFlow's, f16 NaN. The ops of the nodes
Keras' mixed_bfloat16 policy computes in f32 (batch norm and its gradient, softmax, the
cross-entropy losses: KERAS_F32_OPS) stay f32 too. The pass only
inserts converts; the precision stage then folds the converts of constants
(constant-fold), cancels each low->f32->low round trip (algebraic-simplify: that widening is
exact) and merges duplicate converts (cse), leaving chains of low-precision ops with one
convert at each f32 boundary.

f16 has a narrow range (max 65504, smallest normal 6e-5): use it for inference; training
gradients can underflow without loss scaling, which this pass does not add.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from iree.compiler import ir

from hlobridge.dialects import stablehlo as hlo

from .ir_helpers import element_type_name, ops_named, producer, producer_named

LOW_TYPES = {"bf16": np.dtype(ml_dtypes.bfloat16), "f16": np.dtype(np.float16)}
# Keras' mixed_bfloat16 policy keeps these in f32: BatchNormalization casts its input to f32
# (its moments and normalisation overflow or drift in bf16), a loss casts its prediction to its
# own f32 dtype, and the guide's last softmax layer is given dtype="float32". The lowering
# (lowering/driver.py) marks the ops of such nodes with KEEP_F32 when a module is to be reduced;
# this pass leaves them in f32 and removes the marks.
KERAS_F32_OPS = frozenset({"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3", "FusedBatchNormGrad",
                           "FusedBatchNormGradV2", "FusedBatchNormGradV3", "Softmax", "LogSoftmax",
                           "SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits"})
KEEP_F32 = "hlobridge.keep_f32"

ELEMENTWISE = frozenset(f"stablehlo.{n}" for n in (
    "abs add atan2 cbrt ceil clamp compare cosine divide exponential exponential_minus_one "
    "floor log log_plus_one logistic maximum minimum multiply negate power remainder "
    "round_nearest_afz round_nearest_even rsqrt select sign sine sqrt subtract tan tanh").split())
CONTRACTIONS = frozenset({"stablehlo.dot_general", "stablehlo.convolution"})
DATA_MOVEMENT = frozenset(f"stablehlo.{n}" for n in (
    "broadcast_in_dim concatenate dynamic_slice pad reshape reverse slice transpose").split())
# Ops whose regions are scalar combiners: what is inside them stays as it is (f32 accumulation).
_COMBINER_OWNERS = frozenset(f"stablehlo.{n}" for n in (
    "reduce reduce_window scatter select_and_scatter sort all_reduce reduce_scatter").split())


def _in_combiner(op: ir.Operation) -> bool:
    parent = op.parent
    while parent is not None and parent.name != "func.func":
        if parent.name in _COMBINER_OWNERS:
            return True
        parent = parent.parent
    return False


def _is_grouped(conv: ir.Operation) -> bool:
    """IREE 3.13 cannot compile a grouped (e.g. depthwise) convolution with low-precision
    operands and an f32 result ("tensor.collapse_shape ... expected collapsed type"), and with
    constant filters it compiled one that computed wrong numbers (cnn_infer_bn's softmax off
    by 0.3). Such convolutions stay in f32; they are memory-bound anyway."""
    return any(ir.IntegerAttr(conv.attributes[k]).value != 1
               for k in ("feature_group_count", "batch_group_count") if k in conv.attributes)


def _from_integer(value: ir.Value) -> bool:
    """Whether `value` is an integer converted to f32 (seen through data movement). Converting
    it down folds, inside IREE, into an int->bf16 conversion that IREE 3.13's llvm-cpu emits as
    a call to `__truncsfbf2`, which it does not link ("undefined symbol"; control_flow_v1's loop
    counter). The op reading it stays f32 (for f16 too, to keep one rule)."""
    op = producer(value)
    while op is not None and op.name in DATA_MOVEMENT:
        op = producer(op.operands[0])
    if op is None or op.name != "stablehlo.convert":
        return False
    return element_type_name(op.operands[0]).lstrip("u").startswith("i")


def _is_f32(value: ir.Value) -> bool:
    return isinstance(value.type, ir.RankedTensorType) and element_type_name(value) == "f32"


def _already_low(value: ir.Value, low: str) -> bool:
    """An up-convert from `low`, or a constant (which converts to low by folding)."""
    if producer_named(value, "stablehlo.constant") is not None:
        return True
    up = producer_named(value, "stablehlo.convert")
    return up is not None and element_type_name(up.operands[0]) == low


def _lower_operands(op: ir.Operation, low: np.dtype) -> None:
    with ir.InsertionPoint(op), op.location:
        for i, v in enumerate(op.operands):
            if _is_f32(v):
                op.operands[i] = hlo.convert(v, low)


def _raise_results(op: ir.Operation, low: np.dtype) -> None:
    """Give op's f32 results the low type, and their users an up-convert of them."""
    for result in op.results:
        if not _is_f32(result):
            continue
        with ir.InsertionPoint.after(op), op.location:
            result.set_type(hlo.tensor_type(hlo.shape_of(result), low))
            up = hlo.convert(result, np.float32)
        result.replace_all_uses_except(up, up.owner.operation)


def _result_tails(module: ir.Module) -> set:
    """Ops whose values reach a `func.return` through elementwise/data-movement ops only."""
    tail_ops = ELEMENTWISE | DATA_MOVEMENT | {"stablehlo.convert"}
    tails = set()
    for ret in ops_named(module, "func.return"):
        stack = list(ret.operands)
        while stack:
            op = producer(stack.pop())
            if op is not None and op.name in tail_ops and op not in tails:
                tails.add(op)
                stack.extend(op.operands)
    return tails


def reduce_precision(module: ir.Module, low: str) -> int:
    """Rewrite f32 compute to `low` ("bf16" or "f16"); returns how many ops now run in it."""
    if low not in LOW_TYPES:
        raise ValueError(f"precision must be one of {', '.join(LOW_TYPES)}, got '{low}'")
    rewritten = 0
    tails = _result_tails(module)
    for op in ops_named(module, ELEMENTWISE | CONTRACTIONS | DATA_MOVEMENT):
        if _in_combiner(op) or op in tails or KEEP_F32 in op.attributes:
            continue
        f32_operands = [v for v in op.operands if _is_f32(v)]
        if not f32_operands:
            continue
        if op.name in DATA_MOVEMENT and not all(_already_low(v, low) for v in f32_operands):
            continue
        if op.name == "stablehlo.convolution" and _is_grouped(op):
            continue
        if any(_from_integer(v) for v in f32_operands):
            continue
        _lower_operands(op, LOW_TYPES[low])
        if op.name not in CONTRACTIONS:  # contractions keep their f32 result: f32 accumulation
            _raise_results(op, LOW_TYPES[low])
        rewritten += 1
    unmark(module)
    return rewritten


def unmark(module: ir.Module) -> None:
    """Remove the KEEP_F32 marks (IREE gets no hlobridge attributes)."""
    def visit(op):
        if KEEP_F32 in op.attributes:
            del op.attributes[KEEP_F32]
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit)
