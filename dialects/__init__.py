"""hlobridge's MLIR dialect modules: builders for the StableHLO (and CHLO) ops it emits.

This package is also where the MLIR bindings find a Python module for those dialects. The
first time the bindings wrap an op of a dialect (an op's `.owner`, a block's `.operations`),
they import `<prefix>.<namespace>` to look for its op classes. They remember a module they
found but not one they did not, and IREE's wheel has none for stablehlo or chlo, so every
wrapped op was a failed import: 1,810 of them lowering cnn_train, a second of ResNet-50
training's 2 s of lowering. With this package as a search prefix both lookups succeed once;
neither module registers op classes, so ops stay generic `OpView`s, as before.
"""

from iree.compiler._mlir_libs._mlir import globals as _mlir_globals

_mlir_globals.append_dialect_search_prefix(__name__)
