"""Lookup tables (ops/text/tables.py) and text ops (ops/text/preprocess.py): the text kernels against
TensorFlow's recorded results (tests/data/text_references.json, written by
tools/make_text_references.py), table semantics and TF's error messages (as TF 2.21's
kernels give them), and clustering around string and table ops."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hlobridge.debug.testing import reference
from hlobridge.errors import HlobridgeError, InputError
from hlobridge.frontend.graph_builder import GraphBuilder, Shape
from hlobridge.ops.text.farmhash import fingerprint64
from hlobridge.runtime.session import Session

DATA = Path(__file__).resolve().parents[1] / "data" / "text_references.json"
TEXT_CASES = json.loads(DATA.read_text())
I64, F32, STR = np.dtype(np.int64), np.dtype(np.float32), np.dtype(object)


def strings(*values, shape=None) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = [v.encode() if isinstance(v, str) else v for v in values]
    return out.reshape(shape if shape is not None else (len(values),))


def _decode(entry):
    if entry["dtype"] == "string":
        return strings(*[s.encode("latin-1") for s in entry["data"]], shape=tuple(entry["shape"]))
    return np.array(entry["data"], dtype=entry["dtype"]).reshape(entry["shape"])


def _attrs(recorded):
    return {k: np.dtype("object" if v["dtype"] == "string" else v["dtype"]) if isinstance(v, dict) else
            [np.dtype(x["dtype"]) for x in v] if isinstance(v, list) and v and isinstance(v[0], dict) else v
            for k, v in recorded.items()}


# -- text ops against TensorFlow ------------------------------------------------------------------


@pytest.mark.parametrize("case", TEXT_CASES, ids=[c["id"] for c in TEXT_CASES])
def test_text_kernel_matches_tensorflow(case):
    inputs = []
    for x in case["inputs"]:
        inputs += [_decode(v) for v in x] if isinstance(x, list) else [_decode(x)]
    attrs = _attrs(case["attrs"])
    want = [_decode(y) for y in case["outputs"]]
    consts = (0,) if case["op"] == "RaggedTensorToTensor" else ()  # the static-shape path of infer too
    for c in {(), consts}:
        got = reference(case["op"], inputs, attrs, consts=c)
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            assert g.dtype == w.dtype and g.shape == w.shape, (case["id"], i, g.dtype, g.shape, w.shape)
            if w.dtype == object:
                assert g.tolist() == w.tolist(), (case["id"], i)
            else:
                np.testing.assert_allclose(g, w, err_msg=f"{case['id']} output {i}")


def test_fingerprint64_known_values():
    # farmhash::Fingerprint64 as TensorFlow's tf.fingerprint tests and Keras' hashing rely on
    assert fingerprint64(b"") == 0x9AE16A3B2F90404F
    assert all(fingerprint64(bytes(n)) < 2**64 for n in (0, 3, 7, 16, 32, 64, 65, 128, 1000))


def test_ragged_to_tensor_scalar_shape_and_errors():
    splits, values = np.array([0, 2, 3], np.int64), np.arange(3, dtype=np.int32)
    attrs = {"row_partition_types": ["ROW_SPLITS"], "T": np.dtype(np.int32), "Tindex": I64, "Tshape": I64,
             "num_row_partition_tensors": 1}
    out, = reference("RaggedTensorToTensor", [np.int64(-1), values, np.int32(7), splits], attrs, consts=(0,))
    np.testing.assert_array_equal(out, [[0, 1], [2, 7]])
    with pytest.raises(HlobridgeError, match="ends at 3, but values has 2 rows"):
        reference("RaggedTensorToTensor", [np.array([-1, -1], np.int64), values[:2], np.int32(0), splits], attrs)
    with pytest.raises(HlobridgeError, match="not a valid row_splits"):
        reference("RaggedTensorToTensor", [np.array([-1, -1], np.int64), values, np.int32(0),
                                           np.array([0, 3, 2, 3], np.int64)], attrs)


def test_ngrams_check_their_splits():
    attrs = {"separator": " ", "ngram_widths": [2], "left_pad": "", "right_pad": "", "pad_width": 0,
             "preserve_short_sequences": False}
    for splits, message in (([0, 1], "Last split value must be data size. Expected 2, got 1"),
                            ([1, 2], "First split value must be 0"), ([0, 3], "Invalid split values")):
        with pytest.raises(InputError, match=message):
            reference("StringNGrams", [strings("a", "b"), np.array(splits, np.int64)], attrs)


def test_sparse_fill_empty_rows_checks_rows():
    with pytest.raises(InputError, match=r"indices\(1, 0\) is invalid: 4 is not in \[0, 3\)"):
        reference("SparseFillEmptyRows", [np.array([[0, 0], [4, 1]], np.int64), np.ones(2, np.float32),
                                          np.array([3, 2], np.int64), np.float32(0)], {"T": F32})


def test_unicode_strict_errors_name_the_node():
    with pytest.raises(InputError, match=r"node 'op' \(UnicodeDecode\): Invalid formatting on input string "
                                         r"b'a\\xffb' at byte 1"):
        reference("UnicodeDecode", [strings(b"a\xffb")], {"input_encoding": "UTF-8", "errors": "strict"})
    with pytest.raises(InputError, match="code point 55296 is not a valid Unicode scalar value"):
        reference("UnicodeEncode", [np.array([0xD800], np.int32), np.array([0, 1], np.int64)],
                  {"output_encoding": "UTF-8", "errors": "strict"})


def test_substr_and_base64_errors_are_tensorflows():
    with pytest.raises(InputError, match=r"pos 1 out of range for string b'' at index 1"):
        reference("Substr", [strings("ab", ""), np.int32(1), np.int32(1)], {})
    with pytest.raises(InputError, match="Invalid base64 data"):
        reference("DecodeBase64", [strings("a")], {})
    with pytest.raises(HlobridgeError, match="Duplicate reduction dimension -2"):
        reference("ReduceJoin", [strings("a", "b", shape=(1, 2)), np.array([0, -2], np.int32)], {})


def test_bad_regex_is_an_error_naming_the_node():
    with pytest.raises(HlobridgeError, match=r"node 'op' \(StaticRegexReplace\): invalid pattern"):
        reference("StaticRegexReplace", [strings("a")], {"pattern": "(", "rewrite": ""})
    with pytest.raises(HlobridgeError, match="RE2 syntax"):
        reference("StaticRegexReplace", [strings("a")], {"pattern": r"\pL", "rewrite": ""})


# -- tables ---------------------------------------------------------------------------------------


def _table_graph(op="HashTableV2", key=STR, value=I64, **attrs):
    b = GraphBuilder()
    attrs.setdefault("shared_name", "t") if not op.startswith("Anonymous") else None
    table = b.op(op, name="table", key_dtype=key, value_dtype=value, **attrs)
    return b, table


def _session(b, jit="off"):
    return Session(b.graph(), jit=jit, cache_dir=False, min_cluster_size=1)


def _keys_ph(b, dtype=STR, shape=None, name="k"):
    return b.placeholder(name, dtype, shape)


def _find(b, table, keys, default, value=I64, name="find"):
    d = b.const(f"{name}_default", np.asarray(default, value))
    return b.op("LookupTableFindV2", [table, keys, d], name=name, Tin=STR if keys.startswith("k") else I64,
                Tout=value)


def _static_table(init_op="LookupTableImportV2", keys=("a", "b", "c"), values=(1, 2, 3)):
    b, table = _table_graph()
    k, v = b.const("init_k", strings(*keys)), b.const("init_v", np.array(values, np.int64))
    types = {"Tin": STR, "Tout": I64} if init_op == "LookupTableImportV2" else {"Tkey": STR, "Tval": I64}
    b.op(init_op, [table, k, v], name="init", **types)
    keys_in = _keys_ph(b)
    _find(b, table, keys_in, -1)
    b.op("LookupTableSizeV2", [table], name="size")
    b.op("LookupTableExportV2", [table], name="export", Tkeys=STR, Tvalues=I64)
    return b


@pytest.mark.parametrize("init_op", ["LookupTableImportV2", "InitializeTableV2"])
@pytest.mark.parametrize("jit", ["off", "auto"])
def test_static_table_find_size_export(init_op, jit):
    s = _session(_static_table(init_op), jit)
    assert s.run("size:0") == 0  # TF: an uninitialized table has size 0
    with pytest.raises(InputError, match="Table not initialized."):
        s.run("find:0", {"k:0": strings("a")})
    s.run("init")
    got = s.run("find:0", {"k:0": strings("a", "zz", "c", "", shape=(2, 2))})
    np.testing.assert_array_equal(got, [[1, -1], [3, -1]])
    assert s.run("size:0") == 3
    keys, values = s.run(["export:0", "export:1"])
    assert dict(zip(keys.tolist(), values.tolist())) == {b"a": 1, b"b": 2, b"c": 3}
    assert s.run("find:0", {"k:0": strings()}).shape == (0,)


def test_wrong_key_type_is_an_error_naming_the_node():
    b = _static_table()
    ids = b.placeholder("ids", I64, None)
    b.op("LookupTableFindV2", ["table", ids, b.const("d64", np.int64(0))], name="find_ids", Tin=I64, Tout=I64)
    s = _session(b)
    s.run("init")
    with pytest.raises(InputError, match=r"node 'find_ids' \(LookupTableFindV2\): Key must be type string "
                                         r"but got int64"):
        s.run("find_ids:0", {"ids:0": np.array([1], I64)})


def test_static_table_second_initialization_is_a_no_op_and_duplicates_must_agree():
    b = _static_table()
    other = b.op("LookupTableImportV2", ["table", b.const("k2", strings("a")), b.const("v2", np.array([9], I64))],
                 name="init2", Tin=STR, Tout=I64)
    s = _session(b)
    s.run("init")
    s.run(other.split(":")[0])
    assert s.run("find:0", {"k:0": strings("a")}).tolist() == [1]  # TF keeps the first contents
    dup = _session(_static_table(keys=("a", "a"), values=(1, 2)))
    with pytest.raises(InputError, match="HashTable has different value for same key. Key a has 1 and "
                                         "trying to add value 2"):
        dup.run("init")
    same = _session(_static_table(keys=("a", "a"), values=(4, 4)))
    same.run("init")
    assert same.run("size:0") == 1


def test_static_table_refuses_insert_and_remove():
    b = _static_table()
    b.op("LookupTableInsertV2", ["table", "init_k", "init_v"], name="insert", Tin=STR, Tout=I64)
    b.op("LookupTableRemoveV2", ["table", "init_k"], name="remove", Tin=STR)
    s = _session(b)
    s.run("init")
    for op in ("insert", "remove"):
        with pytest.raises(InputError, match=f"{op.title()} not supported by InitializableLookupTable"):
            s.run(op)


def test_per_key_default_and_bad_default_shape():
    s = _session(_static_table())
    s.run("init")
    b = _static_table()
    keys_in = "k"
    d = b.placeholder("d", I64, None)
    b.op("LookupTableFindV2", ["table", keys_in, d], name="find_d", Tin=STR, Tout=I64)
    s = _session(b)
    s.run("init")
    got = s.run("find_d:0", {"k:0": strings("a", "x"), "d:0": np.array([7, 8], I64)})
    np.testing.assert_array_equal(got, [1, 8])  # TF takes one default per key
    with pytest.raises(InputError, match=r"Expected shape \[\] or \[2\] for default value, got \[3\]"):
        s.run("find_d:0", {"k:0": strings("a", "x"), "d:0": np.array([7, 8, 9], I64)})


def test_tf1_table_ops_share_the_v2_rules():
    b, table = _table_graph("HashTable")
    b.op("InitializeTable", [table, b.const("ik", strings("a", "b")), b.const("iv", np.array([4, 5], I64))],
         name="init", Tkey=STR, Tval=I64)
    b.op("LookupTableFind", [table, _keys_ph(b), b.const("d", np.int64(-1))], name="find", Tin=STR, Tout=I64)
    b.op("LookupTableSize", [table], name="size")
    dense = b.op("MutableDenseHashTable", [b.const("empty", np.int64(-1))], name="dense", key_dtype=I64,
                 value_dtype=I64, value_shape=Shape([]), shared_name="dense")
    b.op("LookupTableInsert", [dense, b.const("dk", np.array([7], I64)), b.const("dv", np.array([70], I64))],
         name="insert", Tin=I64, Tout=I64)
    s = _session(b)
    with pytest.raises(InputError, match="Table not initialized."):
        s.run("find:0", {"k:0": strings("a")})
    s.run(["init", "insert"])
    assert s.run("find:0", {"k:0": strings("b", "c")}).tolist() == [5, -1]
    assert s.run("size:0") == 2
    c = _session(b, "auto").clustering(["find:0"], {"k:0": strings("a")})
    assert c.reasons["find"] == c.reasons["table"] == "lookup_table"


def test_mutable_table_insert_remove_import_export():
    b, table = _table_graph("MutableHashTableV2")
    k, v = _keys_ph(b), b.placeholder("v", I64, None)
    b.op("LookupTableInsertV2", [table, k, v], name="insert", Tin=STR, Tout=I64)
    b.op("LookupTableRemoveV2", [table, k], name="remove", Tin=STR)
    b.op("LookupTableImportV2", [table, k, v], name="import", Tin=STR, Tout=I64)
    _find(b, table, k, -1)
    b.op("LookupTableSizeV2", [table], name="size")
    b.op("LookupTableExportV2", [table], name="export", Tkeys=STR, Tvalues=I64)
    s = _session(b)
    assert s.run("find:0", {"k:0": strings("a", "b")}).tolist() == [-1, -1]  # usable without init
    s.run("insert", {"k:0": strings("a", "b"), "v:0": np.array([1, 2], I64)})
    s.run("insert", {"k:0": strings("b"), "v:0": np.array([5], I64)})  # overwrites
    assert s.run("find:0", {"k:0": strings("a", "b", "c")}).tolist() == [1, 5, -1]
    with pytest.raises(InputError, match=r"Expected shape \[2\] for value, got \[1\]"):
        s.run("insert", {"k:0": strings("a", "b"), "v:0": np.array([1], I64)})
    s.run("remove", {"k:0": strings("a", "zz")})
    assert s.run("size:0") == 1
    s.run("import", {"k:0": strings("x"), "v:0": np.array([9], I64)})  # replaces everything
    keys, values = s.run(["export:0", "export:1"])
    assert keys.tolist() == [b"x"] and values.tolist() == [9]


def test_mutable_table_of_tensors_defaults():
    b, table = _table_graph("MutableHashTableOfTensorsV2", key=I64, value=F32, value_shape=Shape([2]))
    b.op("LookupTableInsertV2", [table, b.const("ik", np.array([1, 2], I64)),
                                 b.const("iv", np.array([[1, 2], [3, 4]], F32))], name="insert", Tin=I64, Tout=F32)
    ids, d = b.placeholder("ids", I64, None), b.placeholder("d", F32, None)
    b.op("LookupTableFindV2", [table, ids, d], name="find", Tin=I64, Tout=F32)
    s = _session(b)
    s.run("insert")
    got = s.run("find:0", {"ids:0": np.array([[1, 5]], I64), "d:0": np.array([0, -1], F32)})
    np.testing.assert_array_equal(got, [[[1, 2], [0, -1]]])
    with pytest.raises(InputError, match=r"Expected shape \[2\] or \[2,2\] for default value, got \[\]"):
        s.run("find:0", {"ids:0": np.array([1, 5], I64), "d:0": np.float32(0)})


def test_dense_table_refuses_its_reserved_keys():
    b = GraphBuilder()
    table = b.op("MutableDenseHashTableV2", [b.const("empty", np.int64(-1)), b.const("deleted", np.int64(-2))],
                 name="table", key_dtype=I64, value_dtype=F32, value_shape=Shape([]), shared_name="d",
                 initial_num_buckets=8, max_load_factor=0.8)
    ids, v = b.placeholder("ids", I64, None), b.placeholder("v", F32, None)
    b.op("LookupTableInsertV2", [table, ids, v], name="insert", Tin=I64, Tout=F32)
    b.op("LookupTableFindV2", [table, ids, b.const("d", np.float32(7))], name="find", Tin=I64, Tout=F32)
    s = _session(b)
    s.run("insert", {"ids:0": np.array([1, 2, 3], I64), "v:0": np.array([1, 2, 3], F32)})
    assert s.run("find:0", {"ids:0": np.array([3, 5], I64)}).tolist() == [3, 7]
    with pytest.raises(InputError, match="Using the empty_key as a table key is not allowed"):
        s.run("find:0", {"ids:0": np.array([1, -1], I64)})


def test_anonymous_tables_are_new_on_every_run():
    b, table = _table_graph("AnonymousMutableHashTable", key=I64, value=I64)
    ids = b.placeholder("ids", I64, None)
    ins = b.op("LookupTableInsertV2", [table, ids, ids], name="insert", Tin=I64, Tout=I64)
    b.op("LookupTableSizeV2", [table], name="size", control_inputs=[ins])
    s = _session(b)
    assert s.run("size:0", {"ids:0": np.array([1, 2], I64)}) == 2
    assert s.run("size:0", {"ids:0": np.array([3], I64)}) == 1


def _text_file_table(path, key=STR, value=I64, **attrs):
    b, table = _table_graph(key=key, value=value)
    b.op("InitializeTableFromTextFileV2", [table, b.const("file", strings(str(path), shape=()))], name="init",
         **{"delimiter": "\t", "vocab_size": -1, "offset": 0, **attrs})
    b.op("LookupTableExportV2", [table], name="export", Tkeys=key, Tvalues=value)
    s = _session(b)
    s.run("init")
    keys, values = s.run(["export:0", "export:1"])
    return dict(zip(keys.tolist(), values.tolist()))


def test_text_file_initializer(tmp_path):
    """Expected values as TensorFlow 2.21 gives them for the same file and attributes."""
    vocab = tmp_path / "vocab.txt"
    vocab.write_bytes(b"apple\t5\nbanana\t7\ncherry\tx\ndate\t9")
    assert _text_file_table(vocab, key_index=-2, value_index=-1) == {
        b"apple\t5": 0, b"banana\t7": 1, b"cherry\tx": 2, b"date\t9": 3}
    assert _text_file_table(vocab, value=STR, key_index=0, value_index=1) == {
        b"apple": b"5", b"banana": b"7", b"cherry": b"x", b"date": b"9"}
    assert _text_file_table(vocab, key=I64, value=STR, key_index=-1, value_index=0) == {
        0: b"apple", 1: b"banana", 2: b"cherry", 3: b"date"}
    assert _text_file_table(vocab, key_index=-2, value_index=-1, vocab_size=2) == {b"apple\t5": 0, b"banana\t7": 1}
    assert _text_file_table(vocab, key_index=-2, value_index=-1, offset=1)[b"apple\t5"] == 1
    with pytest.raises(InputError, match="Field x in line 2 is not a valid int64."):
        _text_file_table(vocab, key_index=0, value_index=1)
    with pytest.raises(InputError, match="Field x in line 2 is not a valid float."):
        _text_file_table(vocab, value=F32, key_index=0, value_index=1)
    with pytest.raises(InputError, match="Invalid vocab_size in .*: expected 9 but got 4"):
        _text_file_table(vocab, key_index=-2, value_index=-1, vocab_size=9)
    with pytest.raises(InputError, match=r"line 0 \(apple\t5\) : expected at least 4 got 2"):
        _text_file_table(vocab, key_index=0, value_index=3)
    crlf = tmp_path / "crlf.txt"
    crlf.write_bytes(b"a b\nc d\r\n  e\n")
    assert _text_file_table(crlf, key_index=-2, value_index=-1) == {b"a b": 0, b"c d": 1, b"  e": 2}
    assert _text_file_table(crlf, key_index=0, value_index=-1, delimiter=" ") == {b"a": 0, b"c": 1, b"": 2}
    gap = tmp_path / "gap.txt"
    gap.write_bytes(b"apple\t5\nbanana\t7\n\ncherry\t9\n")
    with pytest.raises(InputError, match="empty line found at position 18."):
        _text_file_table(gap, key_index=-2, value_index=-1)
    with pytest.raises(InputError, match="nope.txt; No such file or directory"):
        _text_file_table(tmp_path / "nope.txt", key_index=-2, value_index=-1)


# -- clustering ------------------------------------------------------------------------------------


def test_string_and_table_ops_are_never_candidates_and_the_rest_clusters():
    b = _static_table()
    ids = b.op("StringToHashBucketFast", ["k"], name="bucket", num_buckets=3)
    strs = b.op("Identity", ["k"], name="same_strings", T=STR)
    b.op("StringLower", [strs], name="lower")
    total = b.op("AddV2", ["find", ids], name="add", T=I64)
    b.op("Mul", [total, b.const("two", np.int64(2))], name="out", T=I64)
    s = _session(b, "auto")
    c = s.clustering(["out:0", "lower:0"], {"k:0": strings("a", "zz")})
    assert c.reasons["bucket"] == c.reasons["same_strings"] == c.reasons["lower"] == "string_tensor"
    assert c.reasons["find"] == c.reasons["table"] == "lookup_table"
    assert c.cluster_of["add"] == c.cluster_of["out"]
    s.run("init")
    got = s.run("out:0", {"k:0": strings("a", "zz")})
    np.testing.assert_array_equal(got, [(1 + fingerprint64(b"a") % 3) * 2, (-1 + fingerprint64(b"zz") % 3) * 2])
    assert [e for e in s.compile_events if e.source != "fallback"]
    with pytest.raises(HlobridgeError, match=r"(?s)jit=strict: .*\(LookupTableFindV2\): lookup_table"):
        Session(b.graph(), jit="strict", cache_dir=False).run("out:0", {"k:0": strings("a")})
