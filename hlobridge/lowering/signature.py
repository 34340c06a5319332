"""The signature a compiled function carries: its inputs' and outputs' names, dtypes and
shapes, as JSON in the function's `iree.reflection` attribute, which IREE keeps in the
`.vmfb`. Lowering writes it; the runtime reads it back to check and name arguments. It is
its own module so that the runtime needs nothing else of lowering (nor MLIR).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from .. import dtypes
from ..spec import TensorSpec

SIGNATURE_KEY = "hlobridge.signature"
# Variables a function reads are trailing inputs, those it writes trailing outputs, named so.
VARIABLE_SUFFIX = " (variable)"


@dataclass
class Signature:
    """Names, dtypes and shapes of a compiled function's inputs and outputs."""

    inputs: list[tuple[str, TensorSpec]]
    outputs: list[tuple[str, TensorSpec]]

    def to_json(self) -> str:
        """The JSON stored in the module (dtype names as TensorFlow spells them)."""
        def enc(items):
            return [{"name": n, "dtype": dtypes.name(s.dtype), "shape": list(s.shape)} for n, s in items]
        return json.dumps({"inputs": enc(self.inputs), "outputs": enc(self.outputs)})

    def variables_read(self) -> list[str]:
        """The names of the variables the function reads (trailing inputs), in order."""
        return [n.removesuffix(VARIABLE_SUFFIX) for n, _ in self.inputs if n.endswith(VARIABLE_SUFFIX)]

    def variables_written(self) -> list[str]:
        """The names of the variables the function writes (trailing outputs), in order."""
        return [n.removesuffix(VARIABLE_SUFFIX) for n, _ in self.outputs if n.endswith(VARIABLE_SUFFIX)]

    @classmethod
    def from_json(cls, text: str) -> "Signature":
        """The signature back from the module's JSON (bfloat16 and friends via ml_dtypes)."""
        def dec(items):
            return [(d["name"], TensorSpec(np.dtype(getattr(ml_dtypes, d["dtype"], d["dtype"])),
                                           tuple(d["shape"]))) for d in items]
        data = json.loads(text)
        return cls(dec(data["inputs"]), dec(data["outputs"]))
