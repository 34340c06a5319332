"""Detection post-processing (hlobridge/ops/image/detection.py): NMS selection order, padding and
clustering; CropAndResize compiled against its kernel. tests/ops/test_tf_references.py ties the
kernels to TensorFlow (ties, thresholds, flipped corners, soft-NMS, empty inputs)."""

import numpy as np
import pytest

from hlobridge.errors import InputError
from hlobridge.frontend.graph_builder import GraphBuilder
from hlobridge.runtime.session import Session
from hlobridge.debug.testing import check_op, reference

from .cases import case

RNG = np.random.RandomState(1303)  # a stream of its own: collecting this module leaves other modules' inputs as they were

F32 = np.dtype(np.float32)
V4 = {"T": F32, "T_threshold": F32, "pad_to_max_output_size": True}


def boxes(n):
    """n boxes in [0, 1]^2, some with flipped corners (y2 < y1)."""
    b = RNG.rand(n, 4).astype(np.float32)
    b[::3] = b[::3, [2, 3, 0, 1]]
    return b


B10, S10 = boxes(10), RNG.rand(10).astype(np.float32)
TIED = np.round(S10 * 3).astype(np.float32) / 3
SAME_BOX = np.tile(np.array([[0, 0, 1, 1]], np.float32), (4, 1))
IMG = RNG.rand(2, 5, 6, 3).astype(np.float32)
CROPS = np.array([[0, 0, 1, 1], [0.1, 0.2, 0.7, 0.9], [-0.2, 0.1, 1.3, 0.5], [0.5, 0.5, 0.5, 0.5],
                  [0.9, 0.8, 0.1, 0.3]], np.float32)
CROP_IND = np.array([0, 1, 1, 0, 1], np.int32)


def v4(b, s, m, iou, score):
    return [b, s, np.int32(m), np.float32(iou), np.float32(score)]


CASES = [
    case("NonMaxSuppressionV4", v4(B10, S10, 7, 0.3, 0.1), V4, id="NMSV4"),
    case("NonMaxSuppressionV4", v4(B10, S10, 12, 0.3, 0.1), V4, id="NMSV4-more-than-boxes"),
    case("NonMaxSuppressionV4", v4(B10, TIED, 8, 0.5, 0.0), V4, id="NMSV4-tied-scores"),
    case("NonMaxSuppressionV4", v4(SAME_BOX, np.ones(4, np.float32), 4, 1.0, 0.0), V4, id="NMSV4-iou-1-keeps-all"),
    case("NonMaxSuppressionV4", v4(SAME_BOX, np.ones(4, np.float32), 4, 0.99, 0.0), V4, id="NMSV4-same-box"),
    case("NonMaxSuppressionV4", v4(np.zeros((0, 4), np.float32), np.zeros(0, np.float32), 3, 0.5, 0.0), V4,
         id="NMSV4-no-boxes"),
    case("NonMaxSuppressionV4", v4(B10, S10, 0, 0.5, 0.0), V4, id="NMSV4-max-0"),
    case("NonMaxSuppressionV4", [B10.astype(np.float16), TIED.astype(np.float16), np.int32(7), np.float16(0.4),
                                 np.float16(0.2)], dict(V4, T=np.dtype(np.float16), T_threshold=np.dtype(np.float16)),
         id="NMSV4-f16-ties"),
    case("NonMaxSuppressionV4", [B10, S10, np.int32(5), np.float16(0.3), np.float16(0.3)],
         dict(V4, T_threshold=np.dtype(np.float16)), id="NMSV4-f16-thresholds"),
    case("CropAndResize", [IMG, CROPS, CROP_IND, np.array([3, 4], np.int32)],
         {"T": F32, "extrapolation_value": -1.0}, id="CropAndResize-bilinear"),
    case("CropAndResize", [IMG, CROPS, CROP_IND, np.array([4, 3], np.int32)], {"T": F32, "method": "nearest"},
         id="CropAndResize-nearest"),
    case("CropAndResize", [IMG, CROPS, CROP_IND, np.array([1, 1], np.int32)], {"T": F32}, id="CropAndResize-1x1"),
    case("CropAndResize", [(IMG * 255).astype(np.uint8), CROPS, CROP_IND, np.array([2, 5], np.int32)],
         {"T": np.dtype(np.uint8)}, id="CropAndResize-uint8", atol=1e-4),
]


