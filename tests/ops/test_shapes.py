"""Shape, layout and indexing ops: compiled on llvm-cpu, compared with their NumPy kernels."""

import numpy as np
import pytest

from hlobridge.frontend.graph import TensorRef
from hlobridge.frontend.graph_builder import GraphBuilder
from hlobridge.ops import registry
from hlobridge.analysis.shape_inference import infer_specs
from hlobridge.debug.testing import check_op, reference, single_op_graph

from .cases import case, randn

F32, I32, I64 = np.float32, np.int32, np.int64
X = randn(4, 5, 6)
M = randn(3, 4)
V = randn(5)


def a32(*values):
    return np.array(values, I32)


def strided(begin, end, strides, x=X, id=None, **masks):
    attrs = {"T": F32, "Index": I32, "begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0,
             "new_axis_mask": 0, "shrink_axis_mask": 0}
    attrs.update(masks)
    return case("StridedSlice", [x, a32(*begin), a32(*end), a32(*strides)], attrs,
                id=f"StridedSlice-{id}")


CASES = [
    # Shape queries: folded to constants from the static shape.
    case("Shape", [X], {"T": F32, "out_type": I32}),
    case("Shape", [M], {"T": F32, "out_type": I64}, id="Shape-int64"),
    case("ShapeN", [X, M, np.float32(1)], {"T": F32, "N": 3, "out_type": I32}),
    case("Size", [X], {"T": F32, "out_type": I32}),
    case("Rank", [X], {"T": F32}),
    # Reshape family.
    case("Reshape", [X, a32(20, 6)], {"T": F32, "Tshape": I32}),
    case("Reshape", [X, a32(-1, 3)], {"T": F32, "Tshape": I32}, id="Reshape-minus-one"),
    case("Reshape", [X, np.array([2, -1, 5], I64)], {"T": F32, "Tshape": I64}, id="Reshape-mid-minus-one"),
    case("Reshape", [V[:1], np.zeros(0, I32)], {"T": F32, "Tshape": I32}, id="Reshape-to-scalar"),
    case("ExpandDims", [M, I32(1)], {"T": F32, "Tdim": I32}),
    case("ExpandDims", [M, a32(-1)], {"T": F32, "Tdim": I32}, id="ExpandDims-neg"),
    case("Squeeze", [randn(1, 3, 1, 2)], {"T": F32, "squeeze_dims": []}, id="Squeeze-all"),
    case("Squeeze", [randn(1, 3, 1, 2)], {"T": F32, "squeeze_dims": [-2]}, id="Squeeze-neg"),
    case("Transpose", [X, a32(2, 0, 1)], {"T": F32, "Tperm": I32}),
    case("Transpose", [M, np.array([1, 0], I64)], {"T": F32, "Tperm": I64}, id="Transpose-2d"),
    case("InvertPermutation", [a32(2, 4, 0, 3, 1)], {"T": I32}),
    # Joining and splitting.
    case("ConcatV2", [M, randn(3, 2), I32(1)], {"T": F32, "N": 2, "Tidx": I32}, consts=(2,)),
    case("ConcatV2", [M, randn(1, 4), randn(2, 4), I32(-2)], {"T": F32, "N": 3, "Tidx": I32},
         consts=(3,), id="ConcatV2-neg-axis"),
    case("Concat", [I32(0), M, randn(2, 4)], {"T": F32, "N": 2}),
    case("Pack", [V, V + 1, V * 2], {"T": F32, "N": 3, "axis": 0}),
    case("Pack", [M, M * 2], {"T": F32, "N": 2, "axis": -1}, id="Pack-last"),
    case("Unpack", [X], {"T": F32, "num": 4, "axis": 0}),
    case("Unpack", [X], {"T": F32, "num": 6, "axis": -1}, id="Unpack-neg-axis"),
    case("Split", [I32(1), randn(2, 6)], {"T": F32, "num_split": 3}),
    case("Split", [I32(-1), X], {"T": F32, "num_split": 2}, id="Split-neg-axis"),
    case("SplitV", [randn(7, 2), a32(2, -1, 4), I32(0)], {"T": F32, "num_split": 3, "Tlen": I32}),
    case("SplitV", [X, np.array([1, 4], I64), I32(1)], {"T": F32, "num_split": 2, "Tlen": I64},
         id="SplitV-i64"),
    # Slicing.
    case("Slice", [X, a32(1, 0, 2), a32(2, -1, 3)], {"T": F32, "Index": I32}),
    case("Slice", [M, np.array([0, 1], I64), np.array([-1, -1], I64)], {"T": F32, "Index": I64},
         id="Slice-to-end"),
    strided([1, 0], [3, 5], [1, 2], id="basic"),
    strided([1, 3], [0, 5], [1, 1], id="begin-end-masks", begin_mask=1, end_mask=2),
    strided([0, 4], [0, 0], [-1, -2], id="negative-strides", begin_mask=1, end_mask=1),
    strided([-3, -1], [-1, -6], [1, -1], id="negative-bounds"),
    strided([2, -100], [100, 3], [1, 1], id="clamped"),
    strided([3], [1], [1], id="empty"),
    strided([5], [-100], [-1], id="negative-stride-clamped"),
    strided([1, 0, -1], [2, 0, 0], [1, 1, 1], id="shrink", shrink_axis_mask=5, begin_mask=2, end_mask=2),
    strided([0, 0, 2], [0, 0, 4], [1, 1, 1], id="new-axis", new_axis_mask=2, begin_mask=1, end_mask=1),
    strided([0, 1], [0, 2], [1, 1], id="ellipsis-shrink", ellipsis_mask=1, shrink_axis_mask=2),
    strided([0, 0, 0], [0, 0, 0], [1, 1, -2], id="newaxis-ellipsis-negstride",
            new_axis_mask=1, ellipsis_mask=2, begin_mask=4, end_mask=4),
    strided([1, 0, 0, 3], [2, 0, 0, 0], [1, 1, 1, -1], id="shrink-ellipsis-newaxis-neg",
            shrink_axis_mask=1, ellipsis_mask=2, new_axis_mask=4),
    strided([1, 2, 3], [2, 3, 4], [1, 1, 1], id="all-shrunk", shrink_axis_mask=7),
    strided([-1], [0], [1], x=V, id="shrink-negative", shrink_axis_mask=1),
    strided([0, 1], [0, 0], [1, 1], id="mask-collisions", ellipsis_mask=1, new_axis_mask=3,
            shrink_axis_mask=2),
    # Tile, broadcast, fill, range.
    case("Tile", [M, a32(2, 3)], {"T": F32, "Tmultiples": I32}),
    case("Tile", [X, np.array([1, 2, 1], I64)], {"T": F32, "Tmultiples": I64}, id="Tile-i64"),
    case("BroadcastTo", [V, a32(3, 5)], {"T": F32, "Tidx": I32}),
    case("BroadcastTo", [randn(3, 1), a32(2, 3, 4)], {"T": F32, "Tidx": I32}, id="BroadcastTo-rank-up"),
    case("Fill", [a32(2, 3), np.float32(1.5)], {"T": F32, "index_type": I32}),
    case("Fill", [np.array([4], I64), I32(7)], {"T": I32, "index_type": I64}, id="Fill-int"),
    case("Range", [I32(2), I32(11), I32(3)], {"Tidx": I32}),
    case("Range", [F32(1.0), F32(-1.0), F32(-0.25)], {"Tidx": F32}, id="Range-float"),
    case("Range", [I64(5), I64(70005), I64(1)], {"Tidx": I64}, id="Range-large-not-folded"),
    case("BroadcastGradientArgs", [a32(2, 3, 1), a32(3, 4)], {"T": I32}),
    case("BroadcastGradientArgs", [np.array([1, 1], I64), np.array([5, 1, 1], I64)], {"T": I64},
         id="BroadcastGradientArgs-ones"),
    # Gathers.
    case("GatherV2", [X, a32(3, 0, 3), I32(1)],
         {"Tparams": F32, "Tindices": I32, "Taxis": I32, "batch_dims": 0}),
    case("GatherV2", [X, np.array([[5, 0], [1, 1]], I64), I32(-1)],
         {"Tparams": F32, "Tindices": I64, "Taxis": I32, "batch_dims": 0}, id="GatherV2-2d-neg-axis"),
    case("GatherV2", [X, np.array([[0, 4], [1, 1], [3, 2], [4, 0]], I32), I32(1)],
         {"Tparams": F32, "Tindices": I32, "Taxis": I32, "batch_dims": 1}, id="GatherV2-batch"),
    case("GatherV2", [X, np.array([[0, 5, 1], [1, 1, 2], [3, 2, 0], [4, 0, 0]], I32), I32(2)],
         {"Tparams": F32, "Tindices": I32, "Taxis": I32, "batch_dims": -1}, id="GatherV2-batch-axis2"),
    case("Gather", [M, a32(2, 0, 2, 1)], {"Tparams": F32, "Tindices": I32, "validate_indices": True}),
    case("GatherNd", [X, np.array([[1, 2], [3, 0], [0, 4]], I32)], {"Tparams": F32, "Tindices": I32}),
    case("GatherNd", [M, np.array([[[1, 2]], [[2, 3]]], I64)], {"Tparams": F32, "Tindices": I64},
         id="GatherNd-full-index"),
    case("GatherNd", [M, np.array([2], I32)], {"Tparams": F32, "Tindices": I32}, id="GatherNd-one-row"),
    case("DynamicStitch", [a32(0, 2), a32(1, 3), randn(2, 3), randn(2, 3)], {"T": F32, "N": 2},
         consts=(0, 1)),
    case("DynamicStitch", [I32(4), np.array([[0, 1], [1, 2]], I32), randn(3), randn(2, 2, 3)],
         {"T": F32, "N": 2}, consts=(0, 1), id="DynamicStitch-overlap-gap"),
    case("ParallelDynamicStitch", [a32(1, 0), a32(2), randn(2), randn(1)], {"T": F32, "N": 2},
         consts=(0, 1)),
    # Padding, reversing.
    case("Pad", [M, a32(1, 2, 0, 3).reshape(2, 2)], {"T": F32, "Tpaddings": I32}),
    case("PadV2", [M, np.array([[0, 1], [2, 0]], I64), np.float32(-3.5)], {"T": F32, "Tpaddings": I64}),
    case("MirrorPad", [X, a32(1, 2, 0, 0, 3, 2).reshape(3, 2)],
         {"T": F32, "Tpaddings": I32, "mode": "REFLECT"}),
    case("MirrorPad", [M, a32(3, 1, 2, 4).reshape(2, 2)], {"T": F32, "Tpaddings": I32, "mode": "SYMMETRIC"},
         id="MirrorPad-symmetric"),
    case("Reverse", [X, np.array([True, False, True])], {"T": F32}),
    case("ReverseV2", [X, a32(-1, 1)], {"T": F32, "Tidx": I32}),
    # OneHot, cumulative ops.
    case("OneHot", [a32(0, 2, -1, 5, 1), I32(4), F32(1), F32(0)], {"T": F32, "TI": I32, "axis": -1}),
    case("OneHot", [np.array([[1, 0], [3, 3]], I64), I32(3), I32(5), I32(-1)],
         {"T": I32, "TI": I64, "axis": 0}, id="OneHot-axis0"),
]
CASES += [
    case("TopKV2", [X, I32(3)], {"T": F32, "Tk": I32, "sorted": True}),
    case("TopKV2", [np.array([[3, 1, 3, 2, 1], [0, 0, 0, 5, 5]], I32), I32(4)],
         {"T": I32, "Tk": I32, "sorted": True, "index_type": I64}, id="TopKV2-ties-int"),
]
for op in ("Cumsum", "Cumprod"):
    base = randn(3, 4) / 2 + 1
    for exclusive in (False, True):
        for rev in (False, True):
            CASES.append(case(op, [base, I32(1 if rev else -2)],
                              {"T": F32, "Tidx": I32, "exclusive": exclusive, "reverse": rev},
                              id=f"{op}-excl{int(exclusive)}-rev{int(rev)}", rtol=1e-5))
