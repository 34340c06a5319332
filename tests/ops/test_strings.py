"""String ops (AsString, StringToNumber): kernel-only, so compared with TensorFlow's own outputs.

They have no lowering (StableHLO has no strings), hence no CASES for check_op. Every expected
value below was produced by TensorFlow 2.21 (CPU) with tf.strings.as_string and
tf.strings.to_number on the same inputs and attributes; floats are given as bit patterns so
that -0.0, NaN signs and rounding are checked exactly. String tensors are object arrays of bytes.
"""

import json
import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from hlobridge.errors import InputError, ShapeInferenceError
from hlobridge.frontend.graph import TensorRef
from hlobridge.frontend.graph_builder import GraphBuilder
from hlobridge.ops import registry
from hlobridge.runtime.session import Session
from hlobridge.analysis.shape_inference import infer_specs
from hlobridge.debug.testing import reference, single_op_graph

from ..corpus import Case

STRING = np.dtype(object)
NAN, INF = math.nan, math.inf
GRAPHS = Path(__file__).resolve().parents[1] / "graphs"


def strings(*values) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def out0(node: str) -> TensorRef:
    return TensorRef(node, 0)


def array(dtype: str, values) -> np.ndarray:
    if dtype == "string":
        return strings(*values)
    return np.array(values, dtype=ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)


# -- AsString -------------------------------------------------------------------------------------

