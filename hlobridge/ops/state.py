"""Variables, optimizer updates and random numbers: the stateful ops.

Variables live in a `VariableStore` owned by the Session; kernels reach it as
`ctx.state`. A resource variable (VarHandleOp) and a ref variable (VariableV2) both
evaluate to a `VariableHandle`; ops that read a ref variable as a value get it
dereferenced by the executor, ops listed with `ref_inputs` get the handle itself.

Optimizer updates are one table: each row gives the slots the op updates and a NumPy
update rule over (slots..., scalars..., grad). The ref form (ApplyX) and the resource
form (ResourceApplyX) share the row.

Random ops use NumPy's generator seeded from (seed, seed2): they do not reproduce
TensorFlow's Philox streams. The corpus protocol feeds TF's initial values instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import dtypes
from ..errors import InputError
from ..spec import TensorSpec
from .registry import register


@dataclass(frozen=True)
class VariableHandle:
    """What a VarHandleOp or VariableV2 evaluates to: the name of a slot in the store."""

    name: str
    dtype: object
    shape: tuple | None


class VariableStore:
    """The values of a session's variables, by shared name."""

    def __init__(self):
        self.values: dict[str, object] = {}

    def read(self, handle: VariableHandle, reader: str):
        try:
            return self.values[handle.name]
        except KeyError:
            raise InputError(f"node '{reader}' reads variable '{handle.name}', which is not "
                             f"initialized (run its initializer first)") from None

    def write(self, handle: VariableHandle, value) -> None:
        self.values[handle.name] = np.asarray(value, dtype=handle.dtype) if isinstance(value, np.ndarray) \
            or np.isscalar(value) else value

    def __contains__(self, handle: VariableHandle) -> bool:
        return handle.name in self.values


def _variable_name(ctx) -> str:
    return ctx.attr("shared_name", "") or ctx.name


# -- resource variables ---------------------------------------------------------------------------


def _var_handle_infer(ctx):
    return [TensorSpec(dtypes.RESOURCE, (), handle=(ctx.attr("dtype"), ctx.attr("shape", None)))]


register("VarHandleOp", infer=_var_handle_infer, stateful=True,
         attrs=("container", "shared_name", "dtype", "shape", "allowed_devices", "debug_name"),
         kernel=lambda ctx: VariableHandle(_variable_name(ctx), ctx.attr("dtype"), ctx.attr("shape", None)))


def _handle_of(ctx, i=0):
    spec = ctx.inputs[i]
    if spec.dtype != dtypes.RESOURCE or spec.handle is None:
        raise ctx.error(f"input {i} must be a variable handle, got {spec}")
    return spec.handle


def _read_infer(ctx):
    var_dtype, shape = _handle_of(ctx)
    return [TensorSpec(ctx.attr("dtype"), shape)]


register("ReadVariableOp", infer=_read_infer, attrs=("dtype",), stateful=True,
         kernel=lambda ctx, h: ctx.state.read(h, ctx.name))
register("VarIsInitializedOp", infer=lambda ctx: [TensorSpec(np.dtype(bool), ())], attrs=(),
         stateful=True, kernel=lambda ctx, h: np.asarray(h in ctx.state))


def _assign_resource(update):
    def kernel(ctx, h, value):
        old = ctx.state.read(h, ctx.name) if update is not None else None
        ctx.state.write(h, value if update is None else update(old, value))
        return []
    return kernel


for _op, _update in {"AssignVariableOp": None, "AssignAddVariableOp": np.add,
                     "AssignSubVariableOp": np.subtract}.items():
    register(_op, infer=lambda ctx: [], attrs=("dtype", "validate_shape"), stateful=True,
             kernel=_assign_resource(_update))


# -- ref variables ----------------------------------------------------------------------------------


def _variable_v2_infer(ctx):
    return [TensorSpec(ctx.attr("dtype"), ctx.attr("shape"))]


register("VariableV2", infer=_variable_v2_infer, stateful=True,
         attrs=("shape", "dtype", "container", "shared_name"),
         kernel=lambda ctx: VariableHandle(_variable_name(ctx), ctx.out().dtype, ctx.out().shape))
register("IsVariableInitialized", infer=lambda ctx: [TensorSpec(np.dtype(bool), ())],
         attrs=("dtype",), ref_inputs=(0,), stateful=True,
         kernel=lambda ctx, h: np.asarray(h in ctx.state))


