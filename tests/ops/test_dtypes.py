"""Every dtype an elementwise, reduction or Cast entry declares compiles and matches its kernel.

The registry's `dtypes` are what `hlobridge-ops` lists and what clustering trusts, so each
declared (op, dtype) pair is exercised: one graph per dtype holds every such op (one IREE
compile per dtype, not per pair), is compiled for llvm-cpu, and each output is compared with
the op's NumPy kernel. Types an op does not declare are refused before MLIR sees them.
"""

import ml_dtypes
import numpy as np
import pytest

from hlobridge.compile import driver as compiler
from hlobridge import dtypes, runtime
from hlobridge.errors import LoweringError
from hlobridge.frontend.graph_builder import GraphBuilder
from hlobridge.ops import REGISTRY, typesets
from hlobridge.ops.math import elementwise, reductions
from hlobridge.passes.graph.mark_for_compilation import ClusterOptions, mark_for_compilation
from hlobridge.debug.testing import check_op, reference

UNARY = {**elementwise.UNARY, **elementwise.BOOL_UNARY, "LeakyRelu": None}
BINARY = {**elementwise.BINARY, **elementwise.COMPARISONS, "AddN": None}
AXIS_OPS = list(reductions.REDUCTIONS) + list(reductions.ARG_REDUCTIONS) + ["Cumsum", "Cumprod"]


def _np_dtype(name):
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def _inputs(name):
    """x (in every op's domain), y (a non-zero divisor) and |y| (a safe exponent), shape [3, 4]."""
    dt = _np_dtype(name)
    if name == "bool":
        x = np.array([[True, False, True, False]] * 3)
        return x, ~x, ~x
    if dtypes.is_floating(dt) or dt.kind == "c":
        x = np.linspace(0.1, 1.3, 12).reshape(3, 4)
        y = np.linspace(0.5, 2.0, 12)[::-1].reshape(3, 4)
        if dt.kind == "c":
            x, y = x + 1j * y[::-1], y - 0.5j * x
    elif dtypes.is_unsigned(dt):
        x = np.arange(12).reshape(3, 4) % 4
        y = np.arange(12).reshape(3, 4) % 3 + 1
    else:
        x = np.arange(12).reshape(3, 4) % 7 - 3
        y = np.array([1, -2, 3, 2] * 3).reshape(3, 4)
    return x.astype(dt), y.astype(dt), np.abs(y).astype(dt)


def _cast_sources(name):
    """Values every destination type can hold; integers wider than 8 bits also wrap."""
    dt = _np_dtype(name)
    if name == "bool":
        return np.array([True, False, True])
    if dtypes.is_floating(dt):
        return np.array([0.0, 0.4, 1.6, 2.5, 3.99, 100.7]).astype(dt)
    values = [0, 1, 7, 100, 127] + ([300, 40000] if dt.itemsize > 1 else [])
    return np.array(values if dt.itemsize > 2 or dtypes.is_unsigned(dt) else values[:6]).astype(dt)


def _sweep(name):
    """(graph, feeds, [(output, op, arrays, attrs)]) for every op that declares dtype `name`."""
    dt = _np_dtype(name)
    b = GraphBuilder()
    x, y, ya = _inputs(name)
    c = _cast_sources(name)
    feeds = {"x:0": x, "y:0": y, "ya:0": ya, "c:0": c}
    for n, v in feeds.items():
        b.placeholder(n[:-2], v.dtype, v.shape)
    axis = b.const("axis", np.int32(1))
    rows = []

    def add(op, names, arrays, **attrs):
        attrs = {k: v for k, v in attrs.items() if k in REGISTRY[op].attrs}  # All/Any have no T
        out = b.op(op, names, name=f"{op}_{len(rows)}", **attrs)
        rows.append((out, op, arrays, attrs))

    for op in UNARY:
        if name in REGISTRY[op].dtypes:
            add(op, ["x:0"], [x], T=dt, **({"alpha": 0.3} if op == "LeakyRelu" else {}))
    for op in BINARY:
        if name in REGISTRY[op].dtypes:
            rhs, arr = ("ya:0", ya) if op == "Pow" else ("y:0", y)
            add(op, ["x:0", rhs], [x, arr], T=dt, **({"N": 2} if op == "AddN" else {}))
    for op in AXIS_OPS:
        if name in REGISTRY[op].dtypes:
            attrs = {"Tidx": np.int32}
            attrs.update({"keep_dims": True} if op in reductions.REDUCTIONS else
                         {"output_type": np.int32} if op in reductions.ARG_REDUCTIONS else {})
            add(op, ["x:0", axis], [x, np.int32(1)], T=dt, **attrs)
    for dst in typesets.ANY:
        add("Cast", ["c:0"], [c], SrcT=dt, DstT=_np_dtype(dst))
    return b.graph(), feeds, rows


