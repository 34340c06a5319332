"""String ops: AsString (numbers -> text) and StringToNumber (text -> numbers).

Both run on their reference kernels only: StableHLO has no strings, so a graph that uses
them falls back to these kernels for those nodes. String tensors are NumPy object arrays
of `bytes` (dtypes.py maps DT_STRING to object); the kernels also read `str` elements
(UTF-8) and fixed-width 'S' arrays.

Both follow TensorFlow 2.21's CPU kernels exactly:

AsString formats each element with the printf conversion `%<fill><width>.<precision><c>`,
where `c` is d (signed ints), u (unsigned), f / e (`scientific`) / g (`shortest`) for
floating and complex types (half and bfloat16 go through float). `fill` is one printf flag,
not a padding character: "0" zero-pads, "-" left-justifies, "+" and " " force a sign, "#"
is the alternate form; it applies even without a width. NaN and infinity are padded with
spaces and keep their sign ("-nan"). Complex values print as "(re,im)", each part formatted
on its own. Subnormal inputs print as zeros where TF's denormals-are-zero mode makes them
zeros (see _reads_subnormals_as_zero). bool prints "true"/"false" and ignores width and
fill. A string input passes through unless width > 0, then it is truncated to `precision`
bytes and padded with spaces.

StringToNumber parses each string as TensorFlow does (absl::SimpleAtof / SimpleAtoi):
ASCII whitespace around the number is ignored. Floats accept one leading "+" or "-",
decimal and hex ("0x1.8p3") notation, "inf"/"infinity" and "nan"/"nan(chars)" in any case;
they round correctly to the output type, and overflow to infinity, underflow to zero.
Integers accept an optional sign (none before an unsigned number, not even "-0") and base-10
digits only. Anything else, or an integer outside the output type's range, is an InputError
naming the node and the string. One difference: TF keeps the payload of "nan(123)"; here
every NaN is the default quiet NaN (with its sign).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np

from ... import dtypes
from ...errors import InputError
from ...spec import TensorSpec
from ..registry import register
from ..typesets import ANY

STRING = np.dtype(object)

# -- shared helpers -------------------------------------------------------------------------------


def _to_bytes(ctx, value) -> bytes:
    if isinstance(value, bytes):  # np.bytes_ too
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    raise ctx.error(f"expects a string tensor, got an element of type {type(value).__name__}",
                    cls=InputError)


def _string_array(values, shape) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out.reshape(shape)


# -- AsString -------------------------------------------------------------------------------------

_FLAGS = " +-0#"  # the fill values TensorFlow accepts: each is a printf flag


def _kind(dtype) -> str:
    """'string', 'bool', 'float', 'complex', 'signed', 'unsigned', or '' if AsString rejects it."""
    if dtype in (dtypes.RESOURCE, dtypes.VARIANT):
        return ""
    dtype = np.dtype(dtype)
    if dtype == STRING:
        return "string"
    if dtype == np.bool_:
        return "bool"
    if dtype.kind == "c":
        return "complex"
    if dtypes.name(dtype) in ("float16", "bfloat16", "float32", "float64"):
        return "float"
    if dtypes.name(dtype) in ("int8", "int16", "int32", "int64"):
        return "signed"
    if dtypes.name(dtype) in ("uint8", "uint16", "uint32", "uint64"):
        return "unsigned"
    return ""


def _as_string_format(ctx) -> dict:
    """Validate the attributes the way TF's AsStringOp constructor does; the format to apply."""
    dtype = ctx.attr("T", ctx.inputs[0].dtype)
    kind = _kind(dtype)
    if not kind:
        raise ctx.error(f"type {dtypes.name(dtype)} is not supported (AsString takes numbers, "
                        f"bool and strings)")
    precision = int(ctx.attr("precision", -1))
    scientific = bool(ctx.attr("scientific", False))
    shortest = bool(ctx.attr("shortest", False))
    width = int(ctx.attr("width", -1))
    fill = ctx.attr("fill", "")
    fill = fill.decode("latin-1") if isinstance(fill, bytes) else str(fill)
    if kind not in ("string", "float", "complex"):
        if scientific or shortest:
            raise ctx.error(f"scientific and shortest format not supported for datatype "
                            f"{dtypes.name(dtype)}")
        if precision >= 0:
            raise ctx.error(f"precision not supported for datatype {dtypes.name(dtype)}")
    if len(fill.encode("utf-8")) > 1:
        raise ctx.error(f"fill {fill!r}: must be one or fewer characters")
    if scientific and shortest:
        raise ctx.error("cannot select both scientific and shortest notation")
    if fill and fill not in _FLAGS:
        raise ctx.error(f"fill {fill!r} is not supported (TF takes one of ' ', '+', '-', '0', '#' "
                        f"or nothing: a printf flag, not a padding character)")
    conv = {"signed": "d", "unsigned": "u", "string": "s", "bool": ""}.get(kind) or \
        ("g" if shortest else "e" if scientific else "f")
    return {"kind": kind, "flag": fill, "width": max(width, 0), "precision": precision, "conv": conv}


