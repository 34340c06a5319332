"""Test helpers: run one op through the whole pipeline and compare with its kernel.

`check_op("Relu", [x])` builds a graph with one placeholder per array input (or a Const
for the op's compile-time-constant inputs), compiles it for llvm-cpu, runs it, and
asserts the results equal the op's NumPy reference kernel.
"""

from __future__ import annotations

import numpy as np

from ..compile import driver as compiler
from .. import runtime
from ..frontend.graph_builder import GraphBuilder
from ..ops import registry
from ..analysis.shape_inference import infer_specs, outputs_by_node


def single_op_graph(op: str, inputs, attrs: dict, consts=()):
    """A graph with one node "op" fed by one placeholder per input (a Const for constant
    inputs) -> (graph, feeds), the feeds keyed by placeholder tensor name."""
    entry = registry.lookup(op)
    const_set = set(entry.const_inputs if entry else ()) | set(consts)
    b = GraphBuilder()
    names, feeds = [], {}
    for i, x in enumerate(inputs):
        x = np.asarray(x)
        if i in const_set:
            names.append(b.const(f"c{i}", x))
        else:
            names.append(b.placeholder(f"p{i}", x.dtype, x.shape))
            feeds[f"p{i}:0"] = x
    b.op(op, names, name="op", **attrs)
    return b.graph(), feeds


def reference(op: str, inputs, attrs: dict, consts=()):
    """Outputs of the op's NumPy kernel (the oracle), as a list."""
    graph, feeds = single_op_graph(op, inputs, attrs, consts)
    specs = infer_specs(graph)
    node = graph.nodes["op"]
    outs = outputs_by_node(specs)["op"]
    ctx = registry.OpContext(node, [specs[r] for r in node.inputs], outs)
    values = [np.asarray(v) for v in registry.as_list(
        registry.lookup(op).kernel(ctx, *[np.asarray(x) for x in inputs]))]
    for v, s in zip(values, outs):
        assert v.dtype == s.dtype, f"{op} kernel returned {v.dtype}, inferred {s.dtype}"
        assert s.shape is None or (v.ndim == len(s.shape) and all(  # unknown dims (data-dependent) match any
            d is None or d == n for d, n in zip(s.shape, v.shape))), \
            f"{op} kernel returned shape {v.shape}, inferred {s.shape}"
    return values


def compiled(op: str, inputs, attrs: dict, consts=(), device="cpu", lowering_target="llvm-cpu"):
    """Outputs of the op compiled for llvm-cpu and run, as a list; with `lowering_target`
    ("cuda"), lowered as for that target (OpContext.target), so that a GPU's lowering is
    checked on the CPU."""
    graph, feeds = single_op_graph(op, inputs, attrs, consts)
    specs = infer_specs(graph)
    outputs = [f"op:{i}" for i in range(len(outputs_by_node(specs)["op"]))]
    if lowering_target == "llvm-cpu":
        vmfb = compiler.compile_graph(graph, inputs=list(feeds), outputs=outputs).vmfb
    else:
        lowered = compiler.lower_graph(graph, inputs=list(feeds), outputs=outputs, target=lowering_target)
        vmfb = compiler.compile_mlir(lowered.text(), compiler.CompileOptions())
    module = runtime.load(vmfb, device=device)
    result = module.main(*feeds.values())
    return list(result) if isinstance(result, tuple) else [result]


def check_op(op: str, inputs, attrs: dict | None = None, *, consts=(), rtol=1e-5, atol=1e-6,
             lowering_target="llvm-cpu"):
    """Assert that `op` compiled (lowered for `lowering_target`, see `compiled`) gives its NumPy
    kernel's outputs (exactly for bool and integers, to rtol/atol for floats), with the same
    dtypes and shapes; returns the compiled outputs."""
    attrs = attrs or {}
    want = reference(op, inputs, attrs, consts)
    got = compiled(op, inputs, attrs, consts, lowering_target=lowering_target)
    assert len(got) == len(want), f"{op}: {len(got)} outputs, kernel gives {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype, f"{op} output {i}: dtype {g.dtype}, kernel {w.dtype}"
        assert g.shape == w.shape, f"{op} output {i}: shape {g.shape}, kernel {w.shape}"
        if w.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w, err_msg=f"{op} output {i}")
        else:
            wide = np.complex128 if w.dtype.kind == "c" else np.float64  # (float64 would drop imaginary parts)
            np.testing.assert_allclose(g.astype(wide), w.astype(wide), rtol=rtol, atol=atol,
                                       err_msg=f"{op} output {i}")
    return got
