"""Loops and conditionals that carry TF1 TensorArray handles may compile.

A `While` or `If` whose loop variables or arguments include a resource is normally left out
of clusters (`resource_output`: a variable lives in the session). A TensorArray's handle is
different: in IR it is no value at all, its flow carries the array (ops/lists/tensor_arrays.py), so
a loop over a TensorArray (v1 `dynamic_rnn`, `raw_rnn`) may compile as long as every
resource it carries is only used by TensorArray ops in its functions (or passed through).
"""

from __future__ import annotations

from hlobridge import dtypes
from hlobridge.frontend.graph import FuncAttr
from hlobridge.ops.lists.tensor_arrays import TENSOR_ARRAY_OPS


def functions_of(node) -> list[FuncAttr]:
    """The functions a node runs (If's branches, While's cond and body, Case's branches)."""
    found = []
    for value in node.attrs.values():
        found += [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, FuncAttr)]
    return found


def carries_array_handles_only(node, library) -> bool:
    """Whether `node` runs functions in which every resource argument is used only by
    TensorArray ops (or by nested calls that obey the same rule), and by some in at least one
    of them (a handle that is merely passed on might be a variable's). The functions of a
    While or If take the same arguments in the same order."""
    functions = functions_of(node)
    if library is None or not functions:
        return False
    resource, used = set(), set()
    for f in functions:
        fn = library.get(f)
        for position, arg in enumerate(fn.args):
            if fn.graph.nodes[arg].attrs.get("dtype") != dtypes.RESOURCE:
                continue
            resource.add(position)
            users = [fn.graph.nodes[u] for u in fn.graph.consumers[arg]]
            if not all(u.op in TENSOR_ARRAY_OPS or carries_array_handles_only(u, library) for u in users):
                return False
            if users:
                used.add(position)
    return resource == used
