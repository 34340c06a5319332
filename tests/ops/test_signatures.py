"""Every node is checked against TensorFlow's signature of its op before any rule runs: one
generic check (ops/signatures.py), one line naming the node."""

import numpy as np
import pytest

from hlobridge import GraphError, ShapeInferenceError, dtypes
from hlobridge.analysis.shape_inference import infer_specs
from hlobridge.frontend.graph_builder import GraphBuilder
from hlobridge.ops import REGISTRY
from hlobridge.ops.signatures import signatures

F32 = np.dtype(np.float32)


def _infer(build):
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (2, 2))
    build(b, x)
    return infer_specs(b.graph())


@pytest.mark.parametrize("build, message", [
    (lambda b, x: b.op("BatchMatMulV2", [x], name="bmm", T=F32),
     "node 'bmm' (BatchMatMulV2): takes 2 input(s) (x, y), has 1"),
    (lambda b, x: b.op("ConcatV2", [x, x, b.const("axis", np.int32(0))], name="cat", N=3, T=F32),
     "node 'cat' (ConcatV2): takes 4 input(s) (values, axis), has 3"),
    (lambda b, x: b.op("ConcatV2", [x, b.const("axis", np.int32(0))], name="cat", N=1, T=F32),
     "node 'cat' (ConcatV2): attribute 'N' is 1; the op needs at least 2"),
    (lambda b, x: b.op("MatMul", [x, x], name="mm", T=F32, transpose_a=3),
     "node 'mm' (MatMul): attribute 'transpose_a' should be a bool, got int 3"),
    (lambda b, x: b.op("MatMul", [x, x], name="mm", T=dtypes.VARIANT),
     "node 'mm' (MatMul): attribute 'T' is variant; the op takes"),
    (lambda b, x: b.op("Relu", [x], name="relu", T=np.dtype(object)),
     "node 'relu' (Relu): attribute 'T' is string; the op takes"),
    (lambda b, x: b.op("IdentityN", [x, x], name="ids", T=[F32]),
     "node 'ids' (IdentityN): takes 1 input(s) (input), has 2"),
])
def test_a_malformed_node_is_one_error_naming_it(build, message):
    with pytest.raises(GraphError) as e:
        _infer(build)
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_a_well_formed_variadic_node_passes():
    specs = _infer(lambda b, x: b.op("ConcatV2", [x, x, b.const("axis", np.int32(0))], name="cat", N=2, T=F32))
    assert [s.shape for r, s in specs.items() if r.node == "cat"] == [(4, 2)]


def test_a_rule_that_still_fails_names_its_node(monkeypatch):
    entry = REGISTRY["Relu"]

    def broken(ctx):
        raise IndexError("list index out of range")
    monkeypatch.setitem(REGISTRY, "Relu", type(entry)(**{**entry.__dict__, "infer": broken}))
    with pytest.raises(ShapeInferenceError, match=r"node 'relu' \(Relu\): shape inference failed: IndexError"):
        _infer(lambda b, x: b.op("Relu", [x], name="relu", T=F32))


def test_every_registered_op_has_a_tensorflow_signature():
    # when this fails, an op was added: rerun tools/extract_tf_op_signatures.py (its docstring).
    # hlobridge's own internal ops (a leading underscore, as TF's _Send) have no TF signature.
    assert sorted(op for op in set(REGISTRY) - set(signatures()) if not op.startswith("_")) == []
