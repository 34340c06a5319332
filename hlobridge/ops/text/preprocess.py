"""Text preprocessing ops, as Keras' TextVectorization and StringLookup write them: case
folding, regex replacement (standardize), whitespace splitting into a ragged tensor, the
ragged tensor padded to a dense one, and hashing strings into OOV buckets.

All run on their reference kernels only: StableHLO has no strings, so clustering leaves
every op that touches one to its kernel ("string_tensor", see passes/graph/
mark_for_compilation.py). RaggedTensorToTensor is numeric, but XLA does not compile it
either (it is not in xla_ops.json): TextVectorization runs it on the int64 token ids between
the string part and the numeric rest, which clusters on its own.

Each follows TensorFlow 2.21's CPU kernel:

- StringToHashBucketFast: `Fingerprint64(s) % num_buckets` (farmhash.py);
  StringToHashBucketStrong: `SipHash-2-4(key, s) % num_buckets` (siphash.py);
- StringLower / StringUpper: ASCII case mapping by default (absl::AsciiStrToLower); with
  encoding "utf-8", Unicode case mapping (TF uses ICU; Python's str.lower agrees except
  for a few locale-sensitive letters such as U+0130);
- StaticRegexReplace / RegexReplace: RE2's Replace / GlobalReplace. Patterns run on Python's
  `re` over the UTF-8 text (RE2 matches UTF-8 characters, not bytes); RE2-only syntax
  (POSIX classes `[[:alpha:]]`, `\\C`, `\\z`, `\\pN` classes) is translated where
  possible and refused with an error naming the node otherwise; `\\w \\d \\s \\b` are
  ASCII-only, as in RE2. The rewrite's `\\0`-`\\9` name groups as in RE2. GlobalReplace
  does not take an empty match right after the previous match, as RE2 does;
- StringSplitV2: Python's str.split semantics, which TF's SplitV2 copies (an empty `sep`
  splits on runs of ASCII whitespace and drops empty pieces; a given `sep` keeps them),
  `maxsplit` as in Python; outputs the SparseTensor (indices, values, dense_shape);
- StringNGrams (TextVectorization's `ngrams`): TF's StringNGramsOp, padding and
  preserve_short_sequences included;
- RaggedTensorToTensor: ROW_SPLITS partitions (any number of ragged levels) and
  FIRST_DIM_SIZE + VALUE_ROWIDS; `shape` dims of -1 (or a scalar -1) take the ragged
  tensor's bounding box; longer rows are truncated; `default_value` broadcasts to the
  inner dims.
"""

from __future__ import annotations

import re

import numpy as np

from ...errors import InputError
from ...spec import TensorSpec
from .farmhash import fingerprint64
from ..helpers import ints, value_of
from ..registry import register
from .siphash import siphash24
from .strings import STRING, _string_array, _to_bytes

INT64 = np.dtype(np.int64)


def string_list(ctx, x) -> list[bytes]:
    """A string tensor's elements, flattened, as bytes (an error naming the node for non-strings)."""
    return [_to_bytes(ctx, v) for v in np.asarray(x, dtype=object).ravel()]


def same_shape_infer(dtype):
    """Infer rule of an elementwise string op: input 0's shape, of `dtype`."""
    def infer(ctx):
        return [TensorSpec(dtype, ctx.inputs[0].shape)]
    return infer


def map_strings(ctx, x, fn, dtype=STRING) -> np.ndarray:
    """Apply `fn(bytes)` to each element of string tensor x."""
    x = np.asarray(x, dtype=object)
    out = [fn(s) for s in string_list(ctx, x)]
    return _string_array(out, x.shape) if dtype == STRING else np.array(out, dtype).reshape(x.shape)


# -- hashing into buckets -------------------------------------------------------------------------


def _num_buckets(ctx) -> int:
    n = int(ctx.attr("num_buckets"))
    if n < 1:
        raise ctx.error(f"num_buckets must be at least 1, got {n}")
    return n


def _hash_bucket_fast(ctx, x):
    n = _num_buckets(ctx)
    return map_strings(ctx, x, lambda s: fingerprint64(s) % n, INT64)


