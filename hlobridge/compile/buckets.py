"""Static batch buckets beside the dynamic function: `hlobridge-compile --batch-sizes 1,8,32`.

A `?` batch costs speed (docs/dynamic_shapes.md: dynamic is 1.1-2.4x slower than static on
llvm-cpu), so the common batches get their own static functions in the same module: the graph
is lowered once with its `?` batch (`main`) and once per listed size with that batch fixed,
each of those renamed `main_b8` (its private symbols suffixed `_b8`) and moved into `main`'s
module; IREE compiles them all into one `.vmfb`. `main`'s reflection lists the sizes and
whether a batch may be padded up to the next one (analysis/batch_rows.py); the runtime
(runtime/buckets.py) picks the function per call.
"""

from __future__ import annotations

from iree.compiler import ir

from ..analysis.batch_rows import padding_note
from ..analysis.shape_inference import infer_specs
from ..errors import HlobridgeError
from ..frontend.functions import library_of
from ..frontend.load import load_graph
from ..runtime.interpreter import FunctionRunner

SIZES_KEY = "hlobridge.batch_sizes"  # "1,8,32"
PADDING_KEY = "hlobridge.batch_padding"  # "pads", "off", or "cannot pad: node X (...) mixes rows"


def parse_sizes(text: str) -> tuple[int, ...]:
    """'1,8,32' -> (1, 8, 32); a one-line error naming --batch-sizes otherwise."""
    try:
        sizes = tuple(sorted({int(t) for t in text.split(",") if t.strip()}))
    except ValueError:
        raise HlobridgeError(f"--batch-sizes {text}: expected positive integers like 1,8,32") from None
    if not sizes or sizes[0] < 1:
        raise HlobridgeError(f"--batch-sizes {text}: expected positive integers like 1,8,32")
    return sizes


def lower_with_buckets(graph, feeds: dict, out_refs: list, sizes, *, pad: bool, lower, inputs=None,
                       outputs=None, input_shapes=None, **kwargs):
    """`lower` (driver.lower_graph) once with the `?` batch and once per size in `sizes`, the
    static functions merged into the dynamic module as `main_b<size>`; `feeds` are the
    graph's input specs and `out_refs` its outputs, as the driver resolved them."""
    graph = load_graph(graph)
    batched = {r: s for r, s in feeds.items() if s.shape is not None and len(s.shape) and s.shape[0] is None}
    if not batched:
        raise HlobridgeError("--batch-sizes: no input has an unknown batch (first) dimension "
                             f"(inputs: {', '.join(f'{r}={s}' for r, s in feeds.items())})")
    dynamic = lower(graph, inputs=inputs, outputs=outputs, input_shapes=input_shapes, **kwargs)
    if dynamic.resource_args or dynamic.written:
        raise HlobridgeError("--batch-sizes: the graph reads variables; freeze them first")
    note = padding_verdict(graph, feeds, out_refs) if pad else "off"
    for size in sizes:
        shapes = {**(input_shapes or {}), **{str(r): (size, *s.shape[1:]) for r, s in batched.items()}}
        static = lower(graph, inputs=inputs, outputs=outputs, input_shapes=shapes, **kwargs)
        _merge(dynamic, static, f"_b{size}")
    with dynamic.context:
        for op in dynamic.module.body.operations:
            if _sym(op) == dynamic.func_name:
                entries = {a.name: a.attr for a in ir.DictAttr(op.attributes["iree.reflection"])}
                entries[SIZES_KEY] = ir.StringAttr.get(",".join(map(str, sizes)))
                entries[PADDING_KEY] = ir.StringAttr.get(note)
                op.attributes["iree.reflection"] = ir.DictAttr.get(entries)
    dynamic.notes["batch_padding"] = note
    dynamic.verify()
    return dynamic


def padding_verdict(graph, feeds: dict, out_refs: list) -> str:
    """"pads" where a batch of the graph may be padded with zero rows (analysis/batch_rows.py),
    else "cannot pad: node X (why) mixes rows"; `feeds` as lower_with_buckets takes them."""
    needed = graph.ancestors([r.node for r in out_refs], stop=[r.node for r in feeds])
    specs = infer_specs(graph, needed, feeds, FunctionRunner(library_of(graph), None))
    return padding_note(graph, [n for n in graph.order if n in needed], specs, out_refs)


def _sym(op) -> str | None:
    return ir.StringAttr(op.attributes["sym_name"]).value if "sym_name" in op.attributes else None


def _merge(into, other, suffix: str) -> None:
    """Move `other`'s top-level symbols into `into`'s module, each renamed name+suffix."""
    with into.context:
        module = ir.Module.parse(other.text(), into.context)
        for op in list(module.body.operations):
            name = _sym(op)
            if name is not None:
                ir.SymbolTable.replace_all_symbol_uses(name, name + suffix, module.operation)
                op.attributes["sym_name"] = ir.StringAttr.get(name + suffix)
        for op in list(module.body.operations):
            into.module.body.append(op.detach_from_parent())
