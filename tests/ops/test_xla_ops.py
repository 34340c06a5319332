"""tf2xla's Xla* ops (hlobridge/ops/xla/, docs/xla_ops.md).

Their numbers against TensorFlow are the conformance corpus's `xla_*` cases (tests/conformance,
written by tools/conformance_cases/xla_ops.py, run compiled and on kernels by
tests/e2e/test_conformance.py); COVERED_OPS lists the ops those cases hold, and a test here
checks that they do hold them. The rest are what TensorFlow cannot give a reference for
(XlaIf: TF 2.21's kernel wants an attribute its op does not declare; XlaReplicaId aborts TF's
CPU JIT), the refusals, and the proto reader.
"""

import json
import warnings

import numpy as np
import pytest

import hlobridge
from hlobridge.debug.testing import check_op, reference
from hlobridge.errors import HlobridgeError
from hlobridge.frontend.graph_builder import GraphBuilder, Shape
from hlobridge.ops.xla import protos, rng_bits
from hlobridge.ops.xla.values import reduce_precision

from tests.conftest import TESTS

F32, I32, U32, U64 = np.float32, np.int32, np.uint32, np.uint64
CONFORMANCE = TESTS / "conformance"
COVERED_OPS = (
    "XlaDynamicUpdateSlice XlaDynamicSlice XlaPad XlaSplitND XlaConcatND XlaGather XlaScatter XlaDot XlaDotV2 "
    "XlaConv XlaConvV2 XlaEinsum XlaReduce XlaVariadicReduce XlaVariadicReduceV2 XlaReduceWindow "
    "XlaSelectAndScatter XlaSort XlaKeyValueSort XlaVariadicSort XlaBroadcastHelper XlaReducePrecision "
    "XlaDequantize XlaSharding XlaSpmdFullToShardShape XlaSpmdShardToFullShape XlaSetBound "
    "XlaSetDynamicDimensionSize XlaRemoveDynamicDimensionSize XlaOptimizationBarrier XlaWhile "
    "XlaSelfAdjointEig XlaSvd XlaRngBitGenerator").split() + ["XlaIf", "XlaReplicaId"]  # (these two: below)


def test_the_conformance_cases_hold_every_xla_op_they_are_counted_for():
    held = set()
    for d in CONFORMANCE.glob("xla_*"):
        held |= set(json.loads((d / "ops.json").read_text())["distinct_op_types"])
    assert sorted(set(COVERED_OPS) - {"XlaIf", "XlaReplicaId"} - held) == []


def _if_graph(op="XlaIf"):
    b = GraphBuilder()
    x = b.placeholder("x", F32, [3])
    p = b.placeholder("p", np.bool_, [])

    def branch(scale):
        def build(f, v):
            return [(f.op("Mul", [v, f.const("s", scale, F32)], T=np.dtype(F32)), F32)]
        return build
    out = b.op(op, [p, x], name="cond", then_branch=b.function("then", {"v": F32}, branch(2.0)),
               else_branch=b.function("else", {"v": F32}, branch(-1.0)), Tcond=np.dtype(np.bool_),
               Tin=[np.dtype(F32)], Tout=[np.dtype(F32)])
    b.op("Identity", [out], name="y", T=np.dtype(F32))
    return b.graph()


@pytest.mark.parametrize("jit", ["off", "auto"])
def test_xla_if_runs_a_branch_as_stateless_if_does(jit):
    sess = hlobridge.Session(_if_graph(), jit=jit, min_cluster_size=1, cache_dir=False)
    x = np.array([1.0, -2.0, 3.0], F32)
    for p, scale in ((True, 2.0), (False, -1.0)):
        np.testing.assert_array_equal(sess.run("y:0", {"x:0": x, "p:0": np.bool_(p)}), x * scale)
    if jit == "auto":
        assert "cond" in sess.clustering("y:0", {"x:0": x, "p:0": np.bool_(True)}).cluster_of


def test_replica_id_is_zero_on_one_device():
    assert check_op("XlaReplicaId", [], {})[0] == 0


def test_custom_calls_are_refused_naming_the_target():
    with pytest.raises(HlobridgeError, match="custom call to target 'my_cuda_kernel'"):
        reference("XlaCustomCall", [np.zeros(2, F32)], {"target_name": "my_cuda_kernel", "backend_config": "",
                                                        "T": [np.dtype(F32)], "dtype": np.dtype(F32), "shape": Shape([2])})
    with pytest.raises(HlobridgeError, match="custom call to target 'lapack_sgesdd'"):
        reference("XlaCustomCallV2", [np.zeros(2, F32)],
                  {"call_target_name": "lapack_sgesdd", "backend_config": "", "has_side_effect": False,
                   "operand_dtypes": [np.dtype(F32)], "result_dtypes": [np.dtype(F32)], "result_shapes": [Shape([2])]})


def _sharding(tiles):
    # OpSharding{type: OTHER (3), tile_assignment_dimensions: tiles}, written by hand (packed field 3)
    packed = bytes(tiles)
    return bytes([0x08, 3, 0x1A, len(packed)]) + packed


def test_a_sharding_over_several_devices_is_refused_for_the_spmd_shape_ops():
    attrs = {"T": np.dtype(F32), "manual_sharding": _sharding([2, 1]), "dim": -1, "unspecified_dims": []}
    with pytest.raises(HlobridgeError, match="splits the tensor over 2 devices"):
        reference("XlaSpmdFullToShardShape", [np.zeros((4, 2), F32)], attrs)
    attrs["manual_sharding"] = _sharding([1, 1])
    np.testing.assert_array_equal(check_op("XlaSpmdFullToShardShape", [np.ones((4, 2), F32)], attrs)[0], 1)


