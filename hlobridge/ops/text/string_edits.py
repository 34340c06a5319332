"""The tf.strings ops that serving signatures use around a model: strip, length, substr,
reduce_join, regex_full_match, and web-safe base64 (image bytes sent as JSON text).

Reference kernels only (strings never compile). Each follows TensorFlow 2.21's CPU kernel:

- StringStrip: ASCII whitespace off both ends (absl::StripAsciiWhitespace);
- StringLength: bytes, or with unit UTF8_CHAR the bytes that do not continue a UTF-8 sequence;
- Substr: `pos` and `len` broadcast against the input (TF allows either the same shape as the
  input or scalars); a negative `pos` counts from the end; `pos` outside [-size, size] is an
  error in TF's words; `len` past the end stops at the end; UTF8_CHAR counts characters;
- ReduceJoin: joins along each reduced axis in the order given (the first varies fastest),
  `separator` between;
- RegexFullMatch: RE2 full match of a pattern tensor (preprocess.py's RE2 translation);
- EncodeBase64 / DecodeBase64: the web-safe alphabet (- and _), `pad` adds "=" padding;
  decoding takes either.
"""

from __future__ import annotations

import base64
import binascii

import numpy as np

from ...errors import InputError
from ...spec import TensorSpec
from ..helpers import broadcast_shapes, ints, value_of
from ..registry import register
from .strings import STRING, _string_array, _to_bytes
from .preprocess import compile_re2, map_strings, same_shape_infer, string_list

_SPACE = b" \t\n\v\f\r"


def _unit(ctx) -> str:
    unit = ctx.attr("unit", "BYTE")
    unit = unit.decode() if isinstance(unit, bytes) else unit
    if unit not in ("BYTE", "UTF8_CHAR"):
        raise ctx.error(f"unit must be BYTE or UTF8_CHAR, got '{unit}'")
    return unit


def _char_starts(s: bytes) -> list[int]:
    """Byte offsets of the UTF-8 characters of s (bytes that do not continue a sequence)."""
    return [i for i, c in enumerate(s) if c & 0xC0 != 0x80]


def _length(ctx, x):
    utf8 = _unit(ctx) == "UTF8_CHAR"
    return map_strings(ctx, x, lambda s: len(_char_starts(s)) if utf8 else len(s), np.dtype(np.int32))


def _substr_infer(ctx):
    return [TensorSpec(STRING, broadcast_shapes(ctx, *(s.shape for s in ctx.inputs)))]


def _substr(ctx, x, pos, length):
    utf8 = _unit(ctx) == "UTF8_CHAR"
    x, pos, length = np.broadcast_arrays(np.asarray(x, dtype=object), np.asarray(pos), np.asarray(length))
    out = []
    for i, (s, p, n) in enumerate(zip(string_list(ctx, x), pos.ravel().tolist(), length.ravel().tolist())):
        starts = _char_starts(s) + [len(s)] if utf8 else list(range(len(s) + 1))
        size = len(starts) - 1
        if not -size <= p <= size:
            raise ctx.error(f"pos {p} out of range for string b'{s.decode('utf-8', 'replace')}' at index {i}",
                            cls=InputError)
        p = p + size if p < 0 else p
        end = size if n < 0 else min(size, p + n)
        out.append(s[starts[p]:starts[end]])
    return _string_array(out, x.shape)


def _reduce_axes(ctx, rank: int, axes) -> list[int]:
    """The reduced axes, non-negative, in the order given: TF joins along the first one first."""
    out = []
    for a in axes:
        if not -rank <= a < max(rank, 1):
            raise ctx.error(f"Invalid reduction dimension {a} for input with {rank} dimension(s)")
        if rank and a % rank in out:
            raise ctx.error(f"Duplicate reduction dimension {a}")
        out += [a % rank] if rank else []
    return out


def _reduce_join_infer(ctx):
    x, axes = ctx.inputs[0], value_of(ctx, 1)
    if x.shape is None or axes is None:
        return [TensorSpec(STRING, None)]
    axes, keep = _reduce_axes(ctx, len(x.shape), ints(axes)), bool(ctx.attr("keep_dims", False))
    return [TensorSpec(STRING, tuple(1 if i in axes else d for i, d in enumerate(x.shape) if keep or i not in axes))]


def _reduce_join(ctx, x, reduction_indices):
    x = np.asarray(x, dtype=object)
    axes, keep = _reduce_axes(ctx, x.ndim, ints(reduction_indices)), bool(ctx.attr("keep_dims", False))
    sep = _to_bytes(ctx, ctx.attr("separator", ""))
    kept = [a for a in range(x.ndim) if a not in axes]
    # the first reduced axis varies fastest in the joined order
    moved = np.transpose(x, kept + axes[::-1]).reshape([x.shape[a] for a in kept] + [-1])
    joined = [sep.join(_to_bytes(ctx, v) for v in row) for row in moved.reshape(-1, moved.shape[-1])]
    shape = [1 if a in axes else x.shape[a] for a in range(x.ndim)] if keep else [x.shape[a] for a in kept]
    return _string_array(joined, tuple(shape))


def _regex_full_match(ctx, x, pattern):
    if np.ndim(pattern) != 0:
        raise ctx.error(f"pattern must be a scalar, got shape {list(np.shape(pattern))}", cls=InputError)
    rx = compile_re2(ctx, np.asarray(pattern, dtype=object).item())
    return map_strings(ctx, x, lambda s: rx.fullmatch(s.decode("utf-8", "surrogateescape")) is not None,
                        np.dtype(bool))


def _encode_base64(ctx, x):
    pad = bool(ctx.attr("pad", False))
    return map_strings(ctx, x, lambda s: base64.urlsafe_b64encode(s) if pad else
                        base64.urlsafe_b64encode(s).rstrip(b"="))


def _decode_base64(ctx, x):
    def one(s: bytes) -> bytes:
        body = s.rstrip(b"=")
        if len(body) % 4 == 1 or len(s) - len(body) > 2:
            raise ctx.error(f"Invalid base64 data: {s[:40]!r}", cls=InputError)
        try:
            return base64.b64decode(body + b"=" * (-len(body) % 4), altchars=b"-_", validate=True)
        except binascii.Error:
            raise ctx.error(f"Invalid base64 data: {s[:40]!r}", cls=InputError) from None
    return map_strings(ctx, x, one)


# op -> (infer, kernel, attrs)
STRING_EDITS = {
    "StringStrip": (same_shape_infer(STRING), lambda ctx, x: map_strings(ctx, x, lambda s: s.strip(_SPACE)), ()),
    "StringLength": (same_shape_infer(np.dtype(np.int32)), _length, ("unit",)),
    "Substr": (_substr_infer, _substr, ("T", "unit")),
    "ReduceJoin": (_reduce_join_infer, _reduce_join, ("keep_dims", "separator")),
    "RegexFullMatch": (same_shape_infer(np.dtype(bool)), _regex_full_match, ()),
    "EncodeBase64": (same_shape_infer(STRING), _encode_base64, ("pad",)),
    "DecodeBase64": (same_shape_infer(STRING), _decode_base64, ()),
}

for _op, (_infer, _kernel, _attrs) in STRING_EDITS.items():
    register(_op, infer=_infer, kernel=_kernel, attrs=_attrs)
