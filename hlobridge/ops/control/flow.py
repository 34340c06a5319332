"""Control flow: functional If / Case / While (and their Stateless forms), Assert, and the
v1 Switch / Merge pair.

Functional ops name their branches and bodies in the function library. Each rule reaches
them through `ctx.functions`: `infer(f, specs)` while shapes are inferred, `call(f, args)`
in a kernel (the body runs on reference kernels, see interpreter.py) and `lower(f, values,
specs)` in a lowering, which builds the body inside a `stablehlo.case` / `stablehlo.while`
region. Whether a body can compile at all (no Assert, no variables inside) is decided by
mark_for_compilation before anything is lowered.

`Assert` never compiles: XLA drops assertions, but a failed one must stop the run with its
message, as TensorFlow's executor does. Switch and Merge run only on the reference path
with deadness (interpreter.py); functionalize_control_flow turns the conditionals it
recognises into `If`, which compiles.
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ... import dtypes, limits
from ...errors import AssertionFailedError, ResourceLimitError
from ...spec import TensorSpec
from ..kinds import DEAD
from ..lists.values import ListInfo, leaves, lowered_types, rebuild
from .loop_bounds import counted_conditions
from ..registry import register

_IF_ATTRS = ("Tcond", "Tin", "Tout", "then_branch", "else_branch", "output_shapes")
_CASE_ATTRS = ("Tin", "Tout", "branches", "output_shapes")
_WHILE_ATTRS = ("T", "cond", "body", "output_shapes", "parallel_iterations")


def to_bool(value) -> bool:
    """TensorFlow's ToBool for predicates: a scalar is compared with zero (a string with
    ""), any other tensor is true when it has elements."""
    value = np.asarray(value)
    if value.ndim == 0:
        item = value.item()
        return bool(len(item)) if isinstance(item, (bytes, str)) else bool(item)
    return value.size > 0


def _join(a: TensorSpec, b: TensorSpec, ctx, what: str) -> TensorSpec:
    """The most precise spec both `a` and `b` satisfy (dims that differ become unknown)."""
    if a.dtype != b.dtype:
        raise ctx.error(f"{what}: dtype {dtypes.name(a.dtype)} in one branch, {dtypes.name(b.dtype)} in another")
    if a.shape is None or b.shape is None or len(a.shape) != len(b.shape):
        shape = None
    else:
        shape = tuple(x if x == y else None for x, y in zip(a.shape, b.shape))
    return TensorSpec(a.dtype, shape, handle=_join_handles(a.handle, b.handle))


def _join_handles(a, b):
    """Equal handles, or the join of two list facts (list_values.ListInfo.join), else None."""
    if a == b:
        return a
    return a.join(b) if isinstance(a, ListInfo) and isinstance(b, ListInfo) else None


def _join_all(ctx, per_branch: list[list[TensorSpec]], names: list[str]) -> list[TensorSpec]:
    counts = {len(outs) for outs in per_branch}
    if len(counts) != 1:
        raise ctx.error(f"branches return different numbers of results: "
                        f"{', '.join(f'{n}: {len(o)}' for n, o in zip(names, per_branch))}")
    joined = [TensorSpec(s.dtype, s.shape, handle=s.handle) for s in per_branch[0]]
    for outs in per_branch[1:]:
        joined = [_join(a, b, ctx, f"result {i}") for i, (a, b) in enumerate(zip(joined, outs))]
    return _with_declared_shapes(ctx, joined)


def _with_declared_shapes(ctx, specs: list[TensorSpec]) -> list[TensorSpec]:
    """Fill unknown dims from the `output_shapes` attr, when TensorFlow wrote one per output."""
    declared = ctx.attr("output_shapes", None) or []
    if len(declared) != len(specs):
        return specs
    out = []
    for spec, shape in zip(specs, declared):
        if spec.shape is None and shape is not None:
            spec = TensorSpec(spec.dtype, tuple(shape), handle=spec.handle)
        elif shape is not None and spec.shape is not None and len(shape) == len(spec.shape):
            spec = TensorSpec(spec.dtype, tuple(s if s is not None else d for s, d in zip(spec.shape, shape)),
                              handle=spec.handle)
        out.append(spec)
    return out


def _result_types(ctx) -> list:
    for i, spec in enumerate(ctx.outputs):
        if not spec.is_static:
            raise ctx.lowering_error(f"result {i} has unknown shape {spec}: the branches disagree on it")
    return [t for s in ctx.outputs for t in lowered_types(s)]  # a TensorList as buffer and length


def _pred_i1(ctx, value, spec: TensorSpec):
    """A predicate tensor as tensor<i1>, by to_bool's rule."""
    if spec.rank == 0:
        if spec.dtype == np.bool_:
            return value
        return hlo.compare("NE", value, hlo.constant(np.zeros((), spec.dtype), spec.dtype))
    return hlo.constant(np.array(spec.num_elements > 0), np.bool_)


