"""Which graphs may run a batch padded up to a static bucket (analysis/batch_rows.py): a BERT-like
embedding (GatherV2 of a table by batch ids, OneHot, Reshapes that merge the batch with the
sequence and split it again) pads and gives the dynamic function's numbers; graphs that mix
rows, or end in a layout the runtime cannot cut, are refused with the node's name."""

import numpy as np
import pytest

from hlobridge.compile.buckets import padding_verdict
from hlobridge.compile.driver import input_specs, resolve_io
from hlobridge.frontend.graph_builder import GraphBuilder

from .test_batch_buckets import compile_padded

RNG = np.random.default_rng(31)
VOCAB, SEQ, HIDDEN = 10, 4, 6
TABLE = RNG.standard_normal((VOCAB, HIDDEN)).astype(np.float32)
TYPES = RNG.standard_normal((2, HIDDEN)).astype(np.float32)
HEAD = RNG.standard_normal((SEQ * HIDDEN, 3)).astype(np.float32)


def _i32(b, name, values):
    return b.const(name, np.array(values, np.int32))


def batch_first(b, x, name):
    """[shape(x)[0], -1], as Keras' Flatten computes its target: the batch size as a value."""
    n = b.op("StridedSlice", [b.op("Shape", [x], name=f"{name}/shape", T=np.float32, out_type=np.int32),
                              _i32(b, f"{name}/b", [0]), _i32(b, f"{name}/e", [1]), _i32(b, f"{name}/s", [1])],
             name=f"{name}/batch", T=np.int32, Index=np.int32, shrink_axis_mask=1)
    return b.op("Pack", [n, _i32(b, f"{name}/rest", -1)], name=name, T=np.int32, N=2, axis=0)


def embedding_graph(b=None):
    """y = (gather(TABLE, ids) + reshape(onehot(seg).reshape(-1, 2) @ TYPES, [-1, SEQ, HIDDEN]),
    centred per token over [-1, HIDDEN], back to [-1, SEQ, HIDDEN], flattened as Keras does) @ HEAD."""
    b = b or GraphBuilder()
    ids = b.placeholder("ids", np.int32, (None, SEQ))
    seg = b.placeholder("seg", np.int32, (None, SEQ))
    emb = b.op("GatherV2", [b.const("table", TABLE), ids, _i32(b, "axis0", 0)], name="emb",
               Tparams=np.float32, Tindices=np.int32, Taxis=np.int32, batch_dims=0)
    hot = b.op("OneHot", [seg, _i32(b, "depth", 2), b.const("on", np.float32(1)), b.const("off", np.float32(0))],
               name="hot", T=np.float32, TI=np.int32, axis=-1)
    flat = b.op("Reshape", [hot, _i32(b, "s1", [-1, 2])], name="tokens", T=np.float32, Tshape=np.int32)
    typed = b.op("MatMul", [flat, b.const("types", TYPES)], name="typed", T=np.float32)
    typed = b.op("Reshape", [typed, _i32(b, "s2", [-1, SEQ, HIDDEN])], name="unflat", T=np.float32, Tshape=np.int32)
    h = b.op("Reshape", [b.op("AddV2", [emb, typed], name="sum", T=np.float32), _i32(b, "s3", [-1, HIDDEN])],
             name="per_token", T=np.float32, Tshape=np.int32)
    mean = b.op("Mean", [h, _i32(b, "last", [-1])], name="mean", T=np.float32, Tidx=np.int32, keep_dims=True)
    h = b.op("Sub", [h, mean], name="centred", T=np.float32)
    h = b.op("Reshape", [h, _i32(b, "s4", [-1, SEQ, HIDDEN])], name="per_example", T=np.float32,
             Tshape=np.int32)
    h = b.op("Reshape", [h, batch_first(b, h, "flat_shape")], name="flat", T=np.float32, Tshape=np.int32)
    b.op("MatMul", [h, b.const("head", HEAD)], name="y", T=np.float32)
    return b


def embedding_reference(ids, seg):
    h = (TABLE[ids] + np.eye(2, dtype=np.float32)[seg] @ TYPES).reshape(-1, HIDDEN)
    return (h - h.mean(-1, keepdims=True)).reshape(-1, SEQ * HIDDEN) @ HEAD


def feeds(batch):
    return RNG.integers(0, VOCAB, (batch, SEQ), np.int32), RNG.integers(0, 2, (batch, SEQ), np.int32)


