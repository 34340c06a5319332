"""Variables updated in place: a variable the function reads and writes gets its argument's
buffer as the storage of its new value (IREE's `iree.abi.output` on the argument), so a step
writes that variable where it lies instead of into a new buffer, where that is safe.

Safe means that nothing can read the old value after the new one is written, and IREE 3.13
does not see to that itself: it treats the argument and the storage as unrelated, and
schedules the in-place write by data dependences alone. With cnn_train's weights tied, the
dispatch that updates fc1's weights ran before the one computing the input gradient from
them, and the next step's loss was 29% off (tests/compile/test_in_place_hazard.py keeps a
reproduction). So a variable is tied only when every op reading it

- is an elementwise op over the variable's own shape, with the variable as a direct operand:
  in a dispatch it reads each element before the write of that element, and
- is an ancestor of the new value through the update's own elementwise ops: its read is done
  before the new value can be computed.

That holds for optimizer slots (Momentum's accumulator, Adam's m and v: read only by the
update itself) and for any variable that only its own update reads. One more case stays
untied because it measured slower: an update that adds a term reshaped into the variable's
shape (a convolution kernel's gradient comes out of its matmul as [KH*KW*C, F]); IREE then
computes the update in that layout and copies it into the argument. A weight that the
backward pass also reads (the input gradient of a layer) or a bias read through a broadcast
stays untied: a new buffer per step, as before. Making such a weight's update wait for its
other reads through a `stablehlo.optimization_barrier` (the weight and those reads' results in,
the weight the update reads out) gave the right numbers but cost more than it saved: IREE
ends its command buffer at each barrier and waits for it on the host, and materializes each
slice the barrier takes (cnn_train 1.30x slower, 11 submissions a step instead of 1).

The tied pairs (argument index, result index) go into the function's reflection under
`hlobridge.tied`, so a loaded binary says which arguments it writes (cluster_launch.py passes
only values nobody else holds there, ops/control/state.py VariableStore). Beside them, under
`hlobridge.fresh`, the variable results that come back in a buffer of their own: computed
(not an argument, nor a view of one), and the only result that is that computed value or a
view of it (a reshape, a bitcast or a slice, which IREE may return as the same memory). A
variable whose new value shares a buffer (`w.assign(v)` returns v's own buffer) must not be
written in place later, and the Session marks it so.
Under `hlobridge.aliased`, the variable arguments a result may be (itself or a view): a call
that reads a variable any other way holds nothing of it once it returns.
"""

from __future__ import annotations

import json

from iree.compiler import ir

from hlobridge.analysis.graph_algorithms import reachable
from hlobridge.lowering.signature import VARIABLE_SUFFIX, Signature

from .fusion import ELEMENTWISE_OPS, body_nodes
from .ir_helpers import dict_entries, note_in_reflection, signed_functions

TIED_KEY = "hlobridge.tied"
FRESH_KEY = "hlobridge.fresh"
ALIASED_KEY = "hlobridge.aliased"
RELAYOUT_OPS = frozenset({"stablehlo.reshape", "stablehlo.transpose"})
VIEW_OPS = frozenset({"stablehlo.reshape", "stablehlo.bitcast_convert", "stablehlo.slice"})
OUTPUT_STORAGE = "iree.abi.output"


def tie_variables(module: ir.Module) -> list[tuple[int, int]]:
    """Tie each variable argument of each exported function that can safely be written in
    place to its result (see the module docstring); returns the (argument, result) pairs."""
    return [pair for fn, signature in signed_functions(module)
            for pair in _tie_function(fn, Signature.from_json(signature))]


