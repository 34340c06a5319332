"""Running nodes on their NumPy reference kernels: one node, or a whole function body.

The Session runs its lone (uncompiled) nodes through `run_step`, and the kernels of
functional control flow (If, While, Case) run their bodies through `FunctionRunner.call`,
which plans a body once per argument signature and then runs it node by node.

Deadness, as TensorFlow's executor has it: a `Switch` sends its input to one output and
`DEAD` to the other; a node with a dead input (data or control) is dead itself and does
not run; `Merge` forwards whichever input is alive. This runs v1 conditionals that could
not be functionalized into `If`; dead nodes are recorded as `values[TensorRef(name, -1)]`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import dtypes
from ..analysis.shape_inference import FunctionShapes, infer_specs, outputs_by_node
from ..errors import HlobridgeError
from ..frontend.graph import FuncAttr, TensorRef
from ..ops import registry
from ..ops.kinds import DEAD, DEADNESS_AWARE
from ..ops.lists.values import TensorList, list_spec
from ..ops.control.state import VariableAccess, VariableHandle
from ..ops.lists.tensor_arrays import handle_key, handle_spec
from ..spec import TensorSpec
from .host import is_device_array, to_host


def dead_marker(name: str) -> TensorRef:
    """Where `values` records that node `name` is dead (it did not run)."""
    return TensorRef(name, -1)


@dataclass
class NodeStep:
    """A plan unit: a node run on its reference kernel, with its specs resolved at plan time."""

    name: str
    node: object
    entry: object
    out_specs: list
    in_specs: list
    deadness: bool = True  # whether a dead input can reach it (a Switch in its graph)

    def run(self, values: dict, env) -> None:
        """Run on `values` with the run's variables and functions (a plan.RunEnv)."""
        run_step(self, values, env.variables, env.functions)


def _is_dead(node, values: dict) -> bool:
    return (any(values.get(r) is DEAD for r in node.inputs) or
            any(dead_marker(c) in values for c in node.control_inputs))


def run_step(step: NodeStep, values: dict, variables, functions=None) -> None:
    """Run one node's kernel on `values` (TensorRef -> value) and store its outputs there."""
    name, node, entry = step.name, step.node, step.entry
    if step.deadness and node.op not in DEADNESS_AWARE and _is_dead(node, values):
        values[dead_marker(name)] = DEAD
        for i in range(len(step.out_specs)):
            values[TensorRef(name, i)] = DEAD
        return
    args = []
    for i, r in enumerate(node.inputs):
        v = values[r]
        if isinstance(v, VariableHandle):
            if i not in entry.ref_inputs and step.in_specs[i].dtype != dtypes.RESOURCE:
                v = variables.read_host(v, name)
        elif is_device_array(v):  # a cluster's output: to the host once
            v = values[r] = to_host(v)
        args.append(v)
    ctx = registry.OpContext(node, step.in_specs, step.out_specs,
                             VariableAccess(variables, node, args) if entry.stateful else None,
                             functions)
    try:
        results = registry.as_list(entry.kernel(ctx, *args))
    except HlobridgeError as e:
        if (functions is not None and ctx.functions is not None and _runs_functions(node)
                and not str(e.args[0]).startswith(f"node '{name}'")):  # an error of the node itself
            e.args = (f"{e.args[0]}\n  in node '{name}' ({node.op})",) + e.args[1:]
        raise
    except Exception as e:  # a kernel failing on real data: name the node
        raise HlobridgeError(f"node '{name}' ({node.op}) failed: {type(e).__name__}: {e}") from e
    if results and all(v is DEAD for v in results):
        values[dead_marker(name)] = DEAD
    for i, v in enumerate(results):
        values.setdefault(TensorRef(name, i), v)


def _runs_functions(node) -> bool:
    return any(isinstance(v, FuncAttr) or (isinstance(v, list) and v and isinstance(v[0], FuncAttr))
               for v in node.attrs.values())


class FunctionRunner:
    """`ctx.functions` (ops.calls.Functions) for kernels and for folding shape inference:
    infer a function's outputs, or call it on arrays. `variables` is the Session's store, or
    None where no variable may be touched (folding); runners of one library may share their
    `shapes` (the inference cache)."""

    def __init__(self, library, variables, shapes: FunctionShapes | None = None):
        self.library = library
        self.variables = variables
        self.shapes = shapes if shapes is not None else FunctionShapes(library, evaluate=self.call)
        self._plans: dict = {}

    def infer(self, name, in_specs):
        """The specs of the function's results (see FunctionShapes.infer)."""
        return self.shapes.infer(name, in_specs)

    def lower(self, name, operands, in_specs):
        """Kernels build no IR."""
        return self.shapes.lower(name, operands, in_specs)

    def call(self, name, args: list) -> list:
        """Run the function's body on reference kernels; its results, in order."""
        fn = self.library.get(name)
        args = [to_host(a) if is_device_array(a) else a for a in args]
        key = (fn.name, tuple(_arg_key(a) for a in args))
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._plan(fn, args)
        values = {TensorRef(a, 0): v for a, v in zip(fn.args, args)}
        for step in plan:
            run_step(step, values, self.variables, self)
        results = [values[r] for r in fn.rets]
        dead = [str(r) for r, v in zip(fn.rets, results) if v is DEAD]
        if dead:
            raise HlobridgeError(f"function '{fn.name}': result(s) {', '.join(dead)} were not computed "
                                 f"(on an untaken branch of a conditional)")
        return results

    def _plan(self, fn, args) -> list[NodeStep]:
        feeds = {TensorRef(a, 0): _arg_spec(v) for a, v in zip(fn.args, args)}
        needed = set(fn.targets())
        specs = infer_specs(fn.graph, needed, feeds, self.shapes)
        outputs = outputs_by_node(specs)
        steps = []
        deadness = has_switches(fn.graph, needed)
        for name in fn.graph.order:
            if name not in needed or name in fn.args:
                continue
            node = fn.graph.nodes[name]
            steps.append(NodeStep(name, node, registry.lookup(node.op), outputs.get(name, []),
                                  [specs.get(r, TensorSpec(None, None)) for r in node.inputs], deadness))
        return steps


def has_switches(graph, names) -> bool:
    """Whether any of `names` is a Switch, so that deadness must be tracked when they run."""
    return any(graph.nodes[n].op in ("Switch", "RefSwitch") for n in names)


def _arg_key(value):
    if isinstance(value, VariableHandle):
        return ("variable", value.name)
    if isinstance(value, TensorList):  # planned once for lists of any length
        return ("list", value.info())
    if handle_key(value) is not None:  # a TensorArray or stack handle
        return handle_key(value)
    value = np.asarray(value)
    return (value.dtype.str, value.shape)


def _arg_spec(value):
    if isinstance(value, VariableHandle):
        return TensorSpec(dtypes.RESOURCE, (), handle=(value.dtype, value.shape))
    if isinstance(value, TensorList):
        return list_spec(value.info())
    if handle_spec(value) is not None:
        return handle_spec(value)
    value = np.asarray(value)
    return TensorSpec(value.dtype, tuple(value.shape))
