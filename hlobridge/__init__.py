"""hlobridge: TensorFlow GraphDefs -> StableHLO -> IREE, with a runtime that runs them."""

from . import ops  # noqa: F401  (fills the op registry)
from . import runtime
from .compile.driver import CompileOptions, CompiledModel, compile_graph, lower_graph
from .debug.explain import explain
from .debug.timeline import RunMetadata, RunOptions
from .errors import (CheckpointError, CompileError, GraphDefError, GraphError, HlobridgeError, InputError,
                     LoweringError, ResourceLimitError, SavedModelError, ShapeInferenceError,
                     UnsupportedOpsError)
from .frontend.graph import Graph, TensorRef
from .frontend.load import load_graph
from .frontend.tensor_bundle import read_checkpoint
from .runtime.saved_model import load_saved_model
from .runtime.session import Session

__version__ = "0.1.0"

__all__ = [
    "runtime", "Session", "explain", "CompileOptions", "CompiledModel", "compile_graph", "lower_graph", "Graph",
    "RunOptions", "RunMetadata", "load_saved_model", "read_checkpoint", "CheckpointError", "SavedModelError",
    "TensorRef", "load_graph", "HlobridgeError", "GraphDefError", "GraphError",
    "UnsupportedOpsError", "ShapeInferenceError", "LoweringError", "CompileError", "InputError",
    "ResourceLimitError",
]