F32_VALUES = [0.0, -0.0, 1.5, -2.5, 3.14159265, 1e-05, 123456789.0, 1e20, 999999.5, NAN, -NAN, INF, -INF]
AS_STRING = [
    # (id, T, input values, attributes, TensorFlow's output)
    ("f32-default", "float32", F32_VALUES, {},
     [b"0.000000", b"-0.000000", b"1.500000", b"-2.500000", b"3.141593", b"0.000010", b"123456792.000000",
      b"100000002004087734272.000000", b"999999.500000", b"nan", b"-nan", b"inf", b"-inf"]),
    ("f32-shortest", "float32", F32_VALUES, {"shortest": True},
     [b"0", b"-0", b"1.5", b"-2.5", b"3.14159", b"1e-05", b"1.23457e+08", b"1e+20", b"1e+06", b"nan", b"-nan",
      b"inf", b"-inf"]),
    ("f32-scientific", "float32", F32_VALUES, {"scientific": True},
     [b"0.000000e+00", b"-0.000000e+00", b"1.500000e+00", b"-2.500000e+00", b"3.141593e+00", b"1.000000e-05",
      b"1.234568e+08", b"1.000000e+20", b"9.999995e+05", b"nan", b"-nan", b"inf", b"-inf"]),
    ("f32-precision3-plus", "float32", F32_VALUES, {"precision": 3, "fill": "+"},
     [b"+0.000", b"-0.000", b"+1.500", b"-2.500", b"+3.142", b"+0.000", b"+123456792.000",
      b"+100000002004087734272.000", b"+999999.500", b"+nan", b"-nan", b"+inf", b"-inf"]),
    ("f32-precision0-alt", "float32", F32_VALUES, {"precision": 0, "fill": "#"},
     [b"0.", b"-0.", b"2.", b"-2.", b"3.", b"0.", b"123456792.", b"100000002004087734272.", b"1000000.",
      b"nan", b"-nan", b"inf", b"-inf"]),
    ("f32-shortest-precision2-alt", "float32", F32_VALUES, {"precision": 2, "shortest": True, "fill": "#"},
     [b"0.0", b"-0.0", b"1.5", b"-2.5", b"3.1", b"1.0e-05", b"1.2e+08", b"1.0e+20", b"1.0e+06", b"nan",
      b"-nan", b"inf", b"-inf"]),
    ("f32-width12-zero", "float32", F32_VALUES, {"width": 12, "fill": "0"},
     [b"00000.000000", b"-0000.000000", b"00001.500000", b"-0002.500000", b"00003.141593", b"00000.000010",
      b"123456792.000000", b"100000002004087734272.000000", b"999999.500000", b"         nan",
      b"        -nan", b"         inf", b"        -inf"]),
    ("f32-width10-left", "float32", F32_VALUES, {"width": 10, "fill": "-", "precision": 2},
     [b"0.00      ", b"-0.00     ", b"1.50      ", b"-2.50     ", b"3.14      ", b"0.00      ",
      b"123456792.00", b"100000002004087734272.00", b"999999.50 ", b"nan       ", b"-nan      ",
      b"inf       ", b"-inf      "]),
    ("f32-space", "float32", F32_VALUES, {"fill": " ", "scientific": True, "precision": 1},
     [b" 0.0e+00", b"-0.0e+00", b" 1.5e+00", b"-2.5e+00", b" 3.1e+00", b" 1.0e-05", b" 1.2e+08",
      b" 1.0e+20", b" 1.0e+06", b" nan", b"-nan", b" inf", b"-inf"]),
    ("f32-width5-nofill", "float32", F32_VALUES, {"width": 5, "shortest": True},
     [b"    0", b"   -0", b"  1.5", b" -2.5", b"3.14159", b"1e-05", b"1.23457e+08", b"1e+20", b"1e+06",
      b"  nan", b" -nan", b"  inf", b" -inf"]),
    # TF runs with denormals-are-zero: float32 subnormals print as (signed) zeros
    ("f32-subnormal", "float32", [1e-40, -1e-40, 1.1754942e-38, 1.1754944e-38],
     {"scientific": True, "precision": 60},
     [b"0." + b"0" * 60 + b"e+00", b"-0." + b"0" * 60 + b"e+00", b"0." + b"0" * 60 + b"e+00",
      b"1.175494350822287507968736537222245677818665556772087521508752e-38"]),
    ("f64-default", "float64", [0.1 + 0.2, 1e308, -1e-300, 2.0 ** 60, 5e-324, -1e-310], {},
     [b"0.300000",
      (b"100000000000000001097906362944045541740492309677311846336810682903157585404911491537163328978494688"
       b"899061249669721172515611590283743140088328307009198146046031271664502933027185697489699588559043338"
       b"384466165001178426897626212945177628091195786707458122783970171784415105291802893207873272974885715"
       b"430223118336.000000"),
      b"-0.000000", b"1152921504606846976.000000", b"0.000000", b"-0.000000"]),
    ("f64-precision17", "float64", [0.1 + 0.2, 1e23, -1e-300, 5e-324], {"precision": 17, "scientific": True},
     [b"3.00000000000000044e-01", b"9.99999999999999916e+22", b"-1.00000000000000003e-300",
      b"0.00000000000000000e+00"]),
    # float64 subnormals read as zero in absl's short %e/%g paths, exactly in the long ones
    ("f64-subnormal-e39", "float64", [5e-324, -1e-310, 2.2250738585072014e-308],
     {"scientific": True, "precision": 39},
     [b"0.000000000000000000000000000000000000000e+00", b"-0.000000000000000000000000000000000000000e+00",
      b"2.225073858507201383090232717332404064219e-308"]),
    ("f64-subnormal-e40", "float64", [5e-324, -1e-310, 2.2250738585072014e-308],
     {"scientific": True, "precision": 40},
     [b"4.9406564584124654417656879286822137236506e-324", b"-9.9999999999999694493275028976919693605773e-311",
      b"2.2250738585072013830902327173324040642192e-308"]),
    ("f64-subnormal-g40", "float64", [5e-324, -1e-310], {"shortest": True, "precision": 40}, [b"0", b"-0"]),
    ("f64-subnormal-g41", "float64", [5e-324, -1e-310], {"shortest": True, "precision": 41},
     [b"4.9406564584124654417656879286822137236506e-324", b"-9.9999999999999694493275028976919693605773e-311"]),
    ("f16", "float16", [0.1, -3.5, 65504.0, 6e-08, NAN, 1 / 3], {},
     [b"0.099976", b"-3.500000", b"65504.000000", b"0.000000", b"nan", b"0.333252"]),
    ("f16-shortest", "float16", [0.1, -3.5, 65504.0, 6e-08, NAN, 1 / 3], {"shortest": True},
     [b"0.0999756", b"-3.5", b"65504", b"5.96046e-08", b"nan", b"0.333252"]),
    ("bf16", "bfloat16", [0.1, -3.5, 3e38, 1e-39, 1000.5], {"scientific": True, "precision": 3},
     [b"1.001e-01", b"-3.500e+00", b"3.004e+38", b"0.000e+00", b"1.000e+03"]),
    ("int32", "int32", [0, 1, -1, 42, 2147483647, -2147483648], {},
     [b"0", b"1", b"-1", b"42", b"2147483647", b"-2147483648"]),
    ("int32-width5-zero", "int32", [0, -1, 42, -42, 2147483647], {"width": 5, "fill": "0"},
     [b"00000", b"-0001", b"00042", b"-0042", b"2147483647"]),
    ("int32-width6-left", "int32", [0, -1, 42, 123456789], {"width": 6, "fill": "-"},
     [b"0     ", b"-1    ", b"42    ", b"123456789"]),
    ("int32-plus", "int32", [0, -1, 42], {"fill": "+"}, [b"+0", b"-1", b"+42"]),
    ("int32-alt", "int32", [7, -7], {"width": 4, "fill": "#"}, [b"   7", b"  -7"]),
    ("int64", "int64", [0, -1, 9223372036854775807, -9223372036854775808, 10 ** 12], {},
     [b"0", b"-1", b"9223372036854775807", b"-9223372036854775808", b"1000000000000"]),
    ("int64-space-width", "int64", [5, -5, 0], {"width": 1, "fill": " "}, [b" 5", b"-5", b" 0"]),
    ("int8", "int8", [127, -128, 0], {"width": 5}, [b"  127", b" -128", b"    0"]),
    ("int16", "int16", [32767, -32768], {}, [b"32767", b"-32768"]),
    ("uint8-plus", "uint8", [0, 200], {"width": 6, "fill": "+"}, [b"     0", b"   200"]),
    ("uint16-space", "uint16", [0, 65535], {"fill": " "}, [b"0", b"65535"]),
    ("uint32", "uint32", [0, 4294967295], {"width": 12, "fill": "0"}, [b"000000000000", b"004294967295"]),
    ("uint64", "uint64", [0, 18446744073709551615, 9223372036854775808], {},
     [b"0", b"18446744073709551615", b"9223372036854775808"]),
    ("bool", "bool", [True, False], {}, [b"true", b"false"]),
    ("bool-width-ignored", "bool", [True, False], {"width": 12, "fill": "0"}, [b"true", b"false"]),
    ("c64", "complex64", [1 + 2j, -1.5 - 0.25j, complex(NAN, INF), complex(-0.0, 3)], {},
     [b"(1.000000,2.000000)", b"(-1.500000,-0.250000)", b"(nan,inf)", b"(-0.000000,3.000000)"]),
    ("c64-width8-plus", "complex64", [1 + 2j, complex(NAN, -INF)], {"width": 8, "fill": "+"},
     [b"(+1.000000,+2.000000)", b"(    +nan,    -inf)"]),
    ("c128-shortest", "complex128", [1.5 - 2.25j, 1e10j, complex(1e-310, 1)], {"shortest": True, "precision": 2},
     [b"(1.5,-2.2)", b"(0,1e+10)", b"(0,1)"]),
    ("string-passthrough", "string", [b"abc", b"", b"hello world"], {"precision": 2},
     [b"abc", b"", b"hello world"]),
    ("string-width8-precision2", "string", [b"abc", b"", b"hello world", "\u00e9t\u00e9".encode()],
     {"width": 8, "precision": 2}, [b"      ab", b"        ", b"      he", b"      \xc3\xa9"]),
    ("string-width8-zero", "string", [b"abc", b"hello world"], {"width": 8, "fill": "0"},
     [b"     abc", b"hello world"]),
    ("string-width8-left", "string", [b"abc", b"hello world"], {"width": 8, "fill": "-", "precision": 4},
     [b"abc     ", b"hell    "]),
]