CASES.append(case("Cumsum", [a32(1, 2, 3, 4), I32(0)], {"T": I32, "Tidx": I32, "exclusive": True,
                                                      "reverse": False}, id="Cumsum-int"))


@pytest.mark.parametrize("op,inputs,attrs,kw", CASES)
def test_shape_op_matches_kernel(op, inputs, attrs, kw):
    check_op(op, inputs, attrs, **kw)


def test_strided_slice_kernel_is_numpy_indexing():
    attrs = {"T": F32, "Index": I32, "begin_mask": 0, "end_mask": 4, "ellipsis_mask": 0,
             "new_axis_mask": 2, "shrink_axis_mask": 1}
    (got,) = reference("StridedSlice", [X, a32(-1, 0, 4), a32(0, 0, 0), a32(1, 1, -2)], attrs)
    np.testing.assert_array_equal(got, X[-1, None, 4::-2])


def test_broadcast_gradient_args_kernel():
    (r0, r1) = reference("BroadcastGradientArgs", [a32(2, 3, 1), a32(3, 4)], {"T": I32})
    np.testing.assert_array_equal(r0, [2])
    np.testing.assert_array_equal(r1, [0])
    (r0, r1) = reference("BroadcastGradientArgs", [a32(1, 1), a32(5, 1, 1)], {"T": I32})
    np.testing.assert_array_equal(r0, [0, 1, 2])
    np.testing.assert_array_equal(r1, [1, 2])


