"""Picking a module's static batch function: a `.vmfb` compiled with `--batch-sizes`
(compile/buckets.py) holds `main` with a `?` batch and `main_b<N>` per listed size. `main` on
such a module is a `BucketedFunction`: a call whose batch is a listed size runs `main_b<N>`
(as fast as a static module), one whose batch is smaller than a listed size runs it padded
with zero rows and its outputs cut back, where the compiler found that no op mixes rows
(reflection "pads"), and any other runs the dynamic `main`."""

from __future__ import annotations

import numpy as np

SIZES_KEY = "hlobridge.batch_sizes"  # (compile/buckets.py writes them)
PADDING_KEY = "hlobridge.batch_padding"


class BucketedFunction:
    """`main` of a module with static batch functions: callable as `main` is, each call run by
    the function `pick` names."""

    def __init__(self, dynamic, functions: dict):
        self.dynamic = dynamic
        self.name = dynamic.name
        self.signature = dynamic.signature
        self.reflection = dynamic.reflection
        self.sizes = [int(s) for s in self.reflection[SIZES_KEY].split(",")]
        self.pads = self.reflection.get(PADDING_KEY) == "pads"
        self.static = {n: functions[f"{self.name}_b{n}"] for n in self.sizes}
        shapes = [spec.shape for _, spec in self.signature.inputs]
        self._batched = [i for i, s in enumerate(shapes) if len(s) and s[0] is None]
        self._out_batched = [len(spec.shape) > 0 and spec.shape[0] is None for _, spec in self.signature.outputs]

    input_names = property(lambda self: self.dynamic.input_names)
    output_names = property(lambda self: self.dynamic.output_names)

    def batch_of(self, args) -> int | None:
        """The batch the arguments feed (the first dimension of the first `?`-batch input)."""
        if not self._batched or len(args) <= self._batched[0]:
            return None
        shape = np.shape(args[self._batched[0]])
        return shape[0] if len(shape) else None

    def pick(self, args) -> tuple:
        """(function, padded batch or None) for these arguments: `main_b<N>` for a listed batch,
        the next listed one when padding is allowed, else the dynamic `main`."""
        batch = self.batch_of(args)
        if batch in self.static:
            return self.static[batch], None
        bigger = [n for n in self.sizes if batch is not None and n > batch]
        if self.pads and bigger:
            return self.static[bigger[0]], bigger[0]
        return self.dynamic, None

    def __call__(self, *args):
        fn, padded = self.pick(args)
        if padded is None:
            return fn(*args)
        batch = self.batch_of(args)
        args = list(args)
        for i in self._batched:
            a = np.asarray(args[i])
            args[i] = np.concatenate([a, np.zeros((padded - batch, *a.shape[1:]), a.dtype)])
        results = fn(*args)
        single = not isinstance(results, tuple)
        results = (results,) if single else results
        cut = tuple(r[:batch] if b else r for r, b in zip(results, self._out_batched))
        return cut[0] if single else cut

    def call_device(self, *args):
        """As the picked function's call_device (no padding: the batch must be listed or dynamic)."""
        fn, padded = self.pick(args)
        return (self.dynamic if padded else fn).call_device(*args)


def with_buckets(functions: dict) -> dict:
    """`functions` with `main` wrapped where its reflection lists batch sizes."""
    main = functions.get("main")
    if main is None or SIZES_KEY not in main.reflection:
        return functions
    return {**functions, "main": BucketedFunction(main, functions)}