def _assign_ref(update):
    def kernel(ctx, h, value):
        new = value if update is None else update(ctx.state.read(h, ctx.name), value)
        ctx.state.write(h, new)
        return ctx.state.read(h, ctx.name)
    return kernel


def _assign_infer(ctx):
    ref = ctx.inputs[0]
    shape = ctx.inputs[1].shape if ctx.attr("validate_shape", True) is False else ref.shape
    return [TensorSpec(ref.dtype, shape if shape is not None else ctx.inputs[1].shape)]


for _op, _update in {"Assign": None, "AssignAdd": np.add, "AssignSub": np.subtract}.items():
    register(_op, infer=_assign_infer, attrs=("T", "validate_shape", "use_locking"),
             ref_inputs=(0,), stateful=True, kernel=_assign_ref(_update))


# -- optimizers ----------------------------------------------------------------------------------------


def _sgd(var, alpha, delta):
    return [var - alpha * delta]


def _momentum(var, accum, lr, grad, momentum, *, use_nesterov=False):
    accum = accum * momentum + grad
    if use_nesterov:
        return [var - (grad * lr + accum * momentum * lr), accum]
    return [var - lr * accum, accum]


def _adam(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad, *, use_nesterov=False):
    one = np.ones((), var.dtype)
    alpha = lr * np.sqrt(one - beta2_power) / (one - beta1_power)
    m = m + (grad - m) * (one - beta1)
    v = v + (grad * grad - v) * (one - beta2)
    step = (m * beta1 + (one - beta1) * grad) if use_nesterov else m
    return [var - step * alpha / (np.sqrt(v) + epsilon), m, v]


# op suffix -> (number of variable slots, update rule, attrs besides T/use_locking)
OPTIMIZERS = {
    "GradientDescent": (1, _sgd, ()),
    "Momentum": (2, _momentum, ("use_nesterov",)),
    "Adam": (3, _adam, ("use_nesterov",)),
}


def _optimizer_kernel(n_slots, rule, resource):
    def kernel(ctx, *args):
        handles, rest = args[:n_slots], args[n_slots:]
        slots = [np.asarray(ctx.state.read(h, ctx.name)) for h in handles]
        dtype = slots[0].dtype
        rest = [np.asarray(r, dtype=dtype) for r in rest]
        flags = {k: ctx.attr(k, False) for k in ("use_nesterov",) if k in ctx.node.attrs}
        for h, new in zip(handles, rule(*slots, *rest, **flags)):
            ctx.state.write(h, np.asarray(new, dtype=dtype))
        return [] if resource else ctx.state.read(handles[0], ctx.name)
    return kernel


for _suffix, (_n, _rule, _extra) in OPTIMIZERS.items():
    _attrs = ("T", "use_locking") + _extra
    register(f"Apply{_suffix}", infer=lambda ctx: [TensorSpec(ctx.inputs[0].dtype, ctx.inputs[0].shape)],
             attrs=_attrs, ref_inputs=tuple(range(_n)), stateful=True,
             kernel=_optimizer_kernel(_n, _rule, resource=False))
    register(f"ResourceApply{_suffix}", infer=lambda ctx: [], attrs=_attrs, stateful=True,
             kernel=_optimizer_kernel(_n, _rule, resource=True))


# -- random numbers ----------------------------------------------------------------------------------


def _rng(ctx) -> np.random.Generator:
    return np.random.default_rng([ctx.attr("seed", 0) & 0xFFFFFFFF, ctx.attr("seed2", 0) & 0xFFFFFFFF])


def _truncated_normal(rng, shape):
    out = rng.standard_normal(shape)
    bad = np.abs(out) > 2
    while bad.any():
        out[bad] = rng.standard_normal(int(bad.sum()))
        bad = np.abs(out) > 2
    return out


RANDOM = {
    "RandomUniform": lambda rng, shape: rng.random(shape),
    "RandomStandardNormal": lambda rng, shape: rng.standard_normal(shape),
    "TruncatedNormal": _truncated_normal,
}


def _random_infer(ctx):
    shape = ctx.inputs[0].value
    return [TensorSpec(ctx.attr("dtype"), tuple(int(d) for d in shape) if shape is not None else None)]


for _op, _draw in RANDOM.items():
    register(_op, infer=_random_infer, attrs=("seed", "seed2", "dtype", "T"), const_inputs=(0,),
             stateful=True,
             kernel=lambda ctx, shape, d=_draw: np.asarray(d(_rng(ctx), tuple(shape)), dtype=ctx.out().dtype))