def _run_kernel(op, inputs, attrs):
    """Like testing.reference, for outputs whose inferred shapes keep None dims (data-dependent)."""
    graph, _ = single_op_graph(op, inputs, attrs)
    specs = infer_specs(graph)
    node = graph.nodes["op"]
    outs = [specs[r] for r in sorted((r for r in specs if r.node == "op"), key=lambda r: r.index)]
    ctx = registry.OpContext(node, [specs[r] for r in node.inputs], outs)
    values = registry.as_list(registry.lookup(op).kernel(ctx, *inputs))
    for v, s in zip(values, outs):
        assert v.dtype == s.dtype and len(v.shape) == len(s.shape)
        assert all(d is None or d == n for d, n in zip(s.shape, v.shape))
    return values


def test_where_and_unique_run_on_kernels():
    x = np.array([[True, False], [False, True], [True, True]])
    (where,) = _run_kernel("Where", [x], {"T": np.bool_})
    np.testing.assert_array_equal(where, [[0, 0], [1, 1], [2, 0], [2, 1]])
    (y, idx) = _run_kernel("Unique", [np.array([4, 1, 4, 7, 1, 1], I32)], {"T": I32, "out_idx": I32})
    np.testing.assert_array_equal(y, [4, 1, 7])  # order of first appearance, like TF
    np.testing.assert_array_equal(idx, [0, 1, 0, 2, 1, 1])
    assert not registry.lookup("Where").compiles and not registry.lookup("Unique").compiles