def _as_string_infer(ctx):
    _as_string_format(ctx)
    return [TensorSpec(STRING, ctx.inputs[0].shape)]


def _pad(text: str, flag: str, width: int) -> str:
    return text.ljust(width) if flag == "-" else text.rjust(width)


def _reads_subnormals_as_zero(conv: str, precision: int, wide: bool) -> bool:
    """Whether TF prints a subnormal input as a signed zero.

    TF's CPU threads run with denormals-are-zero. A float32 subnormal (also a half or bfloat16
    one: they print through float32) becomes 0 as it converts to double. A float64 subnormal
    reads as 0 in absl's floating-point paths: every %f, and %e / %g with at most 40
    significant digits; longer %e / %g go through exact integer arithmetic and print it.
    """
    if not wide or conv == "f":
        return True
    p = 6 if precision < 0 else precision
    return (p + 1 if conv == "e" else max(p, 1)) <= 40


def _format_float(v: float, flag: str, width: int, precision: int, conv: str) -> str:
    if not math.isfinite(v):  # printf: the sign even for NaN, padded with spaces, never zeros
        sign = "-" if math.copysign(1.0, v) < 0 else flag if flag in ("+", " ") else ""
        return _pad(sign + ("nan" if math.isnan(v) else "inf"), flag, width)
    spec = "%" + flag + (str(width) if width else "") + \
        (f".{precision}" if precision >= 0 else "") + conv
    return spec % v


def _format_int(v: int, flag: str, width: int, conv: str) -> str:
    if conv == "u" and flag in ("+", " "):  # sign flags do nothing for unsigned conversions
        flag = ""
    return ("%" + flag + (str(width) if width else "") + "d") % v


def _format_string(b: bytes, flag: str, width: int, precision: int) -> bytes:
    if precision >= 0:
        b = b[:precision]
    return b.ljust(width) if flag == "-" else b.rjust(width)


def _as_string_kernel(ctx, x):
    f = _as_string_format(ctx)
    kind, flag, width, precision, conv = f["kind"], f["flag"], f["width"], f["precision"], f["conv"]
    x = np.asarray(x)
    flat = x.ravel()
    if kind == "string":
        if width <= 0:  # TF forwards the input unchanged
            return _string_array([_to_bytes(ctx, v) for v in flat], x.shape)
        out = [_format_string(_to_bytes(ctx, v), flag, width, precision) for v in flat]
    elif kind == "bool":
        out = [b"true" if v else b"false" for v in flat]
    elif kind in ("signed", "unsigned"):
        out = [_format_int(int(v), flag, width, conv).encode() for v in flat]
    else:
        wide = x.dtype in (np.dtype(np.float64), np.dtype(np.complex128))
        tiny = float(np.finfo(np.float64 if wide else np.float32).tiny)
        flush = _reads_subnormals_as_zero(conv, precision, wide)

        def fmt(v):
            v = float(v)
            if flush and abs(v) < tiny:
                v = math.copysign(0.0, v)
            return _format_float(v, flag, width, precision, conv)

        if kind == "float":
            out = [fmt(v).encode() for v in flat]
        else:  # complex: "(re,im)", each part formatted on its own
            out = [f"({fmt(v.real)},{fmt(v.imag)})".encode() for v in flat]
    return _string_array(out, x.shape)


