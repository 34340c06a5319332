"""hlobridge: TensorFlow GraphDefs -> StableHLO -> IREE, with a runtime that runs them."""

from . import ops  # noqa: F401  (fills the op registry)
from . import runtime
from .compiler import CompileOptions, CompiledModel, compile_graph, lower_graph
from .errors import (CheckpointError, CompileError, GraphDefError, GraphError, HlobridgeError, InputError,
                     LoweringError, SavedModelError, ShapeInferenceError, UnsupportedOpsError)
from .explain import explain
from .frontend.saved_model import load_saved_model
from .frontend.tensor_bundle import read_checkpoint
from .graph import Graph, TensorRef, load_graph
from .session import Session
from .timeline import RunMetadata, RunOptions

__version__ = "0.1.0"

__all__ = [
    "runtime", "Session", "explain", "CompileOptions", "CompiledModel", "compile_graph", "lower_graph", "Graph",
    "RunOptions", "RunMetadata", "load_saved_model", "read_checkpoint", "CheckpointError", "SavedModelError",
    "TensorRef", "load_graph", "HlobridgeError", "GraphDefError", "GraphError",
    "UnsupportedOpsError", "ShapeInferenceError", "LoweringError", "CompileError", "InputError",
]
