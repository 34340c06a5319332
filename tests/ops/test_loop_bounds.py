"""Counted loops are recognised in the shapes TensorFlow writes, and their trip-count test
agrees with running the loop."""

import itertools

import numpy as np
import pytest

from hlobridge.ops.control.loop_bounds import CountedCondition, counted_conditions
from hlobridge.frontend.functions import library_of
from hlobridge.frontend.graph_builder import GraphBuilder

I32, F32 = np.int32, np.float32
T = {"T": np.dtype(I32)}


def _conditions(cond_build, body_build, args=None):
    """counted_conditions of a While whose cond and body the callbacks build."""
    args = args or {"i": I32, "n": I32, "acc": F32}
    b = GraphBuilder()
    c, d = b.function("c", args, cond_build), b.function("d", args, body_build)
    b.op("StatelessWhile", [b.const(f"init_{a}", 0, t) for a, t in args.items()], name="w",
         num_outputs=len(args), T=[np.dtype(t) for t in args.values()], cond=c, body=d)
    library = library_of(b.graph())
    return counted_conditions(library.get("c"), library.get("d"))


def _count_up(f, i, n, acc, step=1, op="AddV2"):
    return [(f.op(op, [i, f.const("s", step, I32)], **T), I32), (n, I32), (acc, F32)]


@pytest.mark.parametrize("op, relation", [("Less", "<"), ("LessEqual", "<=")])
def test_a_counter_below_an_invariant_bound(op, relation):
    found = _conditions(lambda f, i, n, acc: [(f.op(op, [i, n], **T), np.bool_)], _count_up)
    assert found == [CountedCondition(counter=0, relation=relation, step=1, bound=1)]


def test_operands_swapped_identity_chains_and_conjunctions():
    def cond(f, i, n, acc):
        counted = f.op("Greater", [f.op("Identity", [n], **T), i], **T)  # n > i is i < n
        other = f.op("Less", [acc, f.const("ten", 10.0, F32)], T=np.dtype(F32))
        return [(f.op("LogicalAnd", [other, counted]), np.bool_)]
    assert _conditions(cond, _count_up) == [CountedCondition(counter=0, relation="<", step=1, bound=1)]


def test_a_counter_falling_to_a_constant():
    cond = lambda f, i, n, acc: [(f.op("GreaterEqual", [i, f.const("lo", -3, I32)], **T), np.bool_)]
    found = _conditions(cond, lambda f, i, n, acc: _count_up(f, i, n, acc, step=2, op="Sub"))
    assert found == [CountedCondition(counter=0, relation=">=", step=-2, bound_value=-3)]


@pytest.mark.parametrize("body", [
    lambda f, i, n, acc: _count_up(f, i, n, acc, step=-1),  # counts away from its bound
    lambda f, i, n, acc: _count_up(f, i, n, acc, step=0),  # never moves
    lambda f, i, n, acc: _count_up(f, i, n, acc, op="Mul"),  # not a step
    lambda f, i, n, acc: [(f.op("AddV2", [i, f.const("s", 1, I32)], **T), I32),
                          (f.op("AddV2", [n, f.const("t", 1, I32)], **T), I32), (acc, F32)],  # bound moves
])
def test_loops_that_are_not_counted(body):
    assert _conditions(lambda f, i, n, acc: [(f.op("Less", [i, n], **T), np.bool_)], body) == []


def _iterations(relation, step, start, bound):
    test = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}[relation]
    i, count = start, 0
    while test(i, bound):
        i, count = i + step, count + 1
    return count


@pytest.mark.parametrize("relation", ["<", "<=", ">", ">="])
def test_distance_bound_agrees_with_running_the_loop(relation):
    for step, limit, start, bound in itertools.product((1, 2, 3), (0, 1, 4, 7), range(-4, 5), range(-20, 21)):
        step = step if relation in ("<", "<=") else -step
        c = CountedCondition(0, relation, step, bound=1)
        distance = bound - start if c.rising else start - bound
        assert (distance < c.distance_bound(limit)) == (_iterations(relation, step, start, bound) <= limit), \
            (relation, step, limit, start, bound)