def _branches_lower(ctx, index, branches: list, args):
    """stablehlo.case over the branch functions; the arguments are inputs 1.. of the node."""
    results = hlo.case(index, _result_types(ctx),
                       [lambda f=f: leaves(ctx.functions.lower(f, list(args), ctx.inputs[1:]), ctx.outputs, _where(ctx))
                        for f in branches])
    return rebuild(results, ctx.outputs)


# -- If ------------------------------------------------------------------------------------------

def _if_infer(ctx):
    branches = [ctx.attr("then_branch"), ctx.attr("else_branch")]
    outs = [ctx.functions.infer(f, ctx.inputs[1:]) for f in branches]
    pred = ctx.inputs[0].value
    if pred is not None:  # a constant predicate: the taken branch, constants included
        return outs[0] if to_bool(pred) else outs[1]
    return _join_all(ctx, outs, ["then_branch", "else_branch"])


def _if_kernel(ctx, cond, *args):
    branch = ctx.attr("then_branch") if to_bool(cond) else ctx.attr("else_branch")
    return ctx.functions.call(branch, list(args))


def _if_lower(ctx, cond, *args):
    pred = _pred_i1(ctx, cond, ctx.inputs[0])
    index = hlo.select(pred, hlo.constant(np.array(0, np.int32)), hlo.constant(np.array(1, np.int32)))
    return _branches_lower(ctx, index, [ctx.attr("then_branch"), ctx.attr("else_branch")], args)


# -- Case ----------------------------------------------------------------------------------------

def _branch_index(index, n: int) -> int:
    """TensorFlow's Case runs the last branch for an index out of range."""
    i = int(np.asarray(index))
    return i if 0 <= i < n else n - 1


def _case_infer(ctx):
    branches = ctx.attr("branches")
    if not branches:
        raise ctx.error("Case has no branches")
    index = ctx.inputs[0].value
    if index is not None:
        return ctx.functions.infer(branches[_branch_index(index, len(branches))], ctx.inputs[1:])
    outs = [ctx.functions.infer(f, ctx.inputs[1:]) for f in branches]
    return _join_all(ctx, outs, [f.name for f in branches])


def _case_kernel(ctx, index, *args):
    branches = ctx.attr("branches")
    return ctx.functions.call(branches[_branch_index(index, len(branches))], list(args))


def _case_lower(ctx, index, *args):
    return _branches_lower(ctx, index, ctx.attr("branches"), args)


# -- While ---------------------------------------------------------------------------------------

_WHILE_FIXPOINT_ROUNDS = 4


def _while_infer(ctx):
    """Loop variables keep their dtypes; a dim the body changes becomes unknown (a fixpoint)."""
    specs = [TensorSpec(s.dtype, s.shape, handle=s.handle) for s in ctx.inputs]
    body = ctx.attr("body")
    for _ in range(_WHILE_FIXPOINT_ROUNDS):
        outs = ctx.functions.infer(body, specs)
        if len(outs) != len(specs):
            raise ctx.error(f"body '{body.name}' returns {len(outs)} value(s) for {len(specs)} loop variable(s)")
        joined = [_join(a, b, ctx, f"loop variable {i}") for i, (a, b) in enumerate(zip(specs, outs))]
        if joined == specs and [s.handle for s in joined] == [s.handle for s in specs]:  # (== ignores handles)
            break
        specs = joined
    else:
        specs = [TensorSpec(s.dtype, None, handle=s.handle) for s in specs]
    ctx.functions.infer(ctx.attr("cond"), specs)
    return _with_declared_shapes(ctx, specs)


