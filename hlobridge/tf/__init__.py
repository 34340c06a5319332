"""hlobridge.tf: compile a Python function or a Keras model that TensorFlow traces, and run it
with hlobridge (the `xla.compile(computation, inputs)` / `tf.function(jit_compile=True)` of
TensorFlow users, on hlobridge's compiler and runtime).

    import hlobridge.tf
    f = hlobridge.tf.function(fn, input_signature=[tf.TensorSpec([None, 8], tf.float32)])
    y = f(np_array)                      # NumPy in (or tf tensors), NumPy out, shaped like fn's

    model_fn = hlobridge.tf.from_keras(model)
    probs = model_fn(images)

The only part of hlobridge that imports TensorFlow (the `tf` extra: pip install hlobridge[tf]).
TensorFlow traces and freezes (trace.py); everything after the GraphDef is hlobridge's usual
Session (compiled.py). docs/tensorflow.md says what is traced and the limits.
"""

try:
    import tensorflow  # noqa: F401
except ModuleNotFoundError as e:
    if e.name != "tensorflow":
        raise
    raise ImportError("hlobridge.tf needs TensorFlow, which is not installed: "
                      "pip install hlobridge[tf]") from None

from .compiled import CompiledFunction, from_keras, function  # noqa: E402

__all__ = ["function", "from_keras", "CompiledFunction"]
