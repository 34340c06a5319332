"""Every op that compiles has at least one numeric test case against its kernel."""

import importlib
import pkgutil

import tests.ops as pkg
from hlobridge.ops import REGISTRY

# Ops without a tensor-in/tensor-out single-node test; each is covered elsewhere.
COVERED_ELSEWHERE = {
    "Const": "folded into constants: tests/lit, every graph test",
    "Placeholder": "function inputs: every test",
    "NoOp": "no outputs: tests/test_cli_and_runtime.py",
    **{op: "bodies in the function library: tests/e2e/test_control_flow.py (kernel and compiled)"
       for op in ("If", "StatelessIf", "Case", "StatelessCase", "While", "StatelessWhile")},
}


def _tested_ops() -> set[str]:
    ops = set()
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.startswith("test_"):
            module = importlib.import_module(f"tests.ops.{info.name}")
            ops.update(p.values[0] for p in getattr(module, "CASES", []))
            ops.update(getattr(module, "COVERED_OPS", ()))  # ops tested in other shapes of test
    return ops


def test_every_compiling_op_has_a_case():
    compiling = {name for name, entry in REGISTRY.items() if entry.compiles}
    missing = sorted(compiling - _tested_ops() - set(COVERED_ELSEWHERE))
    assert not missing, f"ops with a lowering but no test case: {missing}"


def test_every_reason_for_not_compiling_is_about_an_xla_op_that_does_not_compile():
    # a stale reason (the op compiles now, or XLA never compiled it) fails here: delete it
    from hlobridge.ops.coverage import INLINED, NOT_COMPILED, all_xla_ops
    xla = set(all_xla_ops())
    assert sorted(set(NOT_COMPILED) - xla) == [] and sorted(set(INLINED) - xla) == []
    compiled = sorted(op for op in NOT_COMPILED if op in REGISTRY and REGISTRY[op].compiles)
    assert compiled == []
    assert not set(INLINED) & set(REGISTRY)  # the frontend removes them: no rule ever sees them
