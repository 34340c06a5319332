"""Einsum: one or two operands, any equation TensorFlow accepts, as dot_general + transposes.

TensorFlow's Einsum op wants an explicit output ("->") and one or two inputs. Labels may
repeat inside an operand (a diagonal: "ii->i"), appear in one operand only (summed unless
the output keeps them), and "..." stands for leading dimensions that broadcast between
the operands, numbered from the right.

The lowering, per operand: take diagonals (mask with iota == iota, then sum the repeated
axis away), sum the labels nobody else needs; then, for two operands, broadcast the size-1
ellipsis dimensions and contract with one stablehlo.dot_general whose batch dimensions are
the labels both operands and the output share; finally transpose to the output's order.
The kernel is np.einsum, accumulated in float64 (or int64).
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ... import dtypes
from ...spec import TensorSpec
from ..registry import register
from ..typesets import FLOAT, SIGNED


def _split(ctx):
    equation = ctx.attr("equation").replace(" ", "")
    if equation.count("->") != 1:
        raise ctx.error(f"expecting exactly one '->' in einsum equation '{equation}'")
    lhs, out = equation.split("->")
    inputs = lhs.split(",")
    if len(inputs) != len(ctx.inputs) or len(inputs) not in (1, 2):
        raise ctx.error(f"equation '{equation}' names {len(inputs)} operand(s); Einsum takes 1 or 2 and "
                        f"this node has {len(ctx.inputs)}")
    for part in inputs + [out]:
        letters = part.replace("...", "")
        if part.count("...") > 1 or not all(c.isalpha() for c in letters):
            raise ctx.error(f"invalid subscripts '{part}' in einsum equation '{equation}'")
    return inputs, out


def _expand(ctx, subscripts: str, rank: int, n_ellipsis: int | None = None) -> list[str]:
    """Labels of one operand, '...' replaced by one label per dimension, numbered from the right."""
    if "..." not in subscripts:
        if n_ellipsis is None and len(subscripts) != rank:
            raise ctx.error(f"subscripts '{subscripts}' name {len(subscripts)} dimensions of a rank-{rank} operand")
        return list(subscripts)
    before, after = subscripts.split("...")
    width = rank - len(before) - len(after) if n_ellipsis is None else n_ellipsis
    if width < 0:
        raise ctx.error(f"subscripts '{subscripts}' name more dimensions than the operand's rank {rank}")
    return list(before) + [f".{width - i}" for i in range(width)] + list(after)


class _Plan:
    """Each operand's labels, the output's, and every label's size (None: unknown)."""

    def __init__(self, ctx, shapes):
        inputs, out = _split(ctx)
        self.operands = [_expand(ctx, s, len(shape)) for s, shape in zip(inputs, shapes)]
        width = max((sum(lab.startswith(".") for lab in labels) for labels in self.operands), default=0)
        if width and "..." not in out:
            raise ctx.error(f"output contains {width} broadcasting dimension(s) but no ellipsis (...) was "
                            f"found in the output subscripts '{out}'")
        self.output = _expand(ctx, out, 0, width) if "..." in out else list(out)
        self.sizes: dict[str, int | None] = {}
        for labels, shape in zip(self.operands, shapes):
            for lab, d in zip(labels, shape):
                self._merge(ctx, lab, d)
        if len(set(self.output)) != len(self.output):
            raise ctx.error(f"output subscripts '{out}' repeat a label")
        missing = [lab for lab in self.output if lab not in self.sizes]
        if missing:
            raise ctx.error(f"output label(s) {', '.join(missing)} appear in no input")

    def _merge(self, ctx, label, d):
        if label not in self.sizes:
            self.sizes[label] = d
            return
        have = self.sizes[label]
        if label.startswith("."):  # ellipsis dimensions broadcast
            known = {v for v in (have, d) if v not in (None, 1)}
            if len(known) > 1:
                raise ctx.error(f"ellipsis dimensions {have} and {d} do not broadcast")
            self.sizes[label] = known.pop() if known else (1 if have == d == 1 else None)
            return
        if have is not None and d is not None and have != d:
            raise ctx.error(f"label '{label}' has sizes {have} and {d}")
        self.sizes[label] = have if have is not None else d

    @property
    def out_shape(self) -> tuple:
        return tuple(self.sizes[lab] for lab in self.output)


