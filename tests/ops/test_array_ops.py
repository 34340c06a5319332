"""Issue 13's array ops (hlobridge/ops/arrays/, SpaceToBatch/BatchToSpace in shapes/layout.py,
SegmentXxxV2 in math/segments.py): compiled on llvm-cpu, compared with their NumPy kernels; TF's own
values for them are in tests/data/op_references.npz (test_tf_references.py)."""

import ml_dtypes
import numpy as np
import pytest

from hlobridge.errors import InputError, ShapeInferenceError
from hlobridge.debug.testing import check_op, reference

from .cases import case

F32, F64, I32, I64 = np.float32, np.float64, np.int32, np.int64
# A stream of its own: drawing from cases.RNG at import would change the inputs of every test
# module collected after this one.
RNG = np.random.RandomState(1313)


def randn(*shape, dtype=F32):
    return RNG.randn(*shape).astype(dtype)


def a32(*values):
    return np.array(values, I32)


X = randn(3, 4, 5)
IMG = randn(2, 4, 6, 3)
SORTED = np.sort(randn(2, 6), axis=1)

SLICE = {"T": F32, "Index": I32, "begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0, "new_axis_mask": 0,
         "shrink_axis_mask": 0}

CONV = {"T": F32, "strides": [1, 1, 1, 1], "padding": "SAME", "dilations": [1, 1, 1, 1]}