def test_a_dynamic_size_fed_at_run_time_slices_on_the_kernel():
    b = GraphBuilder()
    x, n = b.placeholder("x", F32, [5, 2]), b.placeholder("n", I32, [])
    y = b.op("XlaSetDynamicDimensionSize", [x, b.const("dim", 0, I32), n], T=np.dtype(F32))
    b.op("Identity", [y], name="y", T=np.dtype(F32))
    x_value = np.arange(10, dtype=F32).reshape(5, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cluster that holds it cannot compile (a value-dependent shape)
        sess = hlobridge.Session(b.graph(), jit="auto", min_cluster_size=1, cache_dir=False)
        np.testing.assert_array_equal(sess.run("y:0", {"x:0": x_value, "n:0": np.int32(3)}), x_value[:3])


def test_protos_read_packed_and_unpacked_repeated_fields_and_negative_ints():
    # offset_dims packed [1, 2]; collapsed_slice_dims unpacked 0; index_vector_dim -1 (10-byte varint)
    data = bytes([0x0A, 2, 1, 2, 0x10, 0]) + bytes([0x20]) + bytes([0xFF] * 9 + [0x01])
    dn = protos.parse(data, protos.GATHER)
    assert dn["offset_dims"] == [1, 2] and dn["collapsed_slice_dims"] == [0] and dn["index_vector_dim"] == -1
    assert dn["start_index_map"] == [] and protos.precision(bytes([0x0A, 2, 0, 2])) == "HIGHEST"
    with pytest.raises(protos.ProtoError):
        protos.parse(bytes([0x0A, 5, 1]), protos.GATHER)


def test_reduce_precision_to_bfloat16_rounds_as_ml_dtypes_does():
    import ml_dtypes
    x = np.random.RandomState(3).randn(1000).astype(F32) * 100
    np.testing.assert_array_equal(reduce_precision(x, 8, 7), x.astype(ml_dtypes.bfloat16).astype(F32))


def test_rng_bits_continue_a_stream_from_the_state_they_return():
    with np.errstate(over="ignore"):
        for generate, state in ((rng_bits.philox_bits, np.array([9, 2 ** 64 - 1, 0], U64)),
                                (rng_bits.threefry_bits, np.array([9, 40], U64))):
            s1, a = generate(state, (4,), 32)
            _, b = generate(s1, (4,), 32)
            _, both = generate(state, (8,), 32)
            if generate is rng_bits.philox_bits:  # 4 words per block: two calls make one stream
                np.testing.assert_array_equal(np.concatenate([a, b]), both)
                assert s1[1] == 0 and s1[2] == 1  # the 128-bit counter carried
            else:
                assert s1[1] == 42  # two pairs of words


def _gather_scatter_graph():
    """XlaGather of rows and XlaScatter (add) of rows at fed indices [5, 1] into a [6, 4] table."""
    b = GraphBuilder()
    t, ids, u = b.placeholder("table", F32, [6, 4]), b.placeholder("ids", I32, [5, 1]), b.placeholder("u", F32, [5, 4])
    add = b.function("add", {"a": F32, "b": F32}, lambda f, a, c: [(f.op("AddV2", [a, c], T=np.dtype(F32)), F32)])
    rows = bytes([0x0A, 1, 1, 0x12, 1, 0, 0x1A, 1, 0, 0x20, 1])  # offset [1], collapsed [0], map [0], ivd 1
    scatter = bytes([0x0A, 1, 1, 0x12, 1, 0, 0x1A, 1, 0, 0x20, 1])  # window [1], inserted [0], to-operand [0]
    g = b.op("XlaGather", [t, ids, b.const("sizes", [1, 4], I32)], dimension_numbers=rows, indices_are_sorted=False,
             T=np.dtype(F32), Tindices=np.dtype(I32))
    s = b.op("XlaScatter", [t, ids, u], update_computation=add, dimension_numbers=scatter, indices_are_sorted=False,
             T=np.dtype(F32), Tindices=np.dtype(I32))
    b.op("Identity", [g], name="rows", T=np.dtype(F32))
    b.op("Identity", [s], name="added", T=np.dtype(F32))
    return b.graph()


def test_out_of_range_gather_clamps_and_scatter_skips_when_compiled():
    # StableHLO leaves out-of-bounds scatter to the implementation and IREE writes (and, for
    # gather, reads) out of bounds; the lowerings clamp and skip as XLA does
    rng = np.random.RandomState(5)
    feeds = {"table:0": rng.randn(6, 4).astype(F32), "ids:0": np.array([[1000], [-1000], [5], [6], [2]], I32),
             "u:0": rng.randn(5, 4).astype(F32)}
    want = hlobridge.Session(_gather_scatter_graph(), jit="off", cache_dir=False).run(["rows:0", "added:0"], feeds)
    sess = hlobridge.Session(_gather_scatter_graph(), jit="auto", min_cluster_size=1, cache_dir=False)
    got = sess.run(["rows:0", "added:0"], feeds)
    np.testing.assert_array_equal(want[0][:2], feeds["table:0"][[5, 0]])  # clamped starts
    skipped = feeds["table:0"].copy()
    skipped[5] += feeds["u:0"][2]
    skipped[2] += feeds["u:0"][4]
    np.testing.assert_allclose(want[1], skipped, rtol=1e-6)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