@pytest.mark.parametrize("dtype,values,attrs,want", [pytest.param(*c[1:], id=c[0]) for c in AS_STRING])
def test_as_string_matches_tensorflow(dtype, values, attrs, want):
    x = array(dtype, values)
    (got,) = reference("AsString", [x], dict(attrs, T=x.dtype))
    assert got.dtype == STRING and got.shape == x.shape
    assert got.tolist() == want


def test_as_string_keeps_shape_and_reads_str_elements():
    x = np.arange(6, dtype=np.int32).reshape(2, 3) - 2
    (got,) = reference("AsString", [x], {"T": np.int32, "width": 3})
    assert got.shape == (2, 3) and got.tolist() == [[b" -2", b" -1", b"  0"], [b"  1", b"  2", b"  3"]]
    (scalar,) = reference("AsString", [np.float64(0.25)], {"T": np.float64})
    assert scalar.shape == () and scalar.item() == b"0.250000"
    (text,) = reference("AsString", [strings("h\u00e9", b"x")], {"T": STRING, "width": 4})
    assert text.tolist() == [b" h\xc3\xa9", b"   x"]  # str elements are UTF-8; padding counts bytes


@pytest.mark.parametrize("dtype,attrs,message", [
    # TF: the same checks, same order (InvalidArgumentError when the kernel is built)
    ("int32", {"precision": 2}, "precision not supported for datatype int32"),
    ("uint8", {"precision": 0}, "precision not supported for datatype uint8"),
    ("int64", {"scientific": True}, "scientific and shortest format not supported for datatype int64"),
    ("bool", {"shortest": True}, "scientific and shortest format not supported for datatype bool"),
    ("float32", {"scientific": True, "shortest": True}, "cannot select both scientific and shortest"),
    ("string", {"scientific": True, "shortest": True}, "cannot select both scientific and shortest"),
    ("float32", {"fill": "x"}, "fill 'x' is not supported"),
    ("float32", {"fill": "ab"}, "fill 'ab': must be one or fewer characters"),
])
def test_as_string_rejects_what_tensorflow_rejects(dtype, attrs, message):
    x = array(dtype, [b"a"] if dtype == "string" else [1])
    graph, _ = single_op_graph("AsString", [x], dict(attrs, T=x.dtype))
    with pytest.raises(ShapeInferenceError) as e:
        infer_specs(graph)
    assert str(e.value).startswith("node 'op' (AsString): ") and message in str(e.value)