CASES = [
    case("SpaceToBatch", [IMG, np.array([[0, 2], [1, 1]], I32)], {"T": F32, "Tpaddings": I32, "block_size": 2}),
    case("BatchToSpace", [randn(8, 2, 3, 3), np.array([[0, 1], [1, 1]], I64)], {"T": F32, "Tidx": I64, "block_size": 2}),
    case("Roll", [X, a32(2, -1), a32(0, 2)], {"T": F32, "Tshift": I32, "Taxis": I32}),
    case("Roll", [X, I64(7), I64(-1)], {"T": F32, "Tshift": I64, "Taxis": I64}, id="Roll-scalar-i64"),
    case("Roll", [np.arange(12, dtype=I32).reshape(3, 4), a32(1, 2, -5), a32(1, 1, 0)],
         {"T": I32, "Tshift": I32, "Taxis": I32}, id="Roll-repeated-axis"),
    case("ReverseSequence", [X, np.array([4, 0, 2], I64)], {"T": F32, "Tlen": I64, "seq_dim": 1, "batch_dim": 0}),
    case("ReverseSequence", [X, a32(5, 1, 3, 2)], {"T": F32, "Tlen": I32, "seq_dim": 2, "batch_dim": 1},
         id="ReverseSequence-batch1-seq2"),
    case("Bucketize", [randn(3, 4)], {"T": F32, "boundaries": [-1.0, 0.0, 0.5, 2.0]}),
    case("Bucketize", [a32(-3, 0, 1, 2, 7)], {"T": I32, "boundaries": [0.0, 1.5, 2.0]}, id="Bucketize-int"),
    case("LowerBound", [SORTED, np.concatenate([SORTED[:, :2], randn(2, 3)], 1)], {"T": F32, "out_type": I32}),
    case("UpperBound", [SORTED, np.concatenate([SORTED[:, :2], randn(2, 3)], 1)], {"T": F32, "out_type": I64}),
    case("LinSpace", [F32(-1), F32(2), I32(7)], {"T": F32, "Tidx": I32}),
    case("LinSpace", [F64(3), F64(-1), I64(1)], {"T": F64, "Tidx": I64}, id="LinSpace-one"),
    case("Empty", [a32(2, 3)], {"dtype": F32, "init": True}),
    case("ConcatOffset", [I32(-1), a32(2, 3, 4), a32(2, 3, 1), a32(2, 3, 0)], {"N": 3, "shape_type": I32}, consts=(0,)),
    case("DataFormatDimMap", [a32(-4, -1, 0, 1, 2, 3, 5, -6)], {"T": I32, "src_format": "NHWC", "dst_format": "NCHW"}),
    case("DataFormatDimMap", [np.array([[0, 4], [-2, 1]], I64)], {"T": I64, "src_format": "NDHWC", "dst_format": "NCDHW"},
         id="DataFormatDimMap-3d"),
    case("DataFormatVecPermute", [a32(1, 2, 3, 4)], {"T": I32, "src_format": "NHWC", "dst_format": "NCHW"}),
    case("DataFormatVecPermute", [np.arange(8, dtype=I64).reshape(4, 2)], {"T": I64, "src_format": "NCHW",
                                                                            "dst_format": "NHWC"}, id="DataFormatVecPermute-matrix"),
    case("DataFormatVecPermute", [a32(5, 6)], {"T": I32, "src_format": "NHWC", "dst_format": "HWNC"},
         id="DataFormatVecPermute-spatial"),
    case("SegmentSumV2", [X, a32(0, 0, 2), I32(4)], {"T": F32, "Tindices": I32, "Tnumsegments": I32}),
    case("SegmentProdV2", [X, a32(1, 1, 1), I64(2)], {"T": F32, "Tindices": I32, "Tnumsegments": I64}),
    case("SegmentMaxV2", [np.arange(12, dtype=I32).reshape(4, 3), np.array([0, 2, 2, 3], I64), I32(5)],
         {"T": I32, "Tindices": I64, "Tnumsegments": I32}),
    case("SegmentMinV2", [X, a32(0, 1, 1), I32(3)], {"T": F32, "Tindices": I32, "Tnumsegments": I32}),
    case("ToBool", [F32(0.5)], {"T": F32}),
    case("ToBool", [np.zeros((2, 0), I32)], {"T": I32}, id="ToBool-empty"),
    case("ToBool", [np.zeros((2, 1), I32)], {"T": I32}, id="ToBool-tensor"),
    case("_UnaryOpsComposition", [randn(3, 4)], {"T": F32, "op_names": ["Tanh", "Abs", "Sqrt", "Relu6"]}),
    case("SparseMatMul", [randn(3, 4), randn(5, 4)], {"Ta": F32, "Tb": F32, "transpose_b": True, "a_is_sparse": True}),
    case("InTopKV2", [np.array([[0.1, 0.5, 0.5, 0.2], [1, 2, 3, 4], [1, np.nan, 0, 0], [4, 3, 2, 1]], F32),
                      a32(2, 0, 0, 4), I32(2)], {"T": I32}),
    case("InTopKV2", [randn(3, 6), np.array([5, -1, 1], I64), I64(3)], {"T": I64}, id="InTopKV2-i64"),
    case("ApproxTopK", [np.array([[1, 3, 3, 2], [0, -1, 5, 5]], F32)], {"T": F32, "k": 3}),
    case("ApproxTopK", [randn(5, 3)], {"T": F32, "k": 2, "reduction_dimension": 0, "is_max_k": False},
         id="ApproxTopK-min-dim0"),
    case("TensorStridedSliceUpdate", [X, a32(0, 1), a32(3, 4), a32(2, 2), randn(2, 2, 5)], SLICE),
    case("TensorStridedSliceUpdate", [X, a32(-1, 4), a32(0, 0), a32(-1, -2), randn(2, 2, 5)], SLICE,
         id="TensorStridedSliceUpdate-negative-strides"),
    case("TensorStridedSliceUpdate", [X, a32(1, 0, 2), a32(2, 0, 3), a32(1, 1, 1), randn(4)],
         {**SLICE, "shrink_axis_mask": 5, "end_mask": 2}, id="TensorStridedSliceUpdate-shrink"),
    case("SparseToDense", [np.array([[0, 1], [2, 0], [2, 3]], I64), np.array([3, 4], I64), randn(3), F32(-1)],
         {"T": F32, "Tindices": I64}),
    case("SparseToDense", [a32(1, 4), a32(6), I32(7), I32(0)], {"T": I32, "Tindices": I32, "validate_indices": False},
         id="SparseToDense-vector-scalar-value"),
    case("Bincount", [a32(1, 1, 4, 0, 9, 3), I32(5), np.zeros(0, F32)], {"T": F32}),
    case("Bincount", [np.array([[1, 2], [2, 2]], I32), I32(4), np.array([[1, 2], [3, 4]], I64)], {"T": I64},
         id="Bincount-weights"),
    case("DenseBincount", [np.array([[1, 2, 2], [0, 7, 3]], I64), I64(4), randn(2, 3)],
         {"T": F32, "Tidx": I64, "binary_output": False}),
    case("DenseBincount", [a32(1, 2, 2, 0), I32(3), np.zeros(0, I32)], {"T": I32, "Tidx": I32, "binary_output": True},
         id="DenseBincount-binary"),
    case("MirrorPadGrad", [randn(6, 9), a32(1, 2, 3, 2)], {"T": F32, "Tpaddings": I32, "mode": "REFLECT"}),
    case("MirrorPadGrad", [randn(2, 8, 3), np.array([[0, 0], [2, 3], [1, 0]], I64)],
         {"T": F32, "Tpaddings": I64, "mode": "SYMMETRIC"}, id="MirrorPadGrad-symmetric"),
    case("ExtractImagePatches", [IMG], {"T": F32, "ksizes": [1, 2, 3, 1], "strides": [1, 2, 2, 1],
                                        "rates": [1, 1, 1, 1], "padding": "SAME"}),
    case("ExtractImagePatches", [randn(1, 7, 6, 2)], {"T": F32, "ksizes": [1, 2, 2, 1], "strides": [1, 3, 1, 1],
                                                      "rates": [1, 2, 3, 1], "padding": "VALID"},
         id="ExtractImagePatches-rates-valid"),
    case("Conv", [randn(2, 3, 5, 6, 4), randn(3, 3, 4, 5)], {**CONV, "batch_dims": 2, "strides": [1, 2, 1, 1],
                                                                       "dilations": []}, rtol=1e-4, atol=1e-5),
    case("Conv", [randn(2, 4, 9, 5), randn(3, 2, 2, 6)], {**CONV, "data_format": "CHANNELS_FIRST", "groups": 2,
                                                          "strides": [1, 1, 2, 1], "padding": "VALID"},
         id="Conv-channels-first-grouped", rtol=1e-4, atol=1e-5),
    case("Conv", [randn(1, 4, 4, 4, 2), randn(2, 2, 2, 2, 3)], {**CONV, "strides": [1, 2, 1, 1, 1],
                                                                "dilations": [1, 1, 2, 1, 1]},
         id="Conv-3d", rtol=1e-4, atol=1e-5),
    # dtype variants TF allows
    case("Roll", [X > 0, I32(1), I32(1)], {"T": np.bool_, "Tshift": I32, "Taxis": I32}, id="Roll-bool"),
    case("LowerBound", [np.array([[1, 2, 2, 3]], np.uint8), np.array([[0, 2, 9]], np.uint8)],
         {"T": np.uint8, "out_type": I32}, id="LowerBound-uint8"),
    case("SparseToDense", [np.array([[0], [2]], I32), a32(4), np.array([True, True]), np.array(False)],
         {"T": np.bool_, "Tindices": I32}, id="SparseToDense-bool"),
    case("ApproxTopK", [randn(3, 5).astype(ml_dtypes.bfloat16)], {"T": ml_dtypes.bfloat16, "k": 2}, id="ApproxTopK-bf16",
         rtol=1e-2, atol=1e-2),
    case("_UnaryOpsComposition", [randn(4, dtype=np.float16)], {"T": np.float16, "op_names": ["Exp", "Log1p", "Sigmoid"]},
         id="_UnaryOpsComposition-f16", rtol=1e-2, atol=1e-3),
]


