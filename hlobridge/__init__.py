"""hlobridge: TensorFlow GraphDefs -> StableHLO -> IREE, with a runtime that runs them."""

from . import ops  # noqa: F401  (fills the op registry)
from . import runtime
from .compile.driver import CompileOptions, CompiledModel, compile_graph, lower_graph
from .errors import (CompileError, GraphDefError, GraphError, HlobridgeError, InputError, LoweringError,
                     ShapeInferenceError, UnsupportedOpsError)
from .debug.explain import explain
from .frontend.graph import Graph, TensorRef
from .frontend.load import load_graph
from .runtime.session import Session
from .debug.timeline import RunMetadata, RunOptions

__version__ = "0.1.0"

__all__ = [
    "runtime", "Session", "explain", "CompileOptions", "CompiledModel", "compile_graph", "lower_graph", "Graph",
    "RunOptions", "RunMetadata",
    "TensorRef", "load_graph", "HlobridgeError", "GraphDefError", "GraphError",
    "UnsupportedOpsError", "ShapeInferenceError", "LoweringError", "CompileError", "InputError",
]