def _gradient_shapes_graph(batch):
    b = GraphBuilder()
    x = b.placeholder("x", F32, (batch, 3, 4))
    y = b.placeholder("y", F32, (4,))
    sx = b.op("Shape", [x], name="sx", T=F32, out_type=I32)
    sy = b.op("Shape", [y], name="sy", T=F32, out_type=I32)
    b.op("BroadcastGradientArgs", [sx, sy], name="bga", T=I32, num_outputs=2)
    size = b.op("Size", [x], name="size", T=F32, out_type=I32)
    b.op("Reshape", [x, b.op("Pack", [size], name="flat", T=I32, N=1, axis=0)], name="r", T=F32, Tshape=I32)
    return b.graph()


def test_shape_and_broadcast_gradient_args_fold_to_constants():
    specs = infer_specs(_gradient_shapes_graph(2))
    np.testing.assert_array_equal(specs[TensorRef("sx", 0)].value, [2, 3, 4])
    np.testing.assert_array_equal(specs[TensorRef("bga", 0)].value, np.zeros(0, I32))
    np.testing.assert_array_equal(specs[TensorRef("bga", 1)].value, [0, 1])
    assert specs[TensorRef("size", 0)].value == 24
    assert specs[TensorRef("r", 0)].shape == (24,)


def test_shape_ops_infer_with_unknown_batch():
    specs = infer_specs(_gradient_shapes_graph(None))
    sx = specs[TensorRef("sx", 0)]
    assert sx.value is None and sx.shape == (3,)
    np.testing.assert_array_equal(specs[TensorRef("sy", 0)].value, [4])
    assert specs[TensorRef("bga", 0)].value is None and specs[TensorRef("bga", 0)].shape == (None,)
    assert specs[TensorRef("r", 0)].shape == (None,)


def test_infer_keeps_unknown_batch_dims():
    b = GraphBuilder()
    x = b.placeholder("x", F32, (None, 3, 4))
    b.op("Reshape", [x, b.const("s", a32(-1, 12))], name="reshape", T=F32, Tshape=I32)
    b.op("StridedSlice", [x, b.const("b", a32(0, 1)), b.const("e", a32(0, 3)), b.const("st", a32(1, 1))],
         name="ss", T=F32, Index=I32, begin_mask=1, end_mask=1, ellipsis_mask=0, new_axis_mask=0,
         shrink_axis_mask=0)
    b.op("ConcatV2", [x, x, b.const("ax", I32(-1))], name="cat", T=F32, N=2, Tidx=I32)
    b.op("GatherV2", [x, b.const("i", a32(0, 2)), b.const("ax1", I32(2))], name="g",
         Tparams=F32, Tindices=I32, Taxis=I32, batch_dims=0)
    b.op("Sum", [x, b.const("r", a32(0))], name="sum", T=F32, Tidx=I32, keep_dims=True)
    b.op("Transpose", [x, b.const("p", a32(2, 0, 1))], name="t", T=F32, Tperm=I32)
    b.op("Split", [b.const("sax", I32(2)), x], name="split", T=F32, num_split=2, num_outputs=2)
    specs = infer_specs(b.graph())
    want = {"reshape": (None, 12), "ss": (None, 2, 4), "cat": (None, 3, 8), "g": (None, 3, 2),
            "sum": (1, 3, 4), "t": (4, None, 3), "split": (None, 3, 2)}
    for name, shape in want.items():
        assert specs[TensorRef(name, 0)].shape == shape, name