@pytest.mark.parametrize("op,inputs,attrs,kw", CASES)
def test_array_op_matches_kernel(op, inputs, attrs, kw):
    check_op(op, inputs, attrs, **kw)


def test_reverse_sequence_rejects_a_length_past_the_axis():
    with pytest.raises(InputError, match=r"node 'op' \(ReverseSequence\): seq_lens\(1\) > input.dims\(1\)"):
        reference("ReverseSequence", [X, a32(1, 9, 0)], {"T": F32, "Tlen": I32, "seq_dim": 1, "batch_dim": 0})


def test_linspace_needs_a_positive_num():
    with pytest.raises(ShapeInferenceError, match="Requires num > 0: 0"):
        reference("LinSpace", [F32(0), F32(1), I32(0)], {"T": F32, "Tidx": I32})


def test_concat_offset_names_the_mismatching_input():
    with pytest.raises(InputError, match="Input 1 has shape"):
        reference("ConcatOffset", [I32(0), a32(2, 3), a32(2, 4)], {"N": 2, "shape_type": I32})


# -- ops on resource variables: in a Session, compiled and on the kernels --------------------------------------

COVERED_OPS = {"ResourceStridedSliceAssign", "VariableShape"}  # (test_coverage.py: tested below)


def _variable_session(jit, build):
    """A session with variable v = arange(12).reshape(3, 4) (float32) initialised, and the nodes
    build(b, handle) adds."""
    from hlobridge.frontend.graph_builder import GraphBuilder, Shape
    from hlobridge.runtime.session import Session

    b = GraphBuilder()
    h = b.op("VarHandleOp", name="v", dtype=np.dtype(F32), shape=Shape((3, 4)), shared_name="v", container="")
    init = b.op("AssignVariableOp", [h, b.const("init_value", np.arange(12, dtype=F32).reshape(3, 4))],
                name="init_v", dtype=np.dtype(F32))
    b.op("NoOp", name="init", control_inputs=[init])
    build(b, h)
    b.op("ReadVariableOp", [h], name="read", dtype=np.dtype(F32))
    sess = Session(b.graph(), jit=jit, cache_dir=False, min_cluster_size=1)
    sess.run("init")
    return sess