def _hash_bucket_strong(ctx, x):
    n = _num_buckets(ctx)
    key = [int(k) & ((1 << 64) - 1) for k in ctx.attr("key")]
    if len(key) != 2:
        raise ctx.error(f"key must be a list of 2 integers (a 128-bit SipHash key), got {len(key)}")
    return map_strings(ctx, x, lambda s: siphash24(key[0], key[1], s) % n, INT64)


# -- case folding ---------------------------------------------------------------------------------


def _case_map(ascii_fn, unicode_fn):
    def kernel(ctx, x):
        encoding = ctx.attr("encoding", "")
        encoding = encoding.decode() if isinstance(encoding, bytes) else encoding
        if encoding == "":
            return map_strings(ctx, x, ascii_fn)
        if encoding.lower().replace("-", "") != "utf8":
            raise ctx.error(f"encoding '{encoding}' is not supported (TF takes '' or 'utf-8')")

        def unicode(s: bytes) -> bytes:
            try:
                return unicode_fn(s.decode("utf-8")).encode("utf-8")
            except UnicodeDecodeError:
                raise ctx.error(f"string {s[:40]!r} is not valid UTF-8", cls=InputError) from None
        return map_strings(ctx, x, unicode)
    return kernel


# -- regular expressions --------------------------------------------------------------------------

# RE2 syntax that Python's `re` spells differently (POSIX classes inside brackets, \z).
_POSIX_CLASSES = {
    "alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": "\\x00-\\x7f", "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f", "digit": "0-9", "graph": "!-~", "lower": "a-z",
    "print": " -~", "punct": "!-/:-@\\[-`{-~", "space": "\\t\\n\\v\\f\\r ", "upper": "A-Z",
    "word": "0-9A-Za-z_", "xdigit": "0-9A-Fa-f",
}
_RE2_ONLY = re.compile(r"\\[CpP]")


def compile_re2(ctx, pattern) -> re.Pattern:
    text = _to_bytes(ctx, pattern).decode("utf-8", "surrogateescape")
    if _RE2_ONLY.search(text.replace("\\\\", "")):
        raise ctx.error(f"pattern {text!r} uses RE2 syntax that hlobridge does not translate (\\C, \\p, \\P)")
    text = re.sub(r"\[:(\^?)(\w+):\]", lambda m: _posix_class(ctx, m, text), text)
    text = text.replace("\\z", "\\Z")
    try:
        return re.compile(text, re.ASCII)  # RE2's \w \d \s \b are ASCII-only
    except re.error as e:
        raise ctx.error(f"invalid pattern {text!r}: {e}") from None


def _posix_class(ctx, m, text) -> str:
    if m.group(1) or m.group(2) not in _POSIX_CLASSES:
        raise ctx.error(f"pattern {text!r}: POSIX class [:{m.group(1)}{m.group(2)}:] is not supported")
    return _POSIX_CLASSES[m.group(2)]


def _re2_rewrite(ctx, rewrite) -> str:
    """An RE2 rewrite string (\\0-\\9 name groups, \\\\ a backslash) as a `Match.expand` template."""
    text = _to_bytes(ctx, rewrite).decode("utf-8", "surrogateescape")
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c != "\\":
            out.append(c)
        elif i + 1 < len(text) and text[i + 1].isdigit():
            out.append(f"\\g<{text[i + 1]}>")
            i += 1
        elif i + 1 < len(text) and text[i + 1] == "\\":
            out.append("\\\\")
            i += 1
        else:
            raise ctx.error(f"invalid rewrite {text!r}: a backslash must be followed by a digit or a backslash")
        i += 1
    return "".join(out)


def _replace(rx: re.Pattern, template: str, text: str, replace_global: bool) -> str:
    """RE2::GlobalReplace (or Replace: the first match only)."""
    out, pos, last_end = [], 0, -1
    for m in rx.finditer(text):
        if m.start() == m.end() == last_end:  # RE2 takes no empty match right after a match
            continue
        out += [text[pos:m.start()], m.expand(template)]
        pos = last_end = m.end()
        if not replace_global:
            break
    out.append(text[pos:])
    return "".join(out)