def _while_kernel(ctx, *args):
    values = list(args)
    cond, body = ctx.attr("cond"), ctx.attr("body")
    limit, counted = limits.max_loop_iterations(), _counted(ctx)
    if counted and not any(_distance(c, values) < c.distance_bound(limit) for c in counted):
        raise ResourceLimitError(limits.loop_limit_message(_where(ctx), limit))
    iterations = 0
    while to_bool(ctx.functions.call(cond, values)[0]):
        iterations += 1
        limits.check_loop_iterations(iterations, _where(ctx))
        values = ctx.functions.call(body, values)
    return values


def _counted(ctx) -> list:
    """The loop's counted conditions (ops/control/loop_bounds.py) on signed scalar variables whose
    distance bound an i64 holds with room to spare."""
    library, limit = ctx.functions.library, limits.max_loop_iterations()
    return [c for c in counted_conditions(library.get(ctx.attr("cond")), library.get(ctx.attr("body")))
            if all(ctx.inputs[i].shape == () and np.dtype(ctx.inputs[i].dtype).kind == "i"
                   for i in (c.counter, c.bound) if i is not None)
            and c.distance_bound(limit) <= _MAX_DISTANCE_BOUND]


def _distance(c, values) -> float:
    """A counted condition's distance to go, from the loop variables' values."""
    start = float(values[c.counter])
    bound = float(values[c.bound]) if c.bound is not None else float(c.bound_value)
    return bound - start if c.rising else start - bound


_I64_MIN, _I64_MAX = -2 ** 63, 2 ** 63 - 1
_MAX_DISTANCE_BOUND = 2 ** 62  # beyond: the loop counts in its condition instead


def _where(ctx) -> str:
    return f"node '{ctx.name}' ({ctx.op})"


def _while_lower(ctx, *args):
    """stablehlo.while, bounded by the iteration limit (limits.py): a counted loop checks its
    trip count once before it starts, any other loop counts its iterations in its condition
    (ops/control/loop_bounds.py says why)."""
    _result_types(ctx)
    specs = ctx.outputs
    cond_fn, body_fn = ctx.attr("cond"), ctx.attr("body")

    def cond(*flat):
        (pred,) = ctx.functions.lower(cond_fn, rebuild(flat, specs), specs)
        return _pred_i1(ctx, pred, ctx.functions.infer(cond_fn, specs)[0])

    def body(*flat):  # TensorLists travel as their buffer and length (lists/values.py)
        return leaves(ctx.functions.lower(body_fn, rebuild(flat, specs), specs), specs, _where(ctx))

    limit = limits.compiled_loop_limit()
    message = limits.DEVICE_LIMIT_MARK + limits.loop_limit_message(_where(ctx), limit)
    counted = _counted(ctx)
    inits = leaves(list(args), specs, _where(ctx))
    if counted:
        hlo.assert_(_within_trip_limit(counted, args, limit), message)
        return rebuild(hlo.while_(inits, cond, body), specs)
    counter = hlo.constant(np.int32(0))
    results = hlo.while_(
        [*inits, counter],
        lambda *v: hlo.binary("and", cond(*v[:-1]), hlo.compare("LE", v[-1], hlo.constant(np.int32(limit)))),
        lambda *v: [*body(*v[:-1]), hlo.add(v[-1], hlo.constant(np.int32(1)))])
    hlo.assert_(hlo.compare("LE", results[-1], hlo.constant(np.int32(limit))), message)
    return rebuild(results[:-1], specs)


