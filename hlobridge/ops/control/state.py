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

Random ops reproduce TensorFlow's CPU Philox streams (random/philox.py): the same seeds give
TensorFlow's numbers (uniform bit-exact; normals within an ulp of glibc's logf/sincosf).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ... import dtypes
from ...runtime.host import to_host
from ...errors import InputError
from ...spec import TensorSpec
from ..random.philox import GuardedPhilox
from ..registry import as_list, register
from ..typesets import ANY, FLOAT, NUMBER
from ..traced import Traced


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

    A compiled cluster may write a variable in place (passes/ir/tie_variables.py). It may do so
    only with a buffer nobody else holds: a value handed out by `read` (to a kernel, as a
    NumPy view of the buffer, or to a call that may return it) is "lent" until the variable is
    written again, and `read_to_overwrite` gives a cluster a copy of a lent value instead.
    """

    def __init__(self):
        self.values: dict[str, object] = {}
        self.random_streams: dict[str, GuardedPhilox] = {}  # per random node
        self.lent: set[str] = set()  # variables whose current value someone else may hold

    def read(self, handle: VariableHandle, reader: str, lend: bool = True):
        """The variable's current value (a device array if a cluster wrote it); an error naming
        `reader` if it is uninitialized. `lend=False`: the reader keeps nothing of it (a
        compiled call that returns no view of it)."""
        value = self._value(handle, reader)
        if lend:
            self.lent.add(handle.name)
        return value

    def read_to_overwrite(self, handle: VariableHandle, reader: str):
        """The variable's value for a call that writes its new value into the same buffer: the
        buffer itself if nobody else holds it, else a host copy (IREE copies host arguments
        into a new buffer, which the call then owns)."""
        value = self._value(handle, reader)
        return to_host(value) if handle.name in self.lent else value

    def _value(self, handle: VariableHandle, reader: str):
        try:
            return self.values[handle.name]
        except KeyError:
            raise InputError(f"node '{reader}' reads variable '{handle.name}', which is not "
                             f"initialized (run its initializer first)") from None

    def read_host(self, handle: VariableHandle, reader: str) -> np.ndarray:
        """The variable's value as a NumPy array."""
        return to_host(self.read(handle, reader))

    def write(self, handle: VariableHandle, value, shared: bool = False) -> None:
        """Make `value` the variable's value (host values cast to its dtype); `shared`: someone
        else holds its buffer too (a call returned it as another result as well)."""
        if isinstance(value, np.ndarray) or np.isscalar(value):
            value = np.asarray(value, dtype=handle.dtype)
        self.values[handle.name] = value
        if shared:
            self.lent.add(handle.name)
        else:
            self.lent.discard(handle.name)

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


def _ada_max(var, m, v, beta1_power, lr, beta1, beta2, epsilon, grad):
    m = m + (grad - m) * (1 - beta1)
    v = np.maximum(beta2 * v, np.abs(grad))
    return [var - lr / (1 - beta1_power) * (m / (v + epsilon)), m, v]


def _shrink(x, threshold):
    """sign(x) * max(|x| - threshold, 0): the L1 proximal step."""
    return np.sign(x) * np.maximum(np.abs(x) - threshold, 0)


def _adagrad_da(var, grad_accum, grad_squared_accum, grad, lr, l1, l2, global_step):
    grad_accum = grad_accum + grad
    grad_squared_accum = grad_squared_accum + grad * grad
    denom = l2 * (global_step * lr) + np.sqrt(grad_squared_accum)
    shrunk = -lr * _shrink(grad_accum, global_step * l1) / denom
    return [np.where(l1 > 0, shrunk, lr * grad_accum * -1 / denom), grad_accum, grad_squared_accum]


def _add_sign(var, m, lr, alpha, sign_decay, beta, grad):
    m = m * beta + grad * (1 - beta)
    return [var - lr * (alpha + sign_decay * (np.sign(grad) * np.sign(m))) * grad, m]


