"""Every node checked against its op's TensorFlow signature before any rule sees it.

A rule's `infer` may assume its node is well formed: the number of inputs its op takes (variadic
`N`/`T` lists counted from the node's own attrs), and attrs of the declared types with their
allowed dtypes and minimums. An attr left out (hand-written graphs often leave out `T`) is the
rule's to ask for: `ctx.attr` names it when a rule needs it. This is one generic check, driven by
TensorFlow's own op signatures (`data/tf_op_signatures.json`, written by
tools/extract_tf_op_signatures.py with TensorFlow as a dev tool), not one check per op: a node
that fails it gets one line naming the node and what is wrong, never a traceback from inside
a rule.

Nodes built by hlobridge's own passes (no NodeDef behind them: an inlined call's IdentityN, a
functionalized If whose argument types are not all known) are checked for their arity only:
their attrs are hlobridge's, not the user's.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np

from .. import dtypes
from ..errors import GraphError

_DATA = Path(__file__).parent / "data" / "tf_op_signatures.json"
# TensorFlow's attr type -> a predicate on hlobridge's decoded value (frontend.graph.decode_attr)
_IS = {
    "int": lambda v: isinstance(v, (int, np.integer)) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, (int, float, np.number)) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, (bool, np.bool_)),
    "string": lambda v: isinstance(v, (str, bytes)),
    "type": lambda v: v in (dtypes.RESOURCE, dtypes.VARIANT) or isinstance(v, np.dtype),
    "shape": lambda v: v is None or isinstance(v, tuple),
    "tensor": lambda v: isinstance(v, np.ndarray),
    "func": lambda v: type(v).__name__ == "FuncAttr",
}


@cache
def signatures() -> dict:
    """Op name -> {"inputs": [[name, count]], "outputs": [...], "attrs": {name: {...}}}."""
    return json.loads(_DATA.read_text())


def check_node(node) -> None:
    """Raise a GraphError naming `node` if it does not fit its op's signature (ops without one,
    hlobridge's own, are not checked)."""
    sig = signatures().get(node.op)
    if sig is None:
        return
    where = f"node '{node.name}' ({node.op})"
    for name, spec in sig["attrs"].items() if node.node_def is not None else ():
        if name in node.attrs:  # a missing one is the rule's to ask for (ctx.attr names it)
            _check_attr(where, name, spec, node.attrs[name])
    expected = _arg_count(sig["inputs"], node.attrs)
    if expected is not None and expected != len(node.inputs):
        names = ", ".join(n for n, _ in sig["inputs"]) or "none"
        raise GraphError(f"{where}: takes {expected} input(s) ({names}), has {len(node.inputs)}")


def _arg_count(args: list, attrs: dict) -> int | None:
    """Sum of the args' sizes: 1, an int attr's value, or a type list's length (None if an attr
    that sizes an arg is absent)."""
    total = 0
    for _, count in args:
        if count == 1:
            total += 1
            continue
        value = attrs.get(count)
        if value is None:
            return None
        total += len(value) if isinstance(value, list) else int(value)
    return total


def _check_attr(where: str, name: str, spec: dict, value) -> None:
    kind = spec["type"]
    inner = kind[5:-1] if kind.startswith("list(") else None
    if inner is not None:
        ok = isinstance(value, list) and all(_IS.get(inner, _any)(v) for v in value)
    else:
        ok = _IS.get(kind, _any)(value)
    if not ok:
        raise GraphError(f"{where}: attribute '{name}' should be a {kind}, got {_describe(value)}")
    if "minimum" in spec:
        size = len(value) if inner is not None else value
        if size < spec["minimum"]:
            raise GraphError(f"{where}: attribute '{name}' is {size}; the op needs at least {spec['minimum']}")
    if "allowed" in spec:
        for dtype in value if inner is not None else [value]:
            if dtypes.name(dtype) in _NOT_NUMBERS and dtypes.name(dtype) not in spec["allowed"]:
                raise GraphError(f"{where}: attribute '{name}' is {dtypes.name(dtype)}; the op takes "
                                 f"{', '.join(spec['allowed'])}")


# Types that are not numbers: where an op's signature does not allow one, no rule can handle it.
# Among numeric types hlobridge's kernels and lowerings take more than TF's CPU kernels (uint16
# Add, int8 Mod): what compiles is the typesets' business (ops/typesets.py), not this check's.
_NOT_NUMBERS = frozenset({"string", dtypes.RESOURCE, dtypes.VARIANT})


def _any(value) -> bool:
    return True


def _describe(value) -> str:
    if isinstance(value, np.dtype):
        return f"the dtype {dtypes.name(value)}"
    text = repr(value)
    return f"{type(value).__name__} {text[:40]}{'...' if len(text) > 40 else ''}"
