"""Conformance cases for tf2xla's own `Xla*` ops (hlobridge/ops/xla/, docs/xla_ops.md).

TensorFlow has no CPU kernels for these ops: they run only inside an XLA cluster. Each case is
therefore a tf.function that calls a `jit_compile=True` tf.function holding the ops (its call
carries `_XlaMustCompile`), and the expected values are TensorFlow's results of that GraphDef
as written (imported into a session, which compiles the inner function with XLA). The ops are
written as users' code writes them: `tensorflow.compiler.tf2xla.python.xla`'s wrappers (what
Keras 3's TensorFlow backend calls) and `tf.raw_ops.Xla*` where there is no wrapper.
"""

import numpy as np
from tensorflow.compiler.tf2xla.python import xla

from .registry import STYLE_FUNCTION, TOL_ELEMENTWISE, Built, case, concrete_graph, normal, tf

STYLE_XLA = "jit_compile tf.function called from a " + STYLE_FUNCTION


def _spec(name, shape, dtype=tf.float32):
    return tf.TensorSpec(shape, dtype, name=name)


def xla_case(body, specs, runs):
    """A GraphDef whose outer function calls `body` compiled by XLA (jit_compile=True)."""
    inner = tf.function(body, jit_compile=True)

    def model(*args):
        return {k: tf.identity(v, name=k) for k, v in inner(*args).items()}
    gd, outputs, _ = concrete_graph(model, *specs)
    return Built(gd, outputs, runs)


def _feeds(**arrays):
    return {f"{k}:0": v for k, v in arrays.items()}


# ============================================================================================
# slicing: what keras.ops.slice_update and the KV caches of keras-hub's decoders write


@case("xla_slicing", "xla",
      """XlaDynamicUpdateSlice as keras.ops.slice_update writes it (a KV cache's write at a fed
      step; a start past the end and a negative one, which XLA clamps), XlaDynamicSlice (clamped
      too), XlaPad with negative (cropping) and interior padding, XlaSplitND with padding and
      XlaConcatND removing it.""",
      style=STYLE_XLA, tol=TOL_ELEMENTWISE,
      expect_ops=["XlaDynamicUpdateSlice", "XlaDynamicSlice", "XlaPad", "XlaSplitND", "XlaConcatND"])
def _xla_slicing(rng):
    def body(cache, kv, step, x):
        zero = tf.constant(0)
        written = xla.dynamic_update_slice(cache, kv, tf.stack([zero, step, zero]))
        back = xla.dynamic_slice(written, tf.stack([zero, step - 1, zero]), [2, 3, 4])
        padded = xla.pad(x, tf.constant(-1.0), [1, -1], [-2, 2], [1, 0])
        parts = tf.raw_ops.XlaSplitND(input=x, N=4, num_splits=[2, 2], paddings=[1, 0])
        whole = tf.raw_ops.XlaConcatND(inputs=parts, num_concats=[2, 2], paddings=[1, 0])
        return {"written": written, "back": back, "padded": padded, "part3": parts[3], "whole": whole}
    specs = [_spec("cache", [2, 8, 4]), _spec("kv", [2, 2, 4]), _spec("step", [], tf.int32), _spec("x", [5, 4])]
    cache, kv, x = normal(rng, 2, 8, 4), normal(rng, 2, 2, 4), normal(rng, 5, 4)
    runs = [(f"step{s}", _feeds(cache=cache, kv=kv, step=np.int32(s), x=x)) for s in (3, 7, -2)]
    return xla_case(body, specs, runs)
