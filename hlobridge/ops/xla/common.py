"""What the Xla* op families share: index vectors as scalars, and the functions that
tf2xla's ops take as attributes (XlaReduce's reducer, XlaScatter's update computation,
XlaSort's comparator) as region bodies when lowering and as Python callables in kernels.

A function attribute is a FunctionDef of the graph's library, reached through `ctx.functions`
as If's and While's bodies are (ops/calls.py): `lower` emits its body inside the region being
built (on 0-d tensors, as XLA's computations take scalars), `call` runs it on reference kernels.
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ...spec import TensorSpec


def index_scalars(vector, n: int) -> list:
    """The n elements of a 1-D index Value, as the 0-d Values StableHLO's dynamic ops take."""
    return [hlo.reshape(hlo.slice(vector, [i], [i + 1]), []) for i in range(n)]


def scalar_specs(dtypes) -> list[TensorSpec]:
    """0-d specs of these dtypes: the arguments of a scalar computation."""
    return [TensorSpec(np.dtype(d), ()) for d in dtypes]


def region_body(ctx, attr: str, dtypes):
    """A region builder for StableHLO: (*block_args) -> [Value], the library function `attr`
    lowered on 0-d arguments of `dtypes` (in the function's argument order)."""
    f = ctx.attr(attr)
    specs = scalar_specs(dtypes)

    def body(*args):
        results = ctx.functions.lower(f, list(args), specs)
        return results if len(results) > 1 else [results[0]]
    return body


def scalar_call(ctx, attr: str):
    """The library function `attr` as a Python callable on NumPy scalars, run on reference
    kernels: (*args) -> [array]."""
    f = ctx.attr(attr)
    return lambda *args: [np.asarray(r) for r in ctx.functions.call(f, [np.asarray(a) for a in args])]


def check_results(ctx, attr: str, dtypes, expected: int) -> None:
    """Raise unless the function `attr` returns `expected` 0-d results of `dtypes[:expected]`."""
    outs = ctx.functions.infer(ctx.attr(attr), scalar_specs(dtypes))
    if len(outs) != expected or any(o.shape not in ((), None) for o in outs):
        raise ctx.error(f"function '{ctx.attr(attr).name}' ({attr}) must return {expected} scalar(s), "
                        f"returns {', '.join(str(o) for o in outs) or 'nothing'}")