def _regex_kernel(ctx, x, rx, template, replace_global):
    def one(s: bytes) -> bytes:
        text = s.decode("utf-8", "surrogateescape")
        return _replace(rx, template, text, replace_global).encode("utf-8", "surrogateescape")
    return map_strings(ctx, x, one)


def _static_regex_replace(ctx, x):
    rx, template = compile_re2(ctx, ctx.attr("pattern")), _re2_rewrite(ctx, ctx.attr("rewrite"))
    return _regex_kernel(ctx, x, rx, template, bool(ctx.attr("replace_global", True)))


def _regex_replace(ctx, x, pattern, rewrite):
    for i, v in ((1, pattern), (2, rewrite)):
        if np.ndim(v) != 0:
            raise ctx.error(f"input {i} ({'pattern' if i == 1 else 'rewrite'}) must be a scalar, "
                            f"got shape {list(np.shape(v))}", cls=InputError)
    rx = compile_re2(ctx, np.asarray(pattern, dtype=object).item())
    template = _re2_rewrite(ctx, np.asarray(rewrite, dtype=object).item())
    return _regex_kernel(ctx, x, rx, template, bool(ctx.attr("replace_global", True)))


# -- StringSplitV2 ----------------------------------------------------------------------------------


def _split_infer(ctx):
    shape = ctx.inputs[0].shape
    if shape is not None and len(shape) != 1:
        raise ctx.error(f"input must be a vector, got shape {list(shape)}")
    return [TensorSpec(INT64, (None, 2)), TensorSpec(STRING, (None,)), TensorSpec(INT64, (2,))]


def _split_kernel(ctx, x, sep):
    x = np.asarray(x, dtype=object)
    if x.ndim != 1:
        raise ctx.error(f"input must be a vector, got shape {list(x.shape)}", cls=InputError)
    if np.ndim(sep) != 0:
        raise ctx.error(f"sep must be a scalar, got shape {list(np.shape(sep))}", cls=InputError)
    sep = _to_bytes(ctx, np.asarray(sep, dtype=object).item())
    maxsplit = int(ctx.attr("maxsplit", -1))
    indices, values, width = [], [], 0
    for row, s in enumerate(string_list(ctx, x)):
        pieces = s.split(sep or None, maxsplit)
        indices += [(row, j) for j in range(len(pieces))]
        values += pieces
        width = max(width, len(pieces))
    return [np.array(indices, INT64).reshape(-1, 2), _string_array(values, (len(values),)),
            np.array([x.shape[0], width], INT64)]


# -- StringNGrams -----------------------------------------------------------------------------------


def _ngrams_infer(ctx):
    splits = ctx.inputs[1]
    return [TensorSpec(STRING, (None,)), TensorSpec(splits.dtype, splits.shape)]


def _check_splits(ctx, splits: np.ndarray, size: int) -> None:
    """TF's checks on a ragged tensor's row splits: a vector from 0 to the data size, not decreasing."""
    if splits.ndim != 1 or splits.size == 0:
        raise ctx.error(f"data_splits must be a non-empty vector, got shape {list(splits.shape)}", cls=InputError)
    if splits[0] != 0:
        raise ctx.error(f"First split value must be 0, got {int(splits[0])}", cls=InputError)
    if np.any(np.diff(splits) < 0) or splits[-1] > size:
        raise ctx.error(f"Invalid split values {ints(splits)} for data of size {size}", cls=InputError)
    if splits[-1] != size:
        raise ctx.error(f"Last split value must be data size. Expected {size}, got {int(splits[-1])}",
                        cls=InputError)


