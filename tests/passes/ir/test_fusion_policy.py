"""The fusion policy's rules, called directly on small hand-built bodies (no MLIR, no IREE):
each test is one rule of passes/ir/fusion_policy.py's docstring."""

from hlobridge.passes.ir import fusion_policy as policy
from hlobridge.passes.ir.fusion_policy import CHEAP, CONTRACTION, ELEMENTWISE, OUTSIDE, REDUCE


def body(*ops):
    """Nodes from (name, kind, shape, operands[, detail]) tuples, users filled in; the last op
    is the function's output."""
    nodes = [policy.Node(i, name, kind, shape, list(operands), detail=rest[0] if rest else None)
             for i, (name, kind, shape, operands, *rest) in enumerate(ops)]
    for n in nodes:
        for p in n.operands:
            nodes[p].users.append(n.index)
    nodes[-1].output = True
    return nodes


def groups_of(nodes, **flags):
    return [(g.kind, g.sorted_ops()) for g in policy.plan(nodes, **flags)]


def test_an_elementwise_chain_is_one_loop_group():
    nodes = body(("stablehlo.add", ELEMENTWISE, (8, 4), []),
                 ("stablehlo.multiply", ELEMENTWISE, (8, 4), [0]),
                 ("stablehlo.exponential", ELEMENTWISE, (8, 4), [1]))
    assert groups_of(nodes) == [("loop", [0, 1, 2])]


def test_a_dot_takes_its_bias_add_and_relu_as_an_epilogue():
    nodes = body(("stablehlo.dot_general", CONTRACTION, (8, 16), [], True),
                 ("stablehlo.broadcast_in_dim", CHEAP, (8, 16), []),
                 ("stablehlo.add", ELEMENTWISE, (8, 16), [0, 1]),
                 ("stablehlo.maximum", ELEMENTWISE, (8, 16), [2]))
    assert groups_of(nodes) == [(CONTRACTION, [0, 1, 2, 3])]


def test_a_dot_whose_epilogue_reads_it_through_a_reshape_is_left_to_iree():
    # A product computed transposed ([O, M]) and laid out back (reshape, transpose) before its
    # bias and ReLU, as ops/nn/conv.py computes a first layer: IREE fuses that epilogue into the
    # matmul, a region cannot (rule 0), so neither the dot nor the epilogue gets a region.
    nodes = body(("stablehlo.dot_general", CONTRACTION, (4, 32), [], True),
                 ("stablehlo.reshape", CHEAP, (4, 2, 4, 4), [0]),
                 ("stablehlo.transpose", CHEAP, (2, 4, 4, 4), [1]),
                 ("stablehlo.broadcast_in_dim", CHEAP, (2, 4, 4, 4), []),
                 ("stablehlo.add", ELEMENTWISE, (2, 4, 4, 4), [2, 3]),
                 ("stablehlo.maximum", ELEMENTWISE, (2, 4, 4, 4), [4]))
    assert groups_of(nodes) == []
    assert groups_of(nodes, epilogues=False) == [(CONTRACTION, [0]), ("loop", [1, 2, 3, 4, 5])]


def test_without_epilogues_the_dot_stays_alone():
    nodes = body(("stablehlo.dot_general", CONTRACTION, (8, 16), [], True),
                 ("stablehlo.add", ELEMENTWISE, (8, 16), [0]),
                 ("stablehlo.maximum", ELEMENTWISE, (8, 16), [1]))
    assert groups_of(nodes, epilogues=False) == [(CONTRACTION, [0]), ("loop", [1, 2])]


def test_a_reduction_pulls_in_its_elementwise_producers_and_takes_its_epilogue():
    nodes = body(("stablehlo.exponential", ELEMENTWISE, (8, 4), []),
                 ("stablehlo.reduce", REDUCE, (8,), [0], ((8, 4), (1,))),
                 ("stablehlo.divide", ELEMENTWISE, (8,), [1]))
    assert groups_of(nodes) == [(REDUCE, [0, 1, 2])]
    assert groups_of(nodes, epilogues=False) == [(REDUCE, [0, 1]), ("loop", [2])]


def test_groups_never_merge_across_an_op_left_outside():
    # exp -> concatenate (IREE's) -> log: fusing exp and log would put the concatenate on a
    # cycle through one region, so they stay apart
    nodes = body(("stablehlo.exponential", ELEMENTWISE, (4,), []),
                 ("stablehlo.concatenate", OUTSIDE, (8,), [0]),
                 ("stablehlo.slice", CHEAP, (4,), [1]),
                 ("stablehlo.add", ELEMENTWISE, (4,), [0, 2]))
    groups = groups_of(nodes)
    assert not any(0 in ops and 3 in ops for _, ops in groups)
    assert all(1 not in ops for _, ops in groups)


def test_sibling_row_reductions_of_one_argument_become_one_variadic_group():
    nodes = body(("stablehlo.reduce", REDUCE, (8,), [], ((8, 4), (1,))),
                 ("stablehlo.reduce", REDUCE, (8,), [], ((8, 4), (1,))),
                 ("stablehlo.add", ELEMENTWISE, (8,), [0, 1]))
    nodes[0].args = nodes[1].args = [0]  # both reduce the function's argument 0
    merged = [g for g in policy.plan(nodes, epilogues=False) if {0, 1} <= g.ops]
    assert len(merged) == 1 and merged[0].variadic == [[0, 1]]
    assert not any({0, 1} <= g.ops for g in policy.plan(nodes, epilogues=False, siblings=False))


def test_reductions_over_different_dims_are_not_siblings():
    nodes = body(("stablehlo.reduce", REDUCE, (8,), [], ((8, 4), (1,))),
                 ("stablehlo.reduce", REDUCE, (4,), [], ((8, 4), (0,))),
                 ("stablehlo.add", ELEMENTWISE, (4,), [1]))
    nodes[0].args = nodes[1].args = [0]
    assert not any({0, 1} <= g.ops for g in policy.plan(nodes, epilogues=False))


def test_singletons_give_every_groupable_op_its_own_group_except_reshapes():
    nodes = body(("stablehlo.add", ELEMENTWISE, (8, 4), []),
                 ("stablehlo.reshape", CHEAP, (32,), [0]),
                 ("stablehlo.constant", OUTSIDE, (32,), []),
                 ("stablehlo.multiply", ELEMENTWISE, (32,), [1, 2]))
    assert [g.sorted_ops() for g in policy.singletons(nodes)] == [[0], [3]]


def test_squeezed_drops_unit_dims():
    assert policy.squeezed((5, 1)) == policy.squeezed((5,)) == (5,)
