"""hlobridge's half of hlobridge.tf: the callable that runs a traced function in a Session.

`function(fn, input_signature)` traces once (trace.py) and makes one Session for the frozen
graph; the Session compiles its clusters per input shape on first use, so the signature's
unknown dims (a batch of None) cost one compile per shape met, as every Session does. Without a
signature each call's exact specs are the signature, and a new one traces again, as
`tf.function` does. Arguments are NumPy arrays, tf tensors or anything the Session takes as a
feed (runtime/feeds.py: cast to the signature's dtype where NumPy's same_kind rule allows);
results are NumPy arrays in the structure `fn` returns.

A function that writes variables (variables.py) has them loaded from TensorFlow into its
Session on its first call, and again whenever the call before ran another signature's Session;
in between, the Session's values are the truth and each call writes back what it changed.
"""

from __future__ import annotations

import tensorflow as tf

from ..errors import UnsupportedOpsError
from ..frontend.functions import CALL_OPS
from ..frontend.load import graph_from_graphdef
from ..ops import registry
from ..runtime.session import Session
from .trace import Traced, all_nodes, flat_spec, leaves_of, pack, trace
from .variables import load, write_back, written_since


class CompiledFunction:
    """`fn` compiled by hlobridge; call it as you would call `fn`. `session_options` go to
    each Session (jit, device, cache_dir, ...: runtime/session.py)."""

    def __init__(self, fn, input_signature=None, name: str | None = None, **session_options):
        self.fn = fn
        self.name = name or getattr(fn, "__name__", type(fn).__name__)
        self.input_signature = None if input_signature is None else list(input_signature)
        self.session_options = session_options
        self.traces: dict = {}  # signature key -> (Traced, Session)
        self._last = None  # the Session of the latest call
        if self.input_signature is not None:
            self._traced(self.input_signature)  # trace now: a bad function fails where it is defined

    def __call__(self, *args):
        signature = self.input_signature or [tf.nest.map_structure(flat_spec, a) for a in args]
        leaves = leaves_of(args, signature, self.name)
        traced, session = self._traced(signature)
        if traced.variables and self._last is not session:  # another signature's Session wrote last
            load(session.variables, traced.variables)
        self._last = session
        feeds = {name: _host(v) for name, v in zip(traced.inputs, leaves)}
        before = dict(session.variables.values)
        values = session.run(list(traced.outputs) + traced.targets, feeds)
        if traced.variables:  # a function that writes variables: TensorFlow's see the writes
            write_back(session.variables, traced.variables, written_since(session.variables, before))
        return pack(traced.structure, values[:len(traced.outputs)])

    def retrace(self) -> None:
        """Forget every traced signature, so the next call takes the variables' current values
        from TensorFlow (after training there, say)."""
        self.traces.clear()
        self._last = None
        if self.input_signature is not None:
            self._traced(self.input_signature)

    def _traced(self, signature: list) -> tuple[Traced, Session]:
        key = (repr(tf.nest.map_structure(lambda _: 0, signature)), tuple(tf.nest.flatten(signature)))
        found = self.traces.get(key)
        if found is None:
            traced = trace(self.fn, signature, self.name)
            unknown = unknown_ops(traced.graph_def)
            if unknown:
                raise UnsupportedOpsError(unknown, "run")
            graph = graph_from_graphdef(traced.graph_def, f"hlobridge.tf.function({self.name})")
            session = Session(graph, **self.session_options)
            found = self.traces[key] = (traced, session)
        return found

    def __repr__(self) -> str:
        return f"<hlobridge.tf.function {self.name}: {len(self.traces)} traced signature(s)>"


def function(fn=None, input_signature=None, **session_options):
    """`fn` traced by TensorFlow and run by hlobridge; as a decorator too:
    `@hlobridge.tf.function(input_signature=[...])`."""
    if fn is None:
        return lambda f: CompiledFunction(f, input_signature, **session_options)
    return CompiledFunction(fn, input_signature, **session_options)


def from_keras(model, input_signature=None, **session_options) -> CompiledFunction:
    """The forward pass of a Keras model in inference mode (`model(x, training=False)`), taking
    what the model takes (one array, or the list or dict of its inputs). The signature is the
    model's inputs (batch dims unknown) when it has them; a subclassed model that was never
    built is traced per call's specs instead, or takes `input_signature=[spec]`."""
    if input_signature is None:
        structure = _keras_inputs(model)
        if structure is not None:
            input_signature = [tf.nest.map_structure(lambda k: tf.TensorSpec(k.shape, k.dtype), structure)]

    def forward(inputs):
        return model(inputs, training=False)

    return CompiledFunction(forward, input_signature, name=getattr(model, "name", "keras_model"), **session_options)


def _keras_inputs(model):
    """The model's symbolic inputs as it takes them (one tensor, a list or a dict), or None for
    a model with none yet. A functional model has `model.input`; a Sequential one only
    `model.inputs` (a list, of one)."""
    try:
        return model.input
    except (AttributeError, ValueError):
        pass
    try:
        inputs = model.inputs
    except (AttributeError, ValueError):
        return None
    if not inputs:
        return None
    return inputs[0] if len(inputs) == 1 else list(inputs)


def unknown_ops(graph_def) -> list[tuple[str, str]]:
    """(node, op) for every node of the graph and its function bodies whose op hlobridge has no
    registry entry for (calls of library functions are inlined, not ops)."""
    functions = {f.signature.name for f in graph_def.library.function}
    return [(name, op) for name, op in all_nodes(graph_def)
            if op not in functions and op not in CALL_OPS and registry.lookup(op) is None]


def _host(value):
    """A tf tensor as NumPy; anything else as the Session takes feeds."""
    return value.numpy() if isinstance(value, (tf.Tensor, tf.Variable)) else value