@pytest.mark.parametrize("jit", ["off", "auto"])
def test_resource_strided_slice_assign_writes_the_slice(jit):
    value = np.array([[-1, -2], [-3, -4]], F32)

    def build(b, h):
        b.placeholder("value", np.dtype(F32), (2, 2))
        b.op("ResourceStridedSliceAssign", [h, b.const("begin", a32(0, 3)), b.const("end", a32(3, 0)),
                                            b.const("strides", a32(2, -2)), "value"], name="op", **SLICE)
    sess = _variable_session(jit, build)
    if jit == "auto":
        assert "op" in sess.clustering(["op"], {"value:0": value}).cluster_of
    sess.run("op", {"value:0": value})
    want = np.arange(12, dtype=F32).reshape(3, 4)
    want[0:3:2, 3:0:-2] = value
    np.testing.assert_array_equal(sess.run("read:0"), want)


@pytest.mark.parametrize("jit", ["off", "auto"])
def test_variable_shape_is_the_handles_shape(jit):
    def build(b, h):
        b.op("VariableShape", [h], name="op", out_type=np.dtype(I64))
        b.op("ReadVariableOp", [h], name="r", dtype=np.dtype(F32))
        b.op("Reshape", ["r", "op"], name="same", T=np.dtype(F32), Tshape=np.dtype(I64))
    sess = _variable_session(jit, build)
    got = sess.run(["op:0", "same:0"])
    np.testing.assert_array_equal(got[0], np.array([3, 4], I64))
    assert np.asarray(got[1]).shape == (3, 4)


@pytest.mark.parametrize("op,inputs,attrs,message", [
    ("SparseToDense", [a32(2, 1), a32(4), a32(1, 2), I32(0)], {"T": I32, "Tindices": I32},
     r"indices\[1\] = \[1\] is out of order. Many sparse ops require sorted indices."),
    ("SparseToDense", [a32(1, 1), a32(4), a32(1, 2), I32(0)], {"T": I32, "Tindices": I32}, r"indices\[1\] = \[1\] is repeated"),
    ("SparseToDense", [a32(5, 1), a32(4), a32(1, 2), I32(0)], {"T": I32, "Tindices": I32},
     r"indices\[0\] = \[5\] is out of bounds: need 0 <= index < \[4\]"),
    ("Bincount", [a32(1, -1), I32(3), np.zeros(0, F32)], {"T": F32}, "Input arr must be non-negative!"),
    ("DenseBincount", [np.array([[1, -1]], I32), I32(3), np.zeros(0, F32)], {"T": F32, "Tidx": I32},
     "Input 'in' must be non-negative! Negative input value found: -1"),
    ("DynamicPartition", [a32(1, 2, 3), a32(0, 3, 1)], {"T": I32, "num_partitions": 2},
     r"partitions\[1\] = 3 is not in \[0, 2\)"),
    ("SegmentSumV2", [X, a32(1, 0, 2), I32(3)], {"T": F32, "Tindices": I32, "Tnumsegments": I32},
     "segment ids are not increasing"),
])
def test_bad_input_is_tensorflows_error_naming_the_node(op, inputs, attrs, message):
    with pytest.raises(InputError, match=rf"node 'op' \({op}\): {message}"):
        reference(op, inputs, attrs)