register("AsString", infer=_as_string_infer, kernel=_as_string_kernel,
         dtypes=ANY + ("complex64", "complex128"),
         attrs=("T", "precision", "scientific", "shortest", "width", "fill"))


# -- StringToNumber -------------------------------------------------------------------------------

_OUT_TYPES = {np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64, np.uint32, np.uint64)}
_SPACE = b" \t\n\v\f\r"  # ASCII whitespace, as absl strips it
_INT = re.compile(rb"([+-]?)([0-9]+)")
_DEC = re.compile(rb"([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?")
_HEX = re.compile(rb"0[xX]([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?(?:[pP]([+-]?[0-9]+))?")
_INF = re.compile(rb"inf(?:inity)?", re.IGNORECASE)
_NAN = re.compile(rb"nan(?:\([0-9A-Za-z_]*\))?", re.IGNORECASE)
# (mantissa bits including the implicit one, exponent of the smallest subnormal, 2**max_exp)
_FLOAT_LAYOUT = {np.dtype(np.float32): (24, -149, 128), np.dtype(np.float64): (53, -1074, 1024)}


def _string_to_number_infer(ctx):
    out = np.dtype(ctx.attr("out_type", np.float32))
    if out not in _OUT_TYPES:
        raise ctx.error(f"out_type {dtypes.name(out)} is not supported (TF takes float32, float64, "
                        f"int32, int64, uint32, uint64)")
    x = ctx.inputs[0]
    if x.dtype in (dtypes.RESOURCE, dtypes.VARIANT) or (
            np.dtype(x.dtype) != STRING and np.dtype(x.dtype).kind not in "SU"):
        raise ctx.error(f"expects a string input, got {dtypes.name(x.dtype)}")
    return [TensorSpec(out, x.shape)]


def _round_to_float(value: Fraction, negative: bool, dtype: np.dtype):
    """The float of `dtype` nearest to |value| (ties to even; past the largest: inf), signed."""
    mant_bits, min_exp, max_exp = _FLOAT_LAYOUT[dtype]
    p, q = value.numerator, value.denominator
    result = 0.0
    if p:
        e = p.bit_length() - q.bit_length()  # 2**(e-1) < p/q < 2**(e+1)
        if (p >= q << e) if e >= 0 else (p << -e >= q):
            e += 1
        e -= 1  # now 2**e <= p/q < 2**(e+1)
        quantum = max(e - mant_bits + 1, min_exp)  # the spacing of floats of dtype near p/q
        num, den = (p, q << quantum) if quantum >= 0 else (p << -quantum, q)
        m, r = divmod(num, den)
        if 2 * r > den or (2 * r == den and m & 1):
            m += 1
        result = math.inf if m.bit_length() + quantum > max_exp else math.ldexp(m, quantum)
    return dtype.type(-result if negative else result)


def _exponent(text: bytes | None) -> int:
    """An exponent's value; absurdly long ones saturate (the result is 0 or inf anyway)."""
    if not text:
        return 0
    sign, digits = (-1, text[1:]) if text[:1] == b"-" else (1, text.lstrip(b"+"))
    digits = digits.lstrip(b"0") or b"0"
    return sign * (10 ** 12 if len(digits) > 12 else int(digits))


# Decimal digits kept for rounding: every halfway point between two doubles has fewer
# significant digits than this, so later digits only matter as "nonzero or not".
_MAX_DIGITS = 800


