"""Unicode decoding and encoding: `tf.strings.unicode_decode` / `unicode_split` (Keras
TextVectorization with split="character") and `tf.strings.unicode_encode`.

Reference kernels only (strings never compile). They follow TensorFlow 2.21's unicode_ops.cc:

- UnicodeDecode / UnicodeDecodeWithOffsets decode every string of the (flattened) input into
  code points, returned as a ragged tensor (row_splits, char_values), and with offsets the byte
  offset where each character starts. `errors`: "strict" fails on an invalid sequence,
  "replace" (the default) puts `replacement_char` in its place (one per maximal invalid
  subpart, as ICU and Python both do), "ignore" drops it. `replace_control_characters`
  replaces C0 controls (U+0000-U+001F).
- UnicodeEncode encodes each row of code points; an invalid code point (a surrogate, one past
  U+10FFFF, a negative one) fails, is replaced by `replacement_char`, or is dropped.

Encodings: UTF-8, UTF-16-BE and UTF-32-BE, the ones TF's tests use (TF accepts what ICU
knows); others are an error naming the node.
"""

from __future__ import annotations

import codecs
import threading

import numpy as np

from ...errors import InputError
from ...spec import TensorSpec
from ..registry import register
from .strings import STRING, _string_array, _to_bytes

ENCODINGS = {"UTF-8": "utf-8", "UTF-16-BE": "utf-16-be", "UTF-32-BE": "utf-32-be"}


def _codec(ctx, attr: str) -> str:
    name = ctx.attr(attr)
    name = name.decode() if isinstance(name, bytes) else name
    if name.upper() not in ENCODINGS:
        raise ctx.error(f"{attr} '{name}' is not supported (hlobridge decodes {', '.join(ENCODINGS)})")
    return ENCODINGS[name.upper()]


def _errors(ctx) -> str:
    errors = ctx.attr("errors", "replace")
    errors = errors.decode() if isinstance(errors, bytes) else errors
    if errors not in ("strict", "replace", "ignore"):
        raise ctx.error(f"errors must be 'strict', 'replace' or 'ignore', got '{errors}'")
    return errors


# -- decoding ---------------------------------------------------------------------------------------


def _decode_infer(ctx):
    splits = np.dtype(ctx.attr("Tsplits", np.int64))
    outs = [TensorSpec(splits, (None,)), TensorSpec(np.dtype(np.int32), (None,))]
    return outs + ([TensorSpec(np.dtype(np.int64), (None,))] if ctx.op == "UnicodeDecodeWithOffsets" else [])


_MARK = "\ud800"  # a lone surrogate: never the result of decoding valid text
_INVALID = threading.local()  # the lengths of the invalid subparts of the string being decoded
MARK_INVALID = "hlobridge-mark-invalid"


def _mark_invalid(e: UnicodeDecodeError):
    _INVALID.lengths.append(e.end - e.start)
    return _MARK, e.end


codecs.register_error(MARK_INVALID, _mark_invalid)


def _decode_one(ctx, s: bytes, codec: str, errors: str, replacement: int, controls: bool):
    """(code points, byte offsets of their starts) of one string. Python's decoder finds the
    invalid subparts (a lone surrogate marks each in the text, its length goes to `bad`)."""
    _INVALID.lengths = bad = []
    try:
        text = s.decode(codec, "strict" if errors == "strict" else MARK_INVALID)
    except UnicodeDecodeError as e:
        raise ctx.error(f"Invalid formatting on input string {s[:40]!r} at byte {e.start}",
                        cls=InputError) from None
    chars, starts, pos, invalid = [], [], 0, iter(bad)
    for ch in text:
        if ch == _MARK:
            if errors == "replace":
                chars.append(replacement)
                starts.append(pos)
            pos += next(invalid)
            continue
        chars.append(replacement if controls and ord(ch) < 0x20 else ord(ch))
        starts.append(pos)
        pos += len(ch.encode(codec))
    return chars, starts


def _decode_kernel(ctx, x):
    codec, errors = _codec(ctx, "input_encoding"), _errors(ctx)
    replacement = int(ctx.attr("replacement_char", 0xFFFD))
    controls = bool(ctx.attr("replace_control_characters", False))
    splits, values, offsets = [0], [], []
    for s in np.asarray(x, dtype=object).ravel():
        chars, starts = _decode_one(ctx, _to_bytes(ctx, s), codec, errors, replacement, controls)
        values += chars
        offsets += starts
        splits.append(len(values))
    out = [np.array(splits, ctx.out(0).dtype), np.array(values, np.int32)]
    return out + ([np.array(offsets, np.int64)] if ctx.op == "UnicodeDecodeWithOffsets" else [])


# -- encoding ----------------------------------------------------------------------------------------


def _encode_infer(ctx):
    splits = ctx.inputs[1]
    n = None if splits.shape is None or splits.shape[0] is None else max(splits.shape[0] - 1, 0)
    return [TensorSpec(STRING, (n,))]


def _encode_kernel(ctx, values, splits):
    codec, errors = _codec(ctx, "output_encoding"), _errors(ctx)
    replacement = int(ctx.attr("replacement_char", 0xFFFD))
    values, splits = np.asarray(values, np.int64), np.asarray(splits, np.int64)
    if splits.ndim != 1 or splits.size == 0 or splits[0] != 0 or np.any(np.diff(splits) < 0) \
            or splits[-1] != values.size:
        raise ctx.error(f"input_splits {splits.tolist()[:10]} are not valid row splits for "
                        f"{values.size} values", cls=InputError)
    out = []
    for start, end in zip(splits[:-1], splits[1:]):
        chars = []
        for c in values[start:end].tolist():
            if 0 <= c <= 0x10FFFF and not 0xD800 <= c <= 0xDFFF:
                chars.append(chr(c))
            elif errors == "strict":
                raise ctx.error(f"code point {c} is not a valid Unicode scalar value", cls=InputError)
            elif errors == "replace":
                chars.append(chr(replacement))
        out.append("".join(chars).encode(codec))
    return _string_array(out, (len(out),))


_DECODE_ATTRS = ("input_encoding", "errors", "replacement_char", "replace_control_characters", "Tsplits")
# op -> (infer, kernel, attrs, output_args)
UNICODE_OPS = {
    "UnicodeDecode": (_decode_infer, _decode_kernel, _DECODE_ATTRS, ("row_splits", "char_values")),
    "UnicodeDecodeWithOffsets": (_decode_infer, _decode_kernel, _DECODE_ATTRS,
                                 ("row_splits", "char_values", "char_to_byte_starts")),
    "UnicodeEncode": (_encode_infer, _encode_kernel, ("errors", "output_encoding", "replacement_char", "Tsplits"),
                      ()),
}

for _op, (_infer, _kernel, _attrs, _outputs) in UNICODE_OPS.items():
    register(_op, infer=_infer, kernel=_kernel, attrs=_attrs, output_args=_outputs)