def _tie_function(fn: ir.Operation, signature: Signature) -> list[tuple[int, int]]:
    block = fn.regions[0].blocks[0]
    results = {name: k for k, (name, _) in enumerate(signature.outputs) if name.endswith(VARIABLE_SUFFIX)}
    nodes, ops = body_nodes(block)
    returned = list(block.operations[len(ops)].operands)
    index = {op: i for i, op in enumerate(ops)}
    readers: dict[int, list] = {}
    for n in nodes:
        for a in n.args:
            readers.setdefault(a, []).append(n)
    aliased = [i for i, (name, _) in enumerate(signature.inputs)
               if name.endswith(VARIABLE_SUFFIX) and _returned_as_view(block.arguments[i], returned)]
    old_value_returned = set(aliased)
    pairs = [(i, results[name]) for i, (name, _) in enumerate(signature.inputs)
             if name in results and i not in old_value_returned]
    tied = [(i, k) for i, k in pairs if _safe(block.arguments[i], returned[k], readers.get(i, []), nodes, ops, index)]
    fresh = [k for k in sorted(results.values()) if _fresh(returned[k], returned)]
    if tied:
        attrs = [dict_entries(a) for a in fn.attributes["arg_attrs"]] if "arg_attrs" in fn.attributes \
            else [{} for _ in block.arguments]
        for i, k in tied:
            attrs[i][OUTPUT_STORAGE] = ir.IntegerAttr.get(ir.IndexType.get(), k)
        fn.attributes["arg_attrs"] = ir.ArrayAttr.get([ir.DictAttr.get(a) for a in attrs])
    note_in_reflection(fn, {TIED_KEY: json.dumps(tied), FRESH_KEY: json.dumps(fresh), ALIASED_KEY: json.dumps(aliased)})
    return tied


def _fresh(value: ir.Value, returned: list) -> bool:
    """Whether `value`, a result, comes back in a buffer no other result or argument shares:
    the value it is a view of (itself, if none) is computed, and no other result is a view of
    that value too."""
    root = value
    while not isinstance(root.owner, ir.Block) and root.owner.operation.name in VIEW_OPS:
        root = root.owner.operation.operands[0]
    if isinstance(root.owner, ir.Block):
        return False
    views = _views(root)
    return sum(1 for v in returned if v in views) == 1


def _returned_as_view(arg: ir.Value, returned: list) -> bool:
    """Whether a result may be `arg`'s own buffer: `arg` itself or a view of it."""
    views = _views(arg)
    return any(v in views for v in returned)


def _views(value: ir.Value) -> set:
    """`value` and the values IREE may return as the same memory: reshapes, bitcasts, slices."""
    return reachable([value], lambda v: [r for use in v.uses if use.owner.name in VIEW_OPS
                                         for r in use.owner.results])


def _safe(arg: ir.Value, new: ir.Value, readers: list, nodes: list, ops: list, index: dict) -> bool:
    """Whether every read of `arg` is elementwise over its shape and done before `new` exists."""
    if isinstance(new.owner, ir.Block):
        return False  # unchanged (or another argument's value)
    shape = tuple(ir.RankedTensorType(arg.type).shape)
    if not all(n.name in ELEMENTWISE_OPS and tuple(n.shape) == shape and _direct(ops[n.index], arg)
               for n in readers):
        return False

    def update_chain(i):  # the elementwise ops of the variable's shape
        return [j for j in i if nodes[j].name in ELEMENTWISE_OPS and tuple(nodes[j].shape) == shape]

    # Each read reaches the new value through the update's own elementwise ops: done before it
    # (a read that gets there any other way is not looked for: the variable stays untied).
    target = index[new.owner.operation]
    if not all(target in reachable([n.index], lambda i: update_chain(nodes[i].users)) for n in readers):
        return False
    # The elementwise update and what it reads: a term reshaped (or transposed) into the
    # variable's shape, a convolution kernel's gradient from its matmul, makes IREE compute
    # the update in the matmul's layout and copy it into the argument afterwards: slower than
    # a new buffer (ResNet-50 training: 53 such copies, 94 MB a step).
    update = reachable([target], lambda i: update_chain(nodes[i].operands))
    return not any(nodes[p].name in RELAYOUT_OPS for i in update for p in nodes[i].operands)


def _direct(op: ir.Operation, arg: ir.Value) -> bool:
    """`op` reads `arg` as an operand of its own (not from a nested region)."""
    return not len(op.regions) and any(v == arg for v in op.operands)