def _einsum_infer(ctx):
    if any(s.shape is None for s in ctx.inputs):
        _split(ctx)
        return [TensorSpec(ctx.inputs[0].dtype, None)]
    plan = _Plan(ctx, [s.shape for s in ctx.inputs])
    return [TensorSpec(ctx.inputs[0].dtype, plan.out_shape)]


# -- lowering ---------------------------------------------------------------------------------------


def _sum(x, axes, dtype):
    return hlo.reduce(x, hlo.constant(np.zeros((), dtype)), axes, "add") if axes else x


def _diagonals(x, labels: list[str], dtype):
    """Repeated labels -> one: zero everything off the diagonal, sum the second axis away."""
    while len(set(labels)) != len(labels):
        p = next(i for i, lab in enumerate(labels) if labels.index(lab) != i)
        q = labels.index(labels[p])
        shape = hlo.shape_of(x)
        on = hlo.compare("EQ", hlo.iota(shape, np.int32, q), hlo.iota(shape, np.int32, p))
        x = _sum(hlo.select(on, x, hlo.broadcast_in_dim(hlo.constant(np.zeros((), dtype)), shape, [])), [p], dtype)
        labels = labels[:p] + labels[p + 1:]
    return x, labels


def _prepare(x, labels, keep: set, dtype):
    """Diagonals taken, labels outside `keep` summed out."""
    x, labels = _diagonals(x, list(labels), dtype)
    drop = [i for i, lab in enumerate(labels) if lab not in keep]
    return _sum(x, drop, dtype), [lab for lab in labels if lab in keep]


def _broadcast_to_sizes(x, labels, sizes):
    want = [sizes[lab] for lab in labels]
    return x if hlo.shape_of(x) == want else hlo.broadcast_in_dim(
        hlo.reshape(x, [d for d, w in zip(hlo.shape_of(x), want) if d == w]), want,
        [i for i, (d, w) in enumerate(zip(hlo.shape_of(x), want)) if d == w])


def _einsum_lower(ctx, *xs):
    plan = _Plan(ctx, [hlo.shape_of(x) for x in xs])
    dtype = ctx.out().dtype
    out = set(plan.output)
    if len(xs) == 1:
        x, labels = _prepare(xs[0], plan.operands[0], out, dtype)
        return hlo.transpose(x, [labels.index(lab) for lab in plan.output])
    (a, la), (b, lb) = (_prepare(x, labels, out | set(other), dtype)
                        for x, labels, other in ((xs[0], plan.operands[0], plan.operands[1]),
                                                 (xs[1], plan.operands[1], plan.operands[0])))
    a, b = _broadcast_to_sizes(a, la, plan.sizes), _broadcast_to_sizes(b, lb, plan.sizes)
    shared = [lab for lab in la if lab in lb]
    batch = [lab for lab in shared if lab in out]
    contract = [lab for lab in shared if lab not in out]
    free_a = [lab for lab in la if lab not in lb]
    free_b = [lab for lab in lb if lab not in la]
    result = batch + free_a + free_b
    y = hlo.dot_general(a, b, [plan.sizes[lab] for lab in result], dtype,
                        lhs_batch=[la.index(lab) for lab in batch], rhs_batch=[lb.index(lab) for lab in batch],
                        lhs_contract=[la.index(lab) for lab in contract],
                        rhs_contract=[lb.index(lab) for lab in contract])
    return hlo.transpose(y, [result.index(lab) for lab in plan.output])


def _einsum_kernel(ctx, *xs):
    dtype = ctx.out().dtype
    acc = np.float64 if dtypes.is_floating(dtype) else np.int64
    equation = ctx.attr("equation").replace(" ", "")
    return np.asarray(np.einsum(equation, *[x.astype(acc) for x in xs])).astype(dtype)


register("Einsum", infer=_einsum_infer, lower=_einsum_lower, kernel=_einsum_kernel,
         attrs=("equation", "N", "T"), dtypes=FLOAT + SIGNED)