# -- StringToNumber -------------------------------------------------------------------------------

STRING_TO_NUMBER = {
    # out_type: [(string, TensorFlow's result; floats as bit patterns)]
    "float32": [
        (b"1.5", 0x3fc00000), (b" -0.25\t", 0xbe800000), (b"+3", 0x40400000), (b"3e1", 0x41f00000),
        (b".5", 0x3f000000), (b"5.", 0x40a00000), (b"1E5", 0x47c35000), (b"007", 0x40e00000),
        (b"-0", 0x80000000), (b"0x1A", 0x41d00000), (b"-0x1.8p3", 0xc1400000),
        (b"0x1.000001p0", 0x3f800000),  # a tie: to even
        (b"inf", 0x7f800000), (b"-Infinity", 0xff800000), (b"NaN", 0x7fc00000), (b"-nan", 0xffc00000),
        (b"nan(abc)", 0x7fc00000),
        (b"1e40", 0x7f800000), (b"-1e40", 0xff800000), (b"1e-50", 0x0),  # overflow, underflow
        (b"7.1e-46", 0x1), (b"1.4e-45", 0x1),  # subnormals are kept when parsing
        (b"3.4028235e38", 0x7f7fffff), (b"3.4028236e38", 0x7f800000), (b"16777217", 0x4b800000),
        (b"1.000000059604644775390625", 0x3f800000),  # exactly between two floats: to even
        (b"1.00000005960464477539062500001", 0x3f800001),  # just above: up (not via double)
        (b"0.1" + b"0" * 900 + b"1", 0x3dcccccd), (b"1e99999999999", 0x7f800000), (b"\x0b 2 \x0c", 0x40000000),
    ],
    "float64": [
        (b"0.1", 0x3fb999999999999a), (b"1e40", 0x483d6329f1c35ca5), (b"9007199254740993", 0x4340000000000000),
        (b"2.4703282292062328e-324", 0x1), (b"2.4703282292062327e-324", 0x0), (b"1e-400", 0x0),
        (b"-0x1p-1074", 0x8000000000000001), (b"1.7976931348623157e308", 0x7fefffffffffffff),
        (b"1.7976931348623159e308", 0x7ff0000000000000), (b"  -inf  ", 0xfff0000000000000),
    ],
    "int32": [
        (b"0", 0), (b"+3", 3), (b"-0", 0), (b" 42\n", 42), (b"007", 7), (b"2147483647", 2147483647),
        (b"-2147483648", -2147483648), (b"-00000000000000000000000002147483648", -2147483648),
    ],
    "int64": [
        (b"9223372036854775807", 9223372036854775807), (b"-9223372036854775808", -9223372036854775808),
        (b"4294967296", 4294967296), (b"\t-1 ", -1),
    ],
    "uint32": [(b"4294967295", 4294967295), (b"+1", 1), (b"0", 0)],
    "uint64": [(b"18446744073709551615", 18446744073709551615), (b"9223372036854775808", 9223372036854775808)],
}