@pytest.mark.parametrize("op,inputs,attrs,kw", CASES)
def test_detection_op_matches_kernel(op, inputs, attrs, kw):
    check_op(op, inputs, attrs, **kw)


def test_nms_takes_the_lower_index_on_equal_scores():
    b = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [2, 2, 3, 3]], np.float32)
    (got,) = reference("NonMaxSuppressionV3", [b, np.array([0.5, 0.5, 0.5], np.float32), np.int32(3),
                                               np.float32(0.5), np.float32(0)], {"T": F32, "T_threshold": F32})
    np.testing.assert_array_equal(got, [0, 2])


def test_soft_nms_rescores_and_requeues():
    b = np.array([[0, 0, 1, 1], [0, 0, 1, 0.8], [0, 0, 0.2, 0.2]], np.float32)
    s = np.array([0.9, 0.8, 0.7], np.float32)
    idx, scores, valid = reference("NonMaxSuppressionV5", [b, s, np.int32(3), np.float32(0.5), np.float32(0.0),
                                                           np.float32(0.5)], {"T": F32, "pad_to_max_output_size": False})
    assert valid == 3 and idx[0] == 0 and scores[0] == np.float32(0.9)
    assert scores[1] < s[idx[1]] or idx[1] == 2  # box 1 (IoU 0.8 with box 0) lost score


def test_iou_threshold_outside_0_1_is_an_error():
    with pytest.raises(InputError, match=r"iou_threshold must be in \[0, 1\]"):
        reference("NonMaxSuppressionV2", [B10, S10, np.int32(3), np.float32(1.5)], {"T": F32, "T_threshold": F32})


def _detection_graph(pad: bool):
    g = GraphBuilder()
    b = g.placeholder("boxes", F32, (10, 4))
    s = g.placeholder("logits", F32, (10,))
    p = g.op("Sigmoid", [s], name="scores", T=F32)
    e = g.op("Exp", [b], name="decoded", T=F32)
    n = g.op("NonMaxSuppressionV4", [e, p, g.const("m", np.int32(5)), g.const("iou", np.float32(0.5)),
                                     g.const("score", np.float32(0.2))], name="nms", T=F32, T_threshold=F32,
             pad_to_max_output_size=pad)
    g.op("GatherV2", [e, n, g.const("axis", np.int32(0))], name="picked", Tparams=F32, Tindices=np.dtype(np.int32),
         Taxis=np.dtype(np.int32), batch_dims=0)
    return g.graph()


@pytest.mark.parametrize("pad", [True, False])
def test_unpadded_nms_stays_on_its_kernel_with_a_reason(pad):
    feeds = {"boxes:0": B10 / 3, "logits:0": S10 * 4 - 2}
    compiled_session = Session(_detection_graph(pad), jit="auto", cache_dir=False, min_cluster_size=1)
    clustering = compiled_session.clustering(["picked:0", "nms:1"], feeds)
    if pad:
        assert "nms" in clustering.cluster_of
    else:
        assert clustering.reasons["nms"] == "uncompilable_config"
        assert "decoded" in clustering.cluster_of  # the numeric rest still compiles
    got = compiled_session.run(["picked:0", "nms:1"], feeds)
    want = Session(_detection_graph(pad), jit="off").run(["picked:0", "nms:1"], feeds)
    for g_, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g_), np.asarray(w), rtol=1e-6)


def test_std_sort_sorts_like_sorted_on_distinct_keys():
    from hlobridge.ops.image.stl_order import PriorityQueue, std_sort
    for n in (0, 1, 5, 16, 17, 40, 300):
        keys = list(RNG.permutation(n))
        assert std_sort(list(keys), lambda a, b: a < b) == sorted(keys)
        queue = PriorityQueue(lambda a, b: a < b)
        for k in keys:
            queue.push(k)
        assert [queue.pop() for _ in range(n)] == sorted(keys, reverse=True)


def test_crop_box_index_outside_the_batch_is_an_error_compiled_and_on_the_kernel():
    from hlobridge.errors import HlobridgeError
    from hlobridge.debug.testing import compiled
    inputs = [IMG, CROPS[:2], np.array([0, 2], np.int32), np.array([3, 4], np.int32)]
    with pytest.raises(InputError, match=r"box_ind 2 is not in \[0, 2\)"):
        reference("CropAndResize", inputs, {"T": F32})
    with pytest.raises(HlobridgeError, match=r"node 'op' \(CropAndResize\): box_ind must be in \[0, 2\)"):
        compiled("CropAndResize", inputs, {"T": F32})
