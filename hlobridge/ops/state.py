"""Variables, optimizer updates and random numbers: the stateful ops.

Variables live in a `VariableStore` owned by the Session; kernels reach them through
`ctx.state` (a VariableAccess), and lowerings through the same interface over StableHLO
values, so each stateful op is one rule serving as kernel and lowering. A resource
variable (VarHandleOp) and a ref variable (VariableV2) both evaluate to a
`VariableHandle`; ops that read a ref variable as a value get it dereferenced by the
executor, ops listed with `ref_inputs` get the handle itself.

Optimizer updates are one table: each row gives the slots the op updates and a NumPy
update rule over (slots..., scalars..., grad). The ref form (ApplyX) and the resource
form (ResourceApplyX) share the row.

Random ops reproduce TensorFlow's CPU Philox streams (philox.py): the same seeds give
TensorFlow's numbers (uniform bit-exact; normals within an ulp of glibc's logf/sincosf).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import dtypes
from ..runtime.host import to_host
from ..errors import InputError
from ..spec import TensorSpec
from .philox import GuardedPhilox
from .registry import as_list, register
from .typesets import ANY, FLOAT, NUMBER
from .traced import Traced


@dataclass(frozen=True)
class VariableHandle:
    """What a VarHandleOp or VariableV2 evaluates to: the name of a slot in the store."""

    name: str
    dtype: object
    shape: tuple | None


class VariableStore:
    """The values of a session's variables, by shared name.

    A value is a NumPy array or, once a compiled cluster has written it, a device array:
    variables stay on the device between steps and come to the host only when a reference
    kernel or a fetch reads them.
    """

    def __init__(self):
        self.values: dict[str, object] = {}
        self.random_streams: dict[str, GuardedPhilox] = {}  # per random node

    def read(self, handle: VariableHandle, reader: str):
        """The variable's current value (a device array if a cluster wrote it); an error naming
        `reader` if it is uninitialized."""
        try:
            return self.values[handle.name]
        except KeyError:
            raise InputError(f"node '{reader}' reads variable '{handle.name}', which is not "
                             f"initialized (run its initializer first)") from None

    def read_host(self, handle: VariableHandle, reader: str) -> np.ndarray:
        """The variable's value as a NumPy array."""
        return to_host(self.read(handle, reader))

    def write(self, handle: VariableHandle, value) -> None:
        """Make `value` the variable's value (host values cast to its dtype)."""
        if isinstance(value, np.ndarray) or np.isscalar(value):
            value = np.asarray(value, dtype=handle.dtype)
        self.values[handle.name] = value

    def __contains__(self, handle: VariableHandle) -> bool:
        return handle.name in self.values


class VariableAccess:
    """A stateful kernel's `ctx.state`: read and write the variables its inputs name.

    The lowering gives rules the same interface over StableHLO values (lowering.ResourceAccess),
    so each stateful op is one rule that serves as both its kernel and its lowering.
    """

    def __init__(self, store: VariableStore, node, args):
        self.store = store
        self.node = node
        self.args = args

    def read(self, i: int) -> np.ndarray:
        """The value of the variable at input i, on the host."""
        return self.store.read_host(self.args[i], self.node.name)

    def write(self, i: int, value) -> None:
        """Assign the variable at input i."""
        self.store.write(self.args[i], value)

    def initialized(self, i: int) -> bool:
        """Whether the variable at input i has a value yet."""
        return self.args[i] in self.store

    def random_stream(self, seed: int, seed2: int) -> GuardedPhilox:
        """This node's random stream, created on its first run in the session."""
        streams = self.store.random_streams
        if self.node.name not in streams:
            streams[self.node.name] = GuardedPhilox(seed, seed2)
        return streams[self.node.name]