@pytest.mark.parametrize("out_type", sorted(STRING_TO_NUMBER))
def test_string_to_number_matches_tensorflow(out_type):
    pairs = STRING_TO_NUMBER[out_type]
    x = strings(*[s for s, _ in pairs]).reshape(-1, 1)
    (got,) = reference("StringToNumber", [x], {"out_type": np.dtype(out_type)})
    assert got.dtype == np.dtype(out_type) and got.shape == x.shape
    if out_type.startswith("float"):
        bits = got.view(np.uint32 if out_type == "float32" else np.uint64).ravel().tolist()
        assert [hex(b) for b in bits] == [hex(w) for _, w in pairs]
    else:
        assert got.ravel().tolist() == [w for _, w in pairs]


def test_string_to_number_reads_str_and_fixed_width_bytes():
    (got,) = reference("StringToNumber", [strings("2.5", b" 7")], {"out_type": np.float32})
    assert got.tolist() == [2.5, 7.0]
    (got,) = reference("StringToNumber", [np.array([[b"1", b"-2"]]).astype(object)], {"out_type": np.int64})
    assert got.dtype == np.int64 and got.tolist() == [[1, -2]]


# Strings TensorFlow refuses (InvalidArgumentError "StringToNumberOp could not correctly convert string").
NOT_NUMBERS = [
    ("float32", b""), ("float32", b"  "), ("float32", b"abc"), ("float32", b"1.5x"), ("float32", b"1,5"),
    ("float32", b"1_000"), ("float32", b"+-1"), ("float32", b"+ 3"), ("float32", b"- 3"), ("float32", b"1e"),
    ("float32", b"1e+"), ("float32", b"."), ("float32", b"e5"), ("float32", b"0x"), ("float32", b"0x1p"),
    ("float32", b"infinit"), ("float32", b"nan("), ("float32", b"1 2"), ("float32", b"1\x002"),
    ("float32", b"\xc2\xa01"), ("float32", b"0b101"), ("float32", b"1d"), ("float32", b"1f"),
    ("float64", b"--1"), ("float64", b"0x-1"),
    ("int32", b"1.0"), ("int32", b"1e3"), ("int32", b"0x10"), ("int32", b""), ("int32", b"+-1"),
    ("int32", b"inf"), ("int32", b"12a"), ("uint32", b"-0"), ("uint32", b"-1"), ("uint64", b"-5"),
]
OUT_OF_RANGE = [
    ("int32", b"2147483648"), ("int32", b"-2147483649"), ("int64", b"9223372036854775808"),
    ("int64", b"-9223372036854775809"), ("int64", b"9" * 30), ("uint32", b"4294967296"),
    ("uint64", b"18446744073709551616"),
]


@pytest.mark.parametrize("out_type,bad", NOT_NUMBERS + OUT_OF_RANGE,
                         ids=[f"{t}-{s!r}" for t, s in NOT_NUMBERS + OUT_OF_RANGE])
def test_string_to_number_errors_name_node_and_string(out_type, bad):
    x = strings(b"1", bad)
    with pytest.raises(InputError) as e:
        reference("StringToNumber", [x], {"out_type": np.dtype(out_type)})
    why = "is out of range for" if (out_type, bad) in OUT_OF_RANGE else "is not a valid"
    assert str(e.value) == f"node 'op' (StringToNumber): string {bad!r} (element 1) {why} {out_type} number"


def test_string_to_number_error_gives_the_index():
    x = strings(b"1", b"2", b"3", b" 4 x").reshape(2, 2)
    with pytest.raises(InputError, match=r"string b' 4 x' \(element \[1, 1\]\) is not a valid int32 number$"):
        reference("StringToNumber", [x], {"out_type": np.int32})
    with pytest.raises(InputError, match=r"\(StringToNumber\): string b'y' is not a valid float64 number$"):
        reference("StringToNumber", [np.array(b"y", dtype=object)], {"out_type": np.float64})