def _within_trip_limit(counted, args, limit: int):
    """An i1 host scalar: some counted condition ends the loop within `limit` iterations.

    Computed on the host from the loop variables' initial values (hlo.to_scalar): IREE loads
    them there anyway to run a counted loop as an scf.for, so the check costs no dispatch. In
    i64 and without overflow: rising, the loop runs over the limit iff bound - start >= D
    (distance_bound), i.e. start <= bound - D, which can only hold if bound >= MIN + D."""
    ok = None
    for c in counted:
        start = hlo.scalar_i64(hlo.to_scalar(args[c.counter]))
        bound = hlo.scalar_i64(hlo.to_scalar(args[c.bound])) if c.bound is not None \
            else hlo.int_scalar(c.bound_value)
        d = c.distance_bound(limit)
        if c.rising:  # over iff bound >= MIN + D and start <= bound - D
            over = hlo.scalar_op("andi", hlo.scalar_compare("sge", bound, hlo.int_scalar(_I64_MIN + d)),
                                 hlo.scalar_compare("sle", start, hlo.scalar_op("subi", bound, hlo.int_scalar(d))))
        else:  # over iff bound <= MAX - D and start >= bound + D
            over = hlo.scalar_op("andi", hlo.scalar_compare("sle", bound, hlo.int_scalar(_I64_MAX - d)),
                                 hlo.scalar_compare("sge", start, hlo.scalar_op("addi", bound, hlo.int_scalar(d))))
        within = hlo.scalar_op("xori", over, hlo.int_scalar(1, width=1))
        ok = within if ok is None else hlo.scalar_op("ori", ok, within)
    return ok


for _op, _stateful in (("If", True), ("StatelessIf", False)):
    register(_op, infer=_if_infer, kernel=_if_kernel, lower=_if_lower, attrs=_IF_ATTRS, stateful=_stateful)
for _op, _stateful in (("Case", True), ("StatelessCase", False)):
    register(_op, infer=_case_infer, kernel=_case_kernel, lower=_case_lower, attrs=_CASE_ATTRS,
             stateful=_stateful)
for _op, _stateful in (("While", True), ("StatelessWhile", False)):
    register(_op, infer=_while_infer, kernel=_while_kernel, lower=_while_lower, attrs=_WHILE_ATTRS,
             stateful=_stateful)


# -- Assert --------------------------------------------------------------------------------------

def _summarize(value, limit: int) -> str:
    """A tensor as TensorFlow's SummarizeValue prints it: strings as they are, numbers
    without commas in nested brackets, the first `limit` elements then '...'."""
    value = np.asarray(value)
    if value.dtype == object or value.dtype.kind in "SU":
        items = [v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in value.reshape(-1)]
    else:
        items = [_format_number(v) for v in value.reshape(-1)]
    if value.ndim == 0:
        return items[0]
    shown = items[:limit] if limit >= 0 else items
    text = " ".join(shown) + ("..." if len(shown) < len(items) else "")
    return "[" * (value.ndim - 1) + text + "]" * (value.ndim - 1) if value.ndim > 1 else text


def _format_number(v) -> str:
    if isinstance(v, (np.floating, float)):
        return format(float(v), ".6g")
    if isinstance(v, (np.bool_, bool)):
        return "1" if v else "0"
    return str(v)


def _assert_kernel(ctx, condition, *data):
    if np.all(np.asarray(condition)):
        return []
    limit = ctx.attr("summarize", 3)
    message = " ".join(f"[{_summarize(d, limit)}]" for d in data)
    raise AssertionFailedError(f"node '{ctx.name}' (Assert): assertion failed: {message}")


register("Assert", infer=lambda ctx: [], kernel=_assert_kernel, attrs=("T", "summarize"), stateful=True)


# -- v1 Switch / Merge (reference path with deadness) -------------------------------------------

def _switch_kernel(ctx, data, pred):
    return [DEAD, data] if to_bool(pred) else [data, DEAD]


def _merge_infer(ctx):
    spec = ctx.inputs[0]
    for other in ctx.inputs[1:]:
        spec = _join(spec, other, ctx, "Merge input")
    return [spec, TensorSpec(np.dtype(np.int32), ())]


def _merge_kernel(ctx, *inputs):
    for i, v in enumerate(inputs):
        if v is not DEAD:
            return [v, np.array(i, np.int32)]
    return [DEAD, DEAD]


for _op in ("Switch", "RefSwitch"):
    register(_op, infer=lambda ctx: [ctx.inputs[0], ctx.inputs[0]], kernel=_switch_kernel, attrs=("T",),
             output_args=("output_false", "output_true"))
for _op in ("Merge", "RefMerge"):
    register(_op, infer=_merge_infer, kernel=_merge_kernel, attrs=("T", "N"),
             output_args=("output", "value_index"))
