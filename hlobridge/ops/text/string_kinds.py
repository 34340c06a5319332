"""Which ops work on strings by definition: clustering's "string_tensor" reason.

These ops have no type attribute that says "string" (an Identity or ConcatV2 of strings is
found by its attribute), so clustering asks this set; it gathers the string op families
(preprocess.py, unicode.py, string_edits.py, strings.py, control/checkpoint.py's path ops) in one place.
"""

from __future__ import annotations

from .string_edits import STRING_EDITS
from .preprocess import TEXT_OPS
from .unicode import UNICODE_OPS

STRING_OPS = (frozenset(TEXT_OPS) - {"RaggedTensorToTensor"}) | frozenset(UNICODE_OPS) | \
    frozenset(STRING_EDITS) | {"AsString", "StringToNumber", "StringJoin", "StaticRegexFullMatch"}
