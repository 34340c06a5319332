"""Strings, text preprocessing and lookup tables: ops that run on their reference kernels (StableHLO
has no strings), one module per family (importing this registers them all).

  strings       AsString, StringToNumber
  string_edits  StringStrip, StringLength, Substr, ReduceJoin, RegexFullMatch, Encode/DecodeBase64
  preprocess    StringLower, StringUpper, (Static)RegexReplace, StringSplitV2, StringNGrams,
                RaggedTensorToTensor, StringToHashBucketFast/Strong (Keras' TextVectorization)
  unicode       UnicodeDecode, UnicodeDecodeWithOffsets, UnicodeEncode
  tables        HashTable(V2), MutableHashTable*, MutableDenseHashTable*, Anonymous*Table,
                LookupTable{Find,Insert,Remove,Size,Export,Import}(V2), InitializeTable*(V2)
  farmhash      Fingerprint64 (FarmHash) for StringToHashBucketFast (no ops)
  siphash       SipHash-2-4 for StringToHashBucketStrong (no ops)
  string_kinds  which ops work on strings by definition, for clustering (no ops)
"""

from . import preprocess, string_edits, strings, tables, unicode  # noqa: F401  (registration)