def kernel_and_lowering(rule):
    """Register `rule(ctx, *args)` as both kernel and lowering: the lowering hands it
    `Traced` operands (NumPy operators emit StableHLO) and unwraps what it returns."""
    def lower(ctx, *operands):
        wrapped = [None if v is None else Traced(v, s.dtype) for v, s in zip(operands, ctx.inputs)]
        return [r.value if isinstance(r, Traced) else r for r in as_list(rule(ctx, *wrapped))]
    return dict(kernel=rule, lower=lower)


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
         **kernel_and_lowering(lambda ctx, h: ctx.state.read(0)))
register("VarIsInitializedOp", infer=lambda ctx: [TensorSpec(np.dtype(bool), ())], attrs=(),
         stateful=True, kernel=lambda ctx, h: np.asarray(ctx.state.initialized(0)))


def _assign(update, returns_value: bool):
    """Assign/AssignAdd/AssignSub, resource or ref form: `var = update(var, value)`."""
    def rule(ctx, var, value):
        ctx.state.write(0, value if update is None else update(ctx.state.read(0), value))
        return ctx.state.read(0) if returns_value else []
    return rule


ASSIGNMENTS = {"Assign": None, "AssignAdd": np.add, "AssignSub": np.subtract}

for _op, _update in ASSIGNMENTS.items():
    register(f"{_op}VariableOp", infer=lambda ctx: [], attrs=("dtype", "validate_shape"), stateful=True,
             **kernel_and_lowering(_assign(_update, returns_value=False)))


# -- ref variables ----------------------------------------------------------------------------------


def _variable_v2_infer(ctx):
    return [TensorSpec(ctx.attr("dtype"), ctx.attr("shape"))]


register("VariableV2", infer=_variable_v2_infer, stateful=True,
         attrs=("shape", "dtype", "container", "shared_name"),
         kernel=lambda ctx: VariableHandle(_variable_name(ctx), ctx.out().dtype, ctx.out().shape))
register("IsVariableInitialized", infer=lambda ctx: [TensorSpec(np.dtype(bool), ())],
         attrs=("dtype",), ref_inputs=(0,), stateful=True,
         kernel=lambda ctx, h: np.asarray(ctx.state.initialized(0)))


def _assign_infer(ctx):
    ref = ctx.inputs[0]
    shape = ctx.inputs[1].shape if ctx.attr("validate_shape", True) is False else ref.shape
    return [TensorSpec(ref.dtype, shape if shape is not None else ctx.inputs[1].shape)]


for _op, _update in ASSIGNMENTS.items():
    register(_op, infer=_assign_infer, attrs=("T", "validate_shape", "use_locking"),
             dtypes=ANY if _update is None else NUMBER,
             ref_inputs=(0,), stateful=True, **kernel_and_lowering(_assign(_update, returns_value=True)))


# -- optimizers ----------------------------------------------------------------------------------------
# Rules use NumPy operators only, so they run on arrays (kernel) and on Traced values (lowering).
# The formulas and their evaluation order follow TensorFlow's training_ops.cc CPU functors.


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


def _rsqrt(x):
    return 1 / np.sqrt(x)


def _adagrad(var, accum, lr, grad, *, update_slots=True):
    if update_slots:
        accum = accum + grad * grad
    return [var - grad * lr * _rsqrt(accum), accum]


def _adagrad_v2(var, accum, lr, epsilon, grad, *, update_slots=True):
    if update_slots:
        accum = accum + grad * grad
    return [var - grad * lr / (np.sqrt(accum) + epsilon), accum]


def _rms_prop(var, ms, mom, lr, rho, momentum, epsilon, grad):
    ms = ms + (grad * grad - ms) * (1 - rho)
    mom = mom * momentum + _rsqrt(ms + epsilon) * lr * grad
    return [var - mom, ms, mom]


def _centered_rms_prop(var, mg, ms, mom, lr, rho, momentum, epsilon, grad):
    ms = ms + (grad * grad - ms) * (1 - rho)
    mg = mg + (grad - mg) * (1 - rho)
    mom = mom * momentum + _rsqrt(ms - mg * mg + epsilon) * lr * grad
    return [var - mom, mg, ms, mom]


