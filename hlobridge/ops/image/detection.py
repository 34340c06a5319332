"""Detection post-processing: NonMaxSuppression (V1-V5, WithOverlaps), CombinedNonMaxSuppression
(CropAndResize: crop_and_resize.py).

The kernels reproduce TensorFlow's CPU kernels (core/kernels/image/non_max_suppression_op.cc)
to the selection: candidates are taken from a priority queue, highest
score first and, on equal scores, lowest box index first; a candidate is dropped when its
overlap with an already selected box is > iou_threshold (computed in float32, with the corners
of each box sorted first, and 0 for a box of no area); only scores > score_threshold enter.
Soft-NMS (V5, soft_nms_sigma > 0) scales a candidate's score by exp(-0.5 * iou^2 / sigma) per
selected box it has not yet met and re-queues it, as TF does.

What compiles (as tf2xla's image_ops.cc): NonMaxSuppressionV4 with pad_to_max_output_size, whose
output has the static size max_output_size; without padding (V4 unpadded, V2, V3, V5, V1,
WithOverlaps) the output size depends on the data, and the node runs on its kernel with a
clustering reason. CombinedNonMaxSuppression runs on its kernel.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ...errors import InputError
from ...spec import TensorSpec
from ..helpers import value_of
from ..registry import register
from .stl_order import PriorityQueue, std_sort
from ..traced import Traced
from ..traced_logic import compare, logical_or, select

F32 = np.dtype(np.float32)
I32 = np.dtype(np.int32)

# -- overlap, for arrays and Traced values --------------------------------------------------------


def box_iou(a, b):
    """Intersection over union of boxes a and b, each (y1, x1, y2, x2) of broadcastable float32
    arrays or Traced values; 0 where either box has no area (TF's IOU, in the same order)."""
    ymin_a, xmin_a = np.minimum(a[0], a[2]), np.minimum(a[1], a[3])
    ymax_a, xmax_a = np.maximum(a[0], a[2]), np.maximum(a[1], a[3])
    ymin_b, xmin_b = np.minimum(b[0], b[2]), np.minimum(b[1], b[3])
    ymax_b, xmax_b = np.maximum(b[0], b[2]), np.maximum(b[1], b[3])
    area_a = (ymax_a - ymin_a) * (xmax_a - xmin_a)
    area_b = (ymax_b - ymin_b) * (xmax_b - xmin_b)
    inter = (np.maximum(np.minimum(ymax_a, ymax_b) - np.maximum(ymin_a, ymin_b), 0.0)
             * np.maximum(np.minimum(xmax_a, xmax_b) - np.maximum(xmin_a, xmin_b), 0.0))
    iou = inter / (area_a + area_b - inter)
    return select(logical_or(compare("LE", area_a, 0), compare("LE", area_b, 0)), 0.0, iou)


def _np_iou_rows(boxes: np.ndarray, i: int, others) -> np.ndarray:
    """float32 IoU of box i with each box in `others` (indices)."""
    b = boxes.astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        return box_iou(tuple(b[i, k] for k in range(4)), tuple(b[others, k] for k in range(4)))


# -- the NMS family -------------------------------------------------------------------------------
# op -> input index of (iou_threshold, score_threshold, soft_nms_sigma), None where the op lacks it


_NMS_INPUTS = {
    "NonMaxSuppression": (None, None, None),
    "NonMaxSuppressionV2": (3, None, None),
    "NonMaxSuppressionV3": (3, 4, None),
    "NonMaxSuppressionV4": (3, 4, None),
    "NonMaxSuppressionV5": (3, 4, 5),
    "NonMaxSuppressionWithOverlaps": (3, 4, None),
}


def _padded(ctx) -> bool:
    return bool(ctx.attr("pad_to_max_output_size", False))


def _nms_infer(ctx):
    first, scores = ctx.inputs[:2]
    overlaps = ctx.op == "NonMaxSuppressionWithOverlaps"
    columns = first.shape[0] if overlaps and first.shape is not None else 4
    if first.shape is not None and (len(first.shape) != 2 or first.shape[1] not in (columns, None)):
        raise ctx.error(f"{'overlaps' if overlaps else 'boxes'} must be [num_boxes, "
                        f"{'num_boxes' if overlaps else 4}], got shape {list(first.shape)}")
    if scores.shape is not None and len(scores.shape) != 1:
        raise ctx.error(f"scores must be 1-D, got shape {list(scores.shape)}")
    for i in (2, *(j for j in _NMS_INPUTS[ctx.op] if j is not None)):
        if ctx.inputs[i].shape not in (None, ()):
            raise ctx.error(f"input {i} ({ctx.node.inputs[i]}) must be a scalar, got shape {list(ctx.inputs[i].shape)}")
    size = value_of(ctx, 2)
    n = (int(size),) if size is not None and _padded(ctx) else (None,)
    outs = [TensorSpec(I32, n)]
    if ctx.op == "NonMaxSuppressionV5":
        outs.append(TensorSpec(scores.dtype, n))
    if ctx.op in ("NonMaxSuppressionV4", "NonMaxSuppressionV5"):
        outs.append(TensorSpec(I32, ()))
    return outs


def _nms_thresholds(ctx, inputs):
    """(iou_threshold, score_threshold, soft_nms_sigma) as the scores' type, checked as TF does."""
    t = np.dtype(inputs[1].dtype).type
    i_iou, i_score, i_sigma = _NMS_INPUTS[ctx.op]
    iou = t(ctx.attr("iou_threshold", 0.5)) if i_iou is None else t(inputs[i_iou])
    if ctx.op != "NonMaxSuppressionWithOverlaps" and not 0 <= iou <= 1:
        raise ctx.error(f"iou_threshold must be in [0, 1], got {iou}", InputError)
    score = np.finfo(t).min if i_score is None else t(inputs[i_score])
    sigma = t(0) if i_sigma is None else t(inputs[i_sigma])
    return iou, score, sigma


def nms_select(similarity, scores: np.ndarray, max_output: int, iou_threshold, score_threshold, sigma):
    """TF's DoNonMaxSuppressionOp: (selected indices, their scores), in selection order.

    similarity(i, js) -> float32 overlaps of box i with boxes js. The queue holds
    (-score, index, suppress_begin): highest score first, ties to the lowest index.
    """
    t = scores.dtype.type
    soft = sigma > 0
    scale = t(-0.5) / sigma if soft else t(0)
    queue = [(-s, i, 0) for i, s in enumerate(scores) if s > score_threshold]
    heapq.heapify(queue)
    selected, selected_scores = [], []
    while len(selected) < max_output and queue:
        neg, i, begin = heapq.heappop(queue)
        original = score = t(-neg)
        later = selected[begin:][::-1]  # the selected boxes it has not met, latest first
        sims = similarity(i, later).astype(t) if later else np.zeros(0, t)
        if not soft:  # every weight is exp(0) = 1: only the hard test matters
            if (sims > iou_threshold).any():
                continue
            sims = ()
        for sim in sims:  # soft: scale by each weight (in T, as TF), until at most score_threshold
            score = t(score * t(math.exp(float(t(scale * sim) * sim))))
            if score <= score_threshold:
                break
        if score == original:
            selected.append(i)
            selected_scores.append(score)
        elif score > score_threshold:
            heapq.heappush(queue, (-score, i, len(selected)))
    return selected, selected_scores


def _np_nms(ctx, *inputs):
    first, scores = inputs[0], np.asarray(inputs[1])
    max_output = int(inputs[2])
    if max_output < 0:
        raise ctx.error(f"max_output_size must be non-negative, got {max_output}", InputError)
    n = first.shape[0]
    if scores.shape != (n,):
        raise ctx.error(f"scores has shape {list(scores.shape)}, expected [{n}]", InputError)
    iou, score_threshold, sigma = _nms_thresholds(ctx, inputs)
    if ctx.op == "NonMaxSuppressionWithOverlaps":
        def similarity(i, js):
            return first[i, js].astype(np.float32)
    else:
        def similarity(i, js):
            return _np_iou_rows(first, i, js)
    selected, kept_scores = nms_select(similarity, scores, max_output, iou, score_threshold, sigma)
    valid = len(selected)
    if _padded(ctx):
        selected += [0] * (max_output - valid)
        kept_scores += [0] * (max_output - valid)
    outs = [np.asarray(selected, I32)]
    if ctx.op == "NonMaxSuppressionV5":
        outs.append(np.asarray(kept_scores, scores.dtype))
    if ctx.op in ("NonMaxSuppressionV4", "NonMaxSuppressionV5"):
        outs.append(np.asarray(valid, I32))
    return outs


def _unpadded(node):
    if not node.attrs.get("pad_to_max_output_size", False):
        return ("without pad_to_max_output_size the number of selected boxes depends on the data "
                "(XLA refuses it too)")
    return None


def _nms_v4_lower(ctx, boxes, scores, _max_output, iou_threshold, score_threshold):
    """Padded NMS with static shapes, as tf2xla does it: sort by score (descending, the lower
    index first on ties), take the [N, N] IoU > iou_threshold matrix of the sorted
    boxes, then one pass over the sorted boxes (a while loop): a box still kept suppresses every
    later box it overlaps. The first max_output_size kept boxes are TF's selection (TF's queue
    visits candidates in the same order and suppresses by the same rule). Scores and thresholds
    compare in T, overlaps are computed in float32 and compared in T, as TF's kernel does."""
    if not _padded(ctx):
        raise ctx.lowering_error(_unpadded(ctx.node))
    n = hlo.shape_of(boxes)[0]
    m = int(ctx.const(2))
    if m < 0:
        raise ctx.lowering_error(f"max_output_size must be non-negative, got {m}")
    if n == 0 or m == 0:
        return hlo.splat(0, [m], I32), hlo.constant(np.zeros((), I32))
    t = np.dtype(ctx.inputs[1].dtype)
    iou_threshold, score_threshold = (_as_type(v, ctx.inputs[i].dtype, t) for v, i in ((iou_threshold, 3),
                                                                                      (score_threshold, 4)))
    iota = hlo.iota([n], I32, 0)
    # NaN scores never qualify (NaN > t is false); as -inf they keep the sort a strict order.
    key = hlo.select(hlo.compare("EQ", scores, scores), scores, hlo.scalar_like(-np.inf, scores))
    key, order = hlo.sort([key, iota], 0, _higher_then_lower_index)
    keep = hlo.compare("GT", key, hlo.broadcast_to(score_threshold, [n]))
    sorted_boxes = _as_type(_take_rows(boxes, order, n), t, F32)
    coords = [Traced(hlo.reshape(hlo.slice(sorted_boxes, [0, k], [n, k + 1]), [n]), F32) for k in range(4)]
    rows = tuple(Traced(hlo.reshape(c.value, [n, 1]), F32) for c in coords)
    cols = tuple(Traced(hlo.reshape(c.value, [1, n]), F32) for c in coords)
    iou = _as_type(box_iou(rows, cols).value, F32, t)
    overlap = hlo.compare("GT", iou, hlo.broadcast_to(iou_threshold, [n, n]))
    keep = _greedy_pass(overlap, keep, n)
    # kept boxes first, each group in score order: sorted on "not kept" * n + sorted position
    rank = hlo.add(hlo.multiply(hlo.convert(hlo.unary("not", keep), I32), hlo.splat(n, [n], I32)), iota)
    _, chosen = hlo.sort([rank, order], 0, lambda a, b, _i, _j: hlo.compare("LT", a, b))
    valid = hlo.reduce(hlo.convert(keep, I32), hlo.constant(np.zeros((), I32)), [0])
    valid = hlo.binary("minimum", valid, hlo.constant(np.asarray(m, I32)))
    if m <= n:
        chosen = hlo.slice(chosen, [0], [m])
    else:
        chosen = hlo.pad(chosen, hlo.constant(np.zeros((), I32)), [0], [m - n])
    live = hlo.compare("LT", hlo.iota([m], I32, 0), hlo.broadcast_to(valid, [m]))
    return hlo.select(live, chosen, hlo.splat(0, [m], I32)), valid


def _as_type(x, dtype, to):
    """x (of `dtype`) converted to `to`, or x itself."""
    return x if np.dtype(dtype) == np.dtype(to) else hlo.convert(x, to)


def _higher_then_lower_index(a, b, i, j):
    """Sort comparator: higher score first, the lower index first on equal scores (TF's queue
    order; spelled out: IREE 3.13 may rewrite a sort into its own top-k, which ignores
    is_stable, see shapes/scans.py)."""
    tie = hlo.binary("and", hlo.compare("EQ", a, b), hlo.compare("LT", i, j))
    return hlo.binary("or", hlo.compare("GT", a, b), tie)


def _take_rows(x, rows, n):
    """x[rows] for x [N, K] and rows [n] int32."""
    k = hlo.shape_of(x)[1]
    return hlo.gather(x, hlo.reshape(rows, [n, 1]), [n, k], offset_dims=[1], collapsed_slice_dims=[0],
                      start_index_map=[0], index_vector_dim=1, slice_sizes=[1, k])


def _greedy_pass(overlap, keep, n):
    """For i = 0 .. n-1: if keep[i], keep[j] = False for every j > i with overlap[i, j]."""
    zero = hlo.constant(np.zeros((), I32))
    later_than = hlo.iota([n], I32, 0)

    def cond(i, _keep):
        return hlo.compare("LT", i, hlo.constant(np.asarray(n, I32)))

    def body(i, keep):
        row = hlo.reshape(hlo.dynamic_slice(overlap, [i, zero], [1, n]), [n])
        kept = hlo.broadcast_to(hlo.reshape(hlo.dynamic_slice(keep, [i], [1]), []), [n])
        later = hlo.compare("GT", later_than, hlo.broadcast_to(i, [n]))
        kill = hlo.binary("and", hlo.binary("and", row, later), kept)
        return [hlo.add(i, hlo.constant(np.asarray(1, I32))), hlo.binary("and", keep, hlo.unary("not", kill))]
    return hlo.while_([zero, keep], cond, body)[1]


_NMS_ATTRS = {
    "NonMaxSuppression": ("iou_threshold",),
    "NonMaxSuppressionV2": ("T", "T_threshold"),
    "NonMaxSuppressionV3": ("T", "T_threshold"),
    "NonMaxSuppressionV4": ("T", "T_threshold", "pad_to_max_output_size"),
    "NonMaxSuppressionV5": ("T", "pad_to_max_output_size"),
    "NonMaxSuppressionWithOverlaps": (),
}
_NMS_OUTPUTS = {"NonMaxSuppressionV4": ("selected_indices", "valid_outputs"),
                "NonMaxSuppressionV5": ("selected_indices", "selected_scores", "valid_outputs")}
for _op, _attrs in _NMS_ATTRS.items():
    _v4 = _op == "NonMaxSuppressionV4"
    register(_op, infer=_nms_infer, kernel=_np_nms, attrs=_attrs, output_args=_NMS_OUTPUTS.get(_op, ()),
             lower=_nms_v4_lower if _v4 else None, uncompilable=_unpadded if _v4 else None,
             const_inputs=(2,) if _v4 else (),  # V1 and WithOverlaps take float32 only
             dtypes=("float32",) if "T" not in _attrs else ("float16", "float32"))

# -- CombinedNonMaxSuppression --------------------------------------------------------------------


def _combined_sizes(ctx, per_class, total, num_classes):
    """(size per class as TF caps it, detections per batch: max_total_size, or with pad_per_class
    at most max_output_size_per_class * num_classes)."""
    if per_class <= 0:
        raise ctx.error("max_output_size_per_class must be positive", InputError)
    if total <= 0:
        raise ctx.error("max_total_size must be > 0", InputError)
    return total if not ctx.attr("pad_per_class", False) else min(total, per_class * num_classes)


def _combined_infer(ctx):
    boxes, scores = ctx.inputs[:2]
    if boxes.shape is not None and (len(boxes.shape) != 4 or boxes.shape[3] not in (None, 4)):
        raise ctx.error(f"boxes must be [batch, num_boxes, q, 4], got shape {list(boxes.shape)}")
    if scores.shape is not None and len(scores.shape) != 3:
        raise ctx.error(f"scores must be [batch, num_boxes, num_classes], got shape {list(scores.shape)}")
    batch = boxes.shape[0] if boxes.shape is not None else (scores.shape[0] if scores.shape is not None else None)
    per_class, total = value_of(ctx, 2), value_of(ctx, 3)
    classes = scores.shape[2] if scores.shape is not None else None
    size = None
    if total is not None and not ctx.attr("pad_per_class", False):
        size = int(total)
    elif total is not None and per_class is not None and classes is not None:
        size = min(int(total), int(per_class) * classes)
    return [TensorSpec(F32, (batch, size, 4)), TensorSpec(F32, (batch, size)), TensorSpec(F32, (batch, size)),
            TensorSpec(I32, (batch,))]


def _nms_per_class(boxes: np.ndarray, scores: np.ndarray, size: int, iou_threshold, score_threshold) -> list:
    """TF's DoNMSPerClass: (box, score) of the boxes kept for one class, in selection order. Its
    queue compares scores only, so equal scores come out in libstdc++'s heap order."""
    queue = PriorityQueue(lambda a, b: a[1] < b[1])
    for i, s in enumerate(scores):
        if s > score_threshold:
            queue.push((i, s))
    selected = []
    while len(selected) < size and len(queue):
        i, s = queue.pop()
        later = [j for j, _ in selected][::-1]
        if not later or not (_np_iou_rows(boxes, i, later) > iou_threshold).any():
            selected.append((i, s))
    return selected


def _np_combined_nms(ctx, boxes, scores, per_class, total, iou_threshold, score_threshold):
    """TF's BatchedNonMaxSuppressionOp: per batch and class, hard NMS keeps at most
    min(max_output_size_per_class, num_boxes) boxes into the class's slots; all slots (empty ones
    score -inf) are sorted by score with std::sort and the first valid ones taken, boxes clipped to
    [0, 1] with clip_boxes. Ties follow libstdc++'s heap and introsort (stl_order.py), as in TF."""
    batch, num_boxes, q, _ = boxes.shape
    num_classes = scores.shape[2]
    if scores.shape[:2] != (batch, num_boxes) or q not in (1, num_classes):
        raise ctx.error(f"boxes {list(boxes.shape)} and scores {list(scores.shape)} do not match", InputError)
    iou_threshold, score_threshold = np.float32(iou_threshold), np.float32(score_threshold)
    if not 0 <= iou_threshold <= 1:
        raise ctx.error(f"iou_threshold must be in [0, 1], got {iou_threshold}", InputError)
    size = _combined_sizes(ctx, int(per_class), int(total), num_classes)
    per_class_size = min(int(per_class), num_boxes)
    out_boxes = np.zeros((batch, size, 4), F32)
    out_scores, out_classes = np.zeros((batch, size), F32), np.zeros((batch, size), F32)
    valid = np.zeros(batch, I32)
    clip = ctx.attr("clip_boxes", True)
    for b in range(batch):
        slots = [(-1, np.float32(-np.inf), -1)] * (per_class_size * num_classes)  # (box, score, class)
        for c in range(num_classes):
            kept = _nms_per_class(boxes[b, :, c if q > 1 else 0].astype(F32), scores[b, :, c].astype(F32),
                                  per_class_size, iou_threshold, score_threshold)
            for k, (i, s) in enumerate(kept):
                slots[c * per_class_size + k] = (i, s, c)
        std_sort(slots, lambda x, y: y[1] < x[1])
        valid[b] = min(sum(1 for i, _, _ in slots if i >= 0), size)
        for k, (i, s, c) in enumerate(slots[:valid[b]]):
            box = boxes[b, i, c if q > 1 else 0].astype(F32)
            out_boxes[b, k] = np.clip(box, 0, 1) if clip else box
            out_scores[b, k], out_classes[b, k] = s, c
    return out_boxes, out_scores, out_classes, valid


register("CombinedNonMaxSuppression", infer=_combined_infer, kernel=_np_combined_nms,
         attrs=("pad_per_class", "clip_boxes"),
         output_args=("nmsed_boxes", "nmsed_scores", "nmsed_classes", "valid_detections"))