def _ngrams_kernel(ctx, data, splits):
    """TF's StringNGramsOp: per row, the ngrams of each width in turn, padded with left_pad /
    right_pad up to pad_width tokens (-1: width - 1) on each side."""
    data, splits = string_list(ctx, data), np.asarray(splits)
    _check_splits(ctx, splits, len(data))
    text = lambda name: _to_bytes(ctx, ctx.attr(name))  # noqa: E731
    sep, left, right = text("separator"), text("left_pad"), text("right_pad")
    widths, pad_attr = [int(w) for w in ctx.attr("ngram_widths")], int(ctx.attr("pad_width"))
    if any(w <= 0 for w in widths):
        raise ctx.error(f"ngram_widths must be positive, got {widths}")
    preserve = bool(ctx.attr("preserve_short_sequences"))
    pad_of = lambda w: min(w - 1 if pad_attr < 0 else pad_attr, w - 1)  # noqa: E731
    count = lambda n, w: max(0, n + 2 * pad_of(w) - w + 1)  # noqa: E731
    out, out_splits = [], [0]
    for start, end in zip(splits[:-1], splits[1:]):
        tokens = data[start:end]
        before = len(out)
        for w in widths:
            out += _ngrams(tokens, w, pad_of(w), count(len(tokens), w), sep, left, right)
        if preserve and len(out) == before and tokens:
            w = len(tokens) + 2 * pad_attr
            out += _ngrams(tokens, w, pad_of(w), 1, sep, left, right)
        out_splits.append(len(out))
    return [_string_array(out, (len(out),)), np.array(out_splits, splits.dtype)]


def _ngrams(tokens, width, pad, num, sep, left, right) -> list[bytes]:
    """TF's CreateNgrams: `num` ngrams of `width` tokens, padding counted in tokens."""
    out = []
    for i in range(num):
        left_n, right_n = max(0, pad - i), max(0, pad - (num - (i + 1)))
        n = width - left_n - right_n
        first = 0 if left_n > 0 else i - pad
        parts = [left] * left_n + list(tokens[first:first + n]) + [right] * right_n
        out.append(sep.join(parts))
    return out


# -- RaggedTensorToTensor ---------------------------------------------------------------------------


def _partition_types(ctx) -> list[str]:
    types = [t.decode() if isinstance(t, bytes) else t for t in ctx.attr("row_partition_types")]
    supported = types and all(t == "ROW_SPLITS" for t in types) or (
        types[:1] == ["FIRST_DIM_SIZE"] and all(t == "VALUE_ROWIDS" for t in types[1:]) and len(types) > 1)
    if not supported:
        raise ctx.error(f"row_partition_types {types} are not supported (ROW_SPLITS..., or FIRST_DIM_SIZE "
                        f"then VALUE_ROWIDS...)")
    return types


def _ragged_rank(types) -> int:
    return len(types) - (types[0] == "FIRST_DIM_SIZE")


def _ragged_to_tensor_infer(ctx):
    types = _partition_types(ctx)
    values = ctx.inputs[1]
    rank = None if values.shape is None else _ragged_rank(types) + len(values.shape)
    shape = value_of(ctx, 0)
    if shape is not None and shape.ndim == 1:
        dims = [None if d < 0 else d for d in ints(shape)]
        if rank is not None and len(dims) != rank:
            raise ctx.error(f"shape {ints(shape)} has rank {len(dims)}, the ragged tensor has rank {rank}")
        if values.shape is not None:  # the inner dims are the values'
            start = len(dims) - len(values.shape[1:])
            dims[start:] = [v if d is None else d for d, v in zip(dims[start:], values.shape[1:])]
        return [TensorSpec(values.dtype, tuple(dims))]
    if rank is None:
        return [TensorSpec(values.dtype, None)]
    inner = values.shape[1:]
    return [TensorSpec(values.dtype, (None,) * (rank - len(inner)) + tuple(inner))]


def _splits_from_rowids(rowids, nrows) -> np.ndarray:
    rowids = np.asarray(rowids, np.int64)
    return np.concatenate([[0], np.cumsum(np.bincount(rowids, minlength=nrows)[:nrows])]).astype(np.int64)