def _power_sign(var, m, lr, logbase, sign_decay, beta, grad):
    m = m * beta + grad * (1 - beta)
    return [var - lr * np.exp(logbase * sign_decay * (np.sign(grad) * np.sign(m))) * grad, m]


def _ftrl_v2(var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power, *, multiply_linear_by_lr=False):
    """TF's ApplyFtrlV2 (and, with l2_shrinkage 0, ApplyFtrl): `accum ** -lr_power` is a square
    root when lr_power is -0.5, as TF's functor special-cases it."""
    def power(a):
        return np.where(lr_power == -0.5, np.sqrt(a), a ** -lr_power)
    new_accum = accum + grad * grad
    shrunk_grad = grad + 2 * l2_shrinkage * var
    if multiply_linear_by_lr:
        linear = linear + shrunk_grad * lr - (power(new_accum) - power(accum)) * var
        l1, y = l1 * lr, power(new_accum) + 2 * l2 * lr
    else:
        linear = linear + shrunk_grad - (power(new_accum) - power(accum)) / lr * var
        y = power(new_accum) / lr + 2 * l2
    var = np.where(np.abs(linear) > l1, (l1 * np.sign(linear) - linear) / y, 0)
    return [var, accum + grad * grad, linear]


def _ftrl(var, accum, linear, grad, lr, l1, l2, lr_power, **flags):
    return _ftrl_v2(var, accum, linear, grad, lr, l1, l2, 0, lr_power, **flags)


def _keras_momentum(var, accum, lr, grad, momentum, *, use_nesterov=False):
    accum = accum * momentum - grad * lr
    return [var + (accum * momentum - grad * lr) if use_nesterov else var + accum, accum]


def _proximal_step(var, step, lr, l1, l2):
    """Fobos: var - step, then the L1/L2 proximal map with learning rate lr."""
    prox = var - step
    return np.where(l1 > 0, _shrink(prox, lr * l1), prox) / (1 + l2 * lr)


def _proximal_adagrad(var, accum, lr, l1, l2, grad):
    accum = accum + grad * grad
    rate = lr * _rsqrt(accum)
    return [_proximal_step(var, grad * rate, rate, l1, l2), accum]


def _proximal_gradient_descent(var, alpha, l1, l2, delta):
    return [_proximal_step(var, delta * alpha, alpha, l1, l2)]


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
    "AdaMax": (3, _ada_max, ()),
    "AdagradDA": (3, _adagrad_da, ()),
    "AddSign": (2, _add_sign, ()),
    "PowerSign": (2, _power_sign, ()),
    "Ftrl": (3, _ftrl, ("multiply_linear_by_lr",)),
    "FtrlV2": (3, _ftrl_v2, ("multiply_linear_by_lr",)),
    "KerasMomentum": (2, _keras_momentum, ("use_nesterov",)),
    "ProximalAdagrad": (2, _proximal_adagrad, ()),
    "ProximalGradientDescent": (1, _proximal_gradient_descent, ()),
}
RESOURCE_ONLY = {"KerasMomentum"}  # TensorFlow has no ref-variable ApplyKerasMomentum
FLAG_DEFAULTS = {"use_nesterov": False, "update_slots": True, "multiply_linear_by_lr": False}


def _optimizer(n_slots, update, resource):
    def rule(ctx, *args):
        slots = [ctx.state.read(i) for i in range(n_slots)]
        dtype = slots[0].dtype
        # (AdagradDA's int64 global_step becomes the variable's type, as TF's static_cast does)
        rest = [r.astype(dtype) if isinstance(r, Traced) else np.asarray(r, dtype=dtype) for r in args[n_slots:]]
        flags = {k: ctx.attr(k, default) for k, default in FLAG_DEFAULTS.items() if k in ctx.node.attrs}
        for i, new in enumerate(update(*slots, *rest, **flags)):
            ctx.state.write(i, new)
        return [] if resource else ctx.state.read(0)
    return rule


for _suffix, (_n, _update, _extra) in OPTIMIZERS.items():
    _attrs = ("T", "use_locking") + _extra
    if _suffix not in RESOURCE_ONLY:
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