def test_string_to_number_infer():
    b = GraphBuilder()
    s = b.placeholder("s", STRING, (None, 3))
    b.op("StringToNumber", [s], name="n", out_type=np.int64)
    b.op("StringToNumber", [s], name="f")  # out_type defaults to float32
    b.op("AsString", [b.op("StringToNumber", [s], name="g", out_type=np.float64)], name="t", T=np.float64)
    specs = infer_specs(b.graph())
    assert str(specs[out0("n")]) == "int64[?,3]"
    assert str(specs[out0("f")]) == "float32[?,3]"
    assert str(specs[out0("t")]) == "string[?,3]"
    b.op("StringToNumber", [s], name="bad", out_type=np.int8)
    with pytest.raises(ShapeInferenceError, match="node 'bad' .*out_type int8 is not supported"):
        infer_specs(b.graph())


def test_string_to_number_of_a_constant_folds():
    b = GraphBuilder()
    b.op("StringToNumber", [b.const("c", strings(b"1.5", b"-2"))], name="n", out_type=np.float32)
    assert infer_specs(b.graph())[out0("n")].value.tolist() == [1.5, -2.0]
    b = GraphBuilder()
    b.op("StringToNumber", [b.const("c", strings(b"x1"))], name="n", out_type=np.float32)
    with pytest.raises(InputError, match="node 'n' \\(StringToNumber\\): string b'x1'"):
        infer_specs(b.graph())


# -- in a Session ---------------------------------------------------------------------------------

def _round_trip_graph():
    b = GraphBuilder()
    s = b.placeholder("s", STRING, (None,))
    n = b.op("StringToNumber", [s], name="parsed", out_type=np.float32)
    b.op("AsString", [n], name="text", T=np.float32, precision=2, width=7, fill="0")
    return b.graph()


@pytest.mark.parametrize("feed", [np.array([b"1.5", b" -2e1"]), np.array(["1.5", " -2e1"]),
                                  strings(b"1.5", b" -2e1")], ids=["bytes-S", "str-U", "object"])
def test_session_feeds_and_fetches_strings(feed):
    sess = Session(_round_trip_graph(), jit="off")
    parsed, text = sess.run(["parsed:0", "text:0"], {"s:0": feed})
    assert parsed.dtype == np.float32 and parsed.tolist() == [1.5, -20.0]
    assert text.dtype == STRING and text.tolist() == [b"0001.50", b"-020.00"]


def test_session_bad_string_names_the_node():
    sess = Session(_round_trip_graph(), jit="off")
    with pytest.raises(InputError) as e:
        sess.run("text:0", {"s:0": np.array([b"1", b"2", b"three"])})
    assert str(e.value) == "node 'parsed' (StringToNumber): string b'three' (element 2) is not a valid float32 number"


def test_mixed_fallback_case_on_reference_kernels():
    """tests/graphs/mixed_fallback (Unique, Where, GatherNd, StringToNumber, AsString) matches TF.

    Its string fetches are stored as numpy 'S' arrays; the Session returns object arrays of
    bytes (as TF's Session does), so they are compared element by element."""
    case = Case.load(GRAPHS / "mixed_fallback")
    ops = json.loads((case.path / "ops.json").read_text())["distinct_op_types"]
    assert not [op for op in ops if registry.lookup(op) is None]
    sess = Session(case.graph_path, jit="off")
    tol = case.tolerance
    for run in case.meta["runs"]:
        feeds = {name: case.array(key) for name, key in run["feeds"].items()}
        names = list(run["expected"])
        for name, got in zip(names, sess.run(names, feeds)):
            want = case.array(run["expected"][name])
            what = f"{run['name']} {name}"
            assert got.shape == want.shape, what
            if want.dtype.kind == "S":
                assert got.dtype == STRING and got.tolist() == want.tolist(), what
            elif want.dtype.kind in "biu":
                assert got.dtype == want.dtype, what
                np.testing.assert_array_equal(got, want, err_msg=what)
            else:
                assert got.dtype == want.dtype, what
                np.testing.assert_allclose(got, want, rtol=tol["rtol"], atol=tol["atol"], err_msg=what)


def test_string_ops_are_kernel_only():
    for op in ("AsString", "StringToNumber"):
        entry = registry.lookup(op)
        assert entry.kernel is not None and not entry.compiles