def verdict(b, outputs=None):
    graph = b.graph()
    in_refs, out_refs = resolve_io(graph, None, outputs)
    return padding_verdict(graph, input_specs(graph, in_refs, None), out_refs)


def test_an_embedding_graph_pads_and_matches_the_dynamic_function(tmp_path, capsys):
    main = compile_padded(tmp_path, embedding_graph(), "8").main
    assert "padding: pads" in capsys.readouterr().err
    for batch in (5, 1):
        ids, seg = feeds(batch)
        assert main.pick([ids, seg]) == (main.static[8], 8)
        got = main(ids, seg)
        assert got.shape == (batch, 3)
        np.testing.assert_allclose(got, main.dynamic(ids, seg), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(got, embedding_reference(ids, seg), rtol=1e-5, atol=1e-5)


def _pairs_examples(b):
    """[?, SEQ, HIDDEN] -> [-1, 2*SEQ*HIDDEN]: one row holds two examples."""
    b.op("Reshape", ["sum:0", _i32(b, "pairs", [-1, 2 * SEQ * HIDDEN])], name="paired", T=np.float32,
         Tshape=np.int32)
    return ["paired:0"]


def _gathers_rows(b):
    """Row 0 of the batch for every example: GatherV2 on the batch axis."""
    b.op("GatherV2", ["y:0", _i32(b, "first", [0, 0]), _i32(b, "ax", 0)], name="rows",
         Tparams=np.float32, Tindices=np.int32, Taxis=np.int32, batch_dims=0)
    return ["rows:0"]


def _contracts_batch(b):
    """y^T @ y: a matmul over the batch."""
    b.op("MatMul", ["y:0", "y:0"], name="gram", T=np.float32, transpose_a=True)
    return ["gram:0"]


def _onehot_on_batch_axis(b):
    b.op("OneHot", ["seg:0", _i32(b, "d2", 2), b.const("on2", np.float32(1)), b.const("off2", np.float32(0))],
         name="hot0", T=np.float32, TI=np.int32, axis=0)
    return ["hot0:0"]


def _divides_by_batch_size(b):
    """y / batch: a value of every row depends on how many rows there are."""
    n = b.op("Cast", [b.op("StridedSlice", [b.op("Shape", ["y:0"], name="n/shape", T=np.float32, out_type=np.int32),
                                            _i32(b, "n/b", [0]), _i32(b, "n/e", [1]), _i32(b, "n/s", [1])],
                           name="n/batch", T=np.int32, Index=np.int32, shrink_axis_mask=1)],
             name="n", SrcT=np.int32, DstT=np.float32)
    b.op("RealDiv", ["y:0", n], name="per_batch", T=np.float32)
    return ["per_batch:0"]


def _spreads_a_constant(b):
    """A constant reshaped to [batch, -1]: what a row holds depends on how many rows there are."""
    spread = b.op("Reshape", [b.const("eight", np.arange(8, dtype=np.float32)), batch_first(b, "y:0", "rows8")],
                  name="spread", T=np.float32, Tshape=np.int32)
    b.op("AddV2", [b.op("Slice", ["y:0", _i32(b, "y0", [0, 0]), _i32(b, "y1", [-1, 1])], name="y1", T=np.float32,
                        Index=np.int32), spread], name="spread_sum", T=np.float32)
    return ["spread_sum:0"]


@pytest.mark.parametrize("add, why", [
    (_spreads_a_constant, "node spread (Reshape reads the batch size)"),
    (_divides_by_batch_size, "node per_batch (RealDiv reads the batch size)"),
    (lambda b: ["flat_shape:0"], "node flat_shape (output flat_shape:0 is computed from the batch size)"),
    (_pairs_examples, "node paired (Reshape puts rows of two examples together)"),
    (_gathers_rows, "node rows (GatherV2 of batch rows)"),
    (_contracts_batch, "node gram (MatMul contracts over the batch)"),
    (_onehot_on_batch_axis, "node hot0 (OneHot with its depth on the batch axis)"),
    (lambda b: ["per_token:0"], f"node per_token (output per_token:0 holds {SEQ} rows per example)"),
])
def test_graphs_that_mix_rows_are_refused(add, why):
    b = embedding_graph()
    assert verdict(b) == "pads"
    assert verdict(b, add(b)) == f"cannot pad: {why} mixes rows"
