"""The op registry, filled by importing each family module once."""

from . import (basic, checkpoint, control_flow, einsum, elementwise, image, layout, linalg, nn, reductions,  # noqa: F401
               scatter, segments, shape_ops, state, strings, variable_indexing, volumetric)  # (registration)
from .registry import REGISTRY, OpContext, OpDef, lookup, register  # noqa: F401