def _parse_float(s: bytes, dtype: np.dtype):
    """absl::SimpleAtof/SimpleAtod; None if the string is not a number."""
    s = s.strip(_SPACE)
    if s.startswith(b"+"):
        s = s[1:]
        if s.startswith(b"-"):
            return None
    negative = s.startswith(b"-")
    body = s[1:] if negative else s
    if _INF.fullmatch(body):
        return dtype.type(-math.inf if negative else math.inf)
    if _NAN.fullmatch(body):
        return dtype.type(-math.nan if negative else math.nan)
    m = _HEX.fullmatch(body)
    if m is not None and (m.group(1) or m.group(2)):  # hex digits, binary exponent
        frac = m.group(2) or b""
        mantissa = int(m.group(1) + frac or b"0", 16)
        exp2 = _exponent(m.group(3)) - 4 * len(frac)
        if not mantissa or mantissa.bit_length() + exp2 < -1200:
            return _round_to_float(Fraction(0), negative, dtype)
        if mantissa.bit_length() + exp2 > 1100:
            return dtype.type(-math.inf if negative else math.inf)
        value = Fraction(mantissa) * Fraction(2) ** exp2
        return _round_to_float(value, negative, dtype)
    m = _DEC.fullmatch(body)
    if m is None or not (m.group(1) or m.group(2)):
        return None
    frac = m.group(2) or b""
    digits = (m.group(1) + frac).lstrip(b"0")
    exp10 = _exponent(m.group(3)) - len(frac)
    if len(digits) > _MAX_DIGITS:  # keep a sticky digit for the dropped tail
        tail = digits[_MAX_DIGITS:]
        exp10 += len(tail) - 1
        digits = digits[:_MAX_DIGITS] + (b"1" if tail.strip(b"0") else b"0")
    if not digits or len(digits) + exp10 < -360:  # 0, or below half the smallest subnormal
        return _round_to_float(Fraction(0), negative, dtype)
    if len(digits) + exp10 > 330:  # above the largest double
        return dtype.type(-math.inf if negative else math.inf)
    value = Fraction(int(digits)) * Fraction(10) ** exp10
    return _round_to_float(value, negative, dtype)


def _parse_int(s: bytes, dtype: np.dtype):
    """absl::SimpleAtoi: (value or None, whether it was out of range)."""
    m = _INT.fullmatch(s.strip(_SPACE))
    if m is None or (m.group(1) == b"-" and dtype.kind == "u"):
        return None, False
    digits = m.group(2).lstrip(b"0") or b"0"
    if len(digits) > 20:  # beyond any int64/uint64 (and too long for int())
        return None, True
    value = int(digits) * (-1 if m.group(1) == b"-" else 1)
    info = np.iinfo(dtype)
    if not info.min <= value <= info.max:
        return None, True
    return dtype.type(value), False


def _string_to_number_kernel(ctx, x):
    dtype = np.dtype(ctx.out().dtype)
    x = np.asarray(x)
    out = np.empty(x.size, dtype=dtype)
    for i, v in enumerate(x.ravel()):
        s = _to_bytes(ctx, v)
        if dtype.kind == "f":
            value, out_of_range = _parse_float(s, dtype), False
        else:
            value, out_of_range = _parse_int(s, dtype)
        if value is None:
            index = [int(k) for k in np.unravel_index(i, x.shape)]
            where = "" if not index else f" (element {index[0] if len(index) == 1 else index})"
            why = "is out of range for" if out_of_range else "is not a valid"
            raise ctx.error(f"string {s!r}{where} {why} {dtypes.name(dtype)} number", cls=InputError)
        out[i] = value
    return out.reshape(x.shape)


register("StringToNumber", infer=_string_to_number_infer, kernel=_string_to_number_kernel,
         attrs=("out_type",), dtypes=("float32", "float64", "int32", "int64"), dtype_attrs=("out_type",))