def _adadelta(var, accum, accum_update, lr, rho, epsilon, grad):
    accum = accum * rho + grad * grad * (1 - rho)
    update = np.sqrt(accum_update + epsilon) * _rsqrt(accum + epsilon) * grad
    return [var - update * lr, accum, accum_update * rho + update * update * (1 - rho)]


# op suffix -> (number of variable slots, update rule, attrs besides T/use_locking)
OPTIMIZERS = {
    "GradientDescent": (1, _sgd, ()),
    "Momentum": (2, _momentum, ("use_nesterov",)),
    "Adam": (3, _adam, ("use_nesterov",)),
    "Adagrad": (2, _adagrad, ("update_slots",)),
    "AdagradV2": (2, _adagrad_v2, ("update_slots",)),
    "RMSProp": (3, _rms_prop, ()),
    "CenteredRMSProp": (4, _centered_rms_prop, ()),
    "Adadelta": (3, _adadelta, ()),
}
FLAG_DEFAULTS = {"use_nesterov": False, "update_slots": True}


def _optimizer(n_slots, update, resource):
    def rule(ctx, *args):
        slots = [ctx.state.read(i) for i in range(n_slots)]
        dtype = slots[0].dtype
        rest = [r if isinstance(r, Traced) else np.asarray(r, dtype=dtype) for r in args[n_slots:]]
        flags = {k: ctx.attr(k, default) for k, default in FLAG_DEFAULTS.items() if k in ctx.node.attrs}
        for i, new in enumerate(update(*slots, *rest, **flags)):
            ctx.state.write(i, new)
        return [] if resource else ctx.state.read(0)
    return rule


for _suffix, (_n, _update, _extra) in OPTIMIZERS.items():
    _attrs = ("T", "use_locking") + _extra
    register(f"Apply{_suffix}", infer=lambda ctx: [TensorSpec(ctx.inputs[0].dtype, ctx.inputs[0].shape)],
             dtypes=FLOAT,
             attrs=_attrs, ref_inputs=tuple(range(_n)), stateful=True,
             **kernel_and_lowering(_optimizer(_n, _update, resource=False)))
    register(f"ResourceApply{_suffix}", infer=lambda ctx: [], attrs=_attrs, stateful=True, dtypes=FLOAT,
             **kernel_and_lowering(_optimizer(_n, _update, resource=True)))


# -- random numbers ----------------------------------------------------------------------------------


def _random_kernel(ctx, shape, *bounds):
    """TensorFlow's Philox stream for this node: each run continues where the last one
    stopped, and a new session starts over, as TF's per-kernel GuardedPhiloxRandom does."""
    stream = ctx.state.random_stream(ctx.attr("seed", 0), ctx.attr("seed2", 0))
    minval, maxval = (np.asarray(b).item() for b in bounds) if bounds else (None, None)
    return stream.sample(ctx.op, tuple(int(d) for d in shape), ctx.out().dtype, minval=minval, maxval=maxval)


def _random_infer(ctx):
    shape = ctx.inputs[0].value
    dtype = ctx.attr("Tout") if ctx.op == "RandomUniformInt" else ctx.attr("dtype")
    return [TensorSpec(dtype, tuple(int(d) for d in shape) if shape is not None else None)]


for _op in ("RandomUniform", "RandomStandardNormal", "TruncatedNormal"):
    register(_op, infer=_random_infer, attrs=("seed", "seed2", "dtype", "T"), const_inputs=(0,),
             dtypes=FLOAT, dtype_attrs=("dtype",),
             stateful=True, kernel=_random_kernel)
register("RandomUniformInt", infer=_random_infer, attrs=("seed", "seed2", "Tout", "T"),
         dtypes=("int32", "int64"), dtype_attrs=("Tout",),
         const_inputs=(0,), stateful=True, kernel=_random_kernel)