def _ragged_to_tensor_kernel(ctx, shape, values, default_value, *partitions):
    types = _partition_types(ctx)
    values = np.asarray(values)
    if types[0] == "FIRST_DIM_SIZE":
        nrows = int(np.asarray(partitions[0]))
        splits, parents = [], nrows
        for rowids in partitions[1:]:
            s = _splits_from_rowids(rowids, parents)
            splits.append(s)
            parents = int(s[-1])
    else:
        splits = [np.asarray(p, np.int64) for p in partitions]
    for level, s in enumerate(splits):
        if s.ndim != 1 or s.size == 0 or s[0] != 0 or np.any(np.diff(s) < 0):
            raise ctx.error(f"row partition {level} is not a valid row_splits vector (it must start at 0 "
                            f"and not decrease)", cls=InputError)
    if int(splits[-1][-1]) != values.shape[0]:
        raise ctx.error(f"the last row partition ends at {int(splits[-1][-1])}, but values has "
                        f"{values.shape[0]} rows", cls=InputError)
    # each level's elements: their coordinates in the dense result
    coords = np.arange(len(splits[0]) - 1, dtype=np.int64)[:, None]
    bounds = [coords.shape[0]]
    for s in splits:
        lengths = np.diff(s)
        parent = np.repeat(np.arange(len(lengths)), lengths)
        position = np.arange(int(s[-1]), dtype=np.int64) - s[parent]
        coords = np.concatenate([coords[parent], position[:, None]], axis=1)
        bounds.append(int(lengths.max()) if lengths.size else 0)
    inner = values.shape[1:]
    out_shape = _resolve_shape(ctx, shape, bounds, inner)
    outer = out_shape[:len(bounds)]
    if tuple(out_shape[len(bounds):]) != tuple(inner):
        raise ctx.error(f"shape {list(out_shape)} does not end with the values' inner shape {list(inner)}",
                        cls=InputError)
    default = np.asarray(default_value, values.dtype)
    try:
        out = np.broadcast_to(default, out_shape).copy()
    except ValueError:
        raise ctx.error(f"default_value of shape {list(default.shape)} does not broadcast to the inner "
                        f"shape {list(inner)}", cls=InputError) from None
    keep = np.all(coords < np.asarray(outer, np.int64), axis=1) if coords.size else np.zeros(0, bool)
    out[tuple(coords[keep].T)] = values[keep]
    return out


def _resolve_shape(ctx, shape, bounds, inner) -> list[int]:
    shape = np.asarray(shape)
    rank = len(bounds) + len(inner)
    if shape.ndim == 0 or shape.size == 0:  # a scalar -1 (or an empty shape): unknown rank
        if shape.ndim == 0 and int(shape) != -1:
            raise ctx.error(f"shape must be a vector or -1, got {int(shape)}", cls=InputError)
        return bounds + list(inner)
    dims = ints(shape)
    if len(dims) != rank:
        raise ctx.error(f"shape {dims} has rank {len(dims)}, the ragged tensor has rank {rank}", cls=InputError)
    natural = bounds + list(inner)
    return [n if d < 0 else d for d, n in zip(dims, natural)]


# -- registration ----------------------------------------------------------------------------------

# op -> (infer, kernel, attrs, output_args); none has a lowering (see the module docstring)
TEXT_OPS = {
    "StringToHashBucketFast": (same_shape_infer(INT64), _hash_bucket_fast, ("num_buckets",), ()),
    "StringToHashBucketStrong": (same_shape_infer(INT64), _hash_bucket_strong, ("num_buckets", "key"), ()),
    "StringLower": (same_shape_infer(STRING), _case_map(bytes.lower, str.lower), ("encoding",), ()),
    "StringUpper": (same_shape_infer(STRING), _case_map(bytes.upper, str.upper), ("encoding",), ()),
    "StaticRegexReplace": (same_shape_infer(STRING), _static_regex_replace,
                           ("pattern", "rewrite", "replace_global"), ()),
    "RegexReplace": (same_shape_infer(STRING), _regex_replace, ("replace_global",), ()),
    "StringSplitV2": (_split_infer, _split_kernel, ("maxsplit",), ("indices", "values", "shape")),
    "StringNGrams": (_ngrams_infer, _ngrams_kernel, ("separator", "ngram_widths", "left_pad", "right_pad",
                                                     "pad_width", "preserve_short_sequences", "Tsplits"),
                     ("ngrams", "ngrams_splits")),
    "RaggedTensorToTensor": (_ragged_to_tensor_infer, _ragged_to_tensor_kernel,
                             ("T", "Tindex", "Tshape", "num_row_partition_tensors", "row_partition_types"), ()),
}

for _op, (_infer, _kernel, _attrs, _outputs) in TEXT_OPS.items():
    register(_op, infer=_infer, kernel=_kernel, attrs=_attrs, output_args=_outputs)