def _tolerance(name):
    return {"bfloat16": 2e-2, "float16": 4e-3}.get(name, 1e-5)


@pytest.mark.parametrize("name", typesets.ANY)
def test_declared_dtypes_compile_and_match_kernels(name):
    graph, feeds, rows = _sweep(name)
    model = compiler.compile_graph(graph, inputs=list(feeds), outputs=[r[0] for r in rows])
    got = runtime.load(model.vmfb).main(*feeds.values())
    got = got if isinstance(got, tuple) else (got,)
    tol = _tolerance(name)
    for value, (out, op, arrays, attrs) in zip(got, rows):
        with np.errstate(invalid="ignore"):  # Asin, Acosh, ... outside their domain: NaN both ways
            (want,) = reference(op, arrays, attrs)
        assert value.dtype == want.dtype, out
        if want.dtype.kind in "biu":
            np.testing.assert_array_equal(value, want, err_msg=out)
        else:
            wide = np.complex128 if want.dtype.kind == "c" else np.float64
            np.testing.assert_allclose(value.astype(wide), want.astype(wide), rtol=tol, atol=tol, err_msg=out)


def test_every_dtype_has_an_elementwise_op():
    """The sweep really covers each type (a typo in a table would silently drop one)."""
    for name in typesets.ANY:
        _, _, rows = _sweep(name)
        assert len({op for _, op, _, _ in rows} - {"Cast"}) >= 3, name


def _int_sin_graph():
    b = GraphBuilder()
    x = b.placeholder("x", np.int32, (4,))
    s = b.op("Sin", [x], name="s", T=np.int32)
    b.op("Neg", [s], name="n", T=np.int32)
    return b.graph()


def test_undeclared_dtype_is_a_clear_lowering_error():
    with pytest.raises(LoweringError, match=r"node 's' \(Sin\): Sin compiles for T in \{float16.*not int32"):
        compiler.lower_graph(_int_sin_graph(), inputs=["x:0"], outputs=["n:0"])


def test_undeclared_dtype_is_left_to_the_kernel_by_clustering():
    result = mark_for_compilation(_int_sin_graph(), options=ClusterOptions(min_cluster_size=1))
    assert result.reasons["s"] == "uncompilable_dtype"
    assert "n" not in result.reasons  # Neg compiles for int32


def _small(dtype, *shape):
    return np.random.RandomState(len(shape)).randint(0, 9, shape).astype(dtype)


_POOL = dict(ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME", data_format="NHWC")
_IMG16 = np.random.RandomState(3).randn(1, 5, 5, 3).astype(np.float16)
# Other families: their declared types beyond float32, one case each.
OTHER_FAMILIES = [
    ("MaxPool", [_small(np.int8, 1, 5, 5, 2)], dict(_POOL, T=np.int8)),
    ("MaxPool", [_small(np.uint16, 1, 5, 5, 2)], dict(_POOL, T=np.uint16)),
    ("MatMul", [_small(np.int64, 2, 3), _small(np.int64, 3, 2)], {"T": np.int64}),
    ("BatchMatMulV3", [_small(np.uint8, 2, 3), _small(np.uint8, 3, 2)],
     {"Ta": np.uint8, "Tb": np.uint8, "Tout": np.int32}),
    ("BiasAdd", [_small(np.uint32, 2, 3), _small(np.uint32, 3)], {"T": np.uint32}),
    ("TopKV2", [_small(np.int8, 2, 5), np.int32(2)], {"T": np.int8, "sorted": True}),
    ("Cumsum", [_small(np.uint8, 2, 5), np.int32(1)], {"T": np.uint8, "exclusive": True}),
    ("Cumprod", [_small(np.uint32, 2, 5), np.int32(1)], {"T": np.uint32, "reverse": True}),
    ("Conv2D", [_IMG16, np.random.RandomState(4).randn(3, 3, 3, 2).astype(np.float16)],
     {"T": np.float16, "strides": [1, 1, 1, 1], "padding": "SAME"}),
    ("FusedBatchNormV3", [_IMG16] + [np.linspace(0.5, 1.5, 3).astype(np.float32)] * 4,
     {"T": np.float16, "U": np.float32, "is_training": False}),
]


@pytest.mark.parametrize("op,inputs,attrs", OTHER_FAMILIES,
                         ids=[f"{op}-{np.dtype(a.get('T', a.get('Ta'))).name}" for op, _, a in OTHER_FAMILIES])
def test_other_families_compile_their_declared_types(op, inputs, attrs):
    name = np.dtype(attrs.get("T", attrs.get("Ta"))).name
    assert name in REGISTRY[op].dtypes
    check_op(op, inputs, attrs, rtol=1e-2, atol=1e-2)
