"""The anchors benchmarks/gpu_check.py times beside hlobridge: ResNet-50 v1 training written
directly in JAX (jax.lax.conv, a few lines) and PyTorch's torchvision ResNet-50, each a
`step()` that trains once on a fixed random batch and returns the loss as a Python float (a
synchronisation: the step has finished on the device).

Precisions: "f32" (exact: JAX's HIGHEST, PyTorch with TF32 off), "tf32" (JAX's DEFAULT, which
XLA:GPU runs on TF32 tensor cores; PyTorch with TF32 on), "bf16" (bf16 compute, f32 weights
and loss: JAX casts, PyTorch autocasts). `small` shrinks the network (one block per stage,
width 8) for gpu_check's --smoke on a CPU.
"""

from __future__ import annotations

import numpy as np

STAGES = ((64, 3), (128, 4), (256, 6), (512, 3))  # (bottleneck width, blocks): ResNet-50 v1
CLASSES = 1000


def _stages(small: bool):
    return tuple((8 * 2 ** i, 1) for i in range(4)) if small else STAGES


def jax_resnet50(size: int, batch: int, precision: str, platform: str, small: bool = False):
    """A jitted JAX ResNet-50 training step (SGD with momentum 0.9, batch-norm in training mode)."""
    import jax
    import jax.numpy as jnp

    device = jax.devices(platform)[0]
    prec = jax.lax.Precision.HIGHEST if precision == "f32" else jax.lax.Precision.DEFAULT
    compute = jnp.bfloat16 if precision == "bf16" else jnp.float32
    rng = np.random.default_rng(0)
    params = []

    def conv_param(k, cin, cout):
        params.append(rng.standard_normal((k, k, cin, cout)).astype(np.float32) * np.sqrt(2.0 / (k * k * cin)))
        params.append(np.ones(cout, np.float32))
        params.append(np.zeros(cout, np.float32))

    conv_param(7, 3, _stages(small)[0][0])
    cin = _stages(small)[0][0]
    plan = []
    for width, blocks in _stages(small):
        for b in range(blocks):
            shortcut = b == 0
            plan.append((width, shortcut, cin))
            conv_param(1, cin, width)
            conv_param(3, width, width)
            conv_param(1, width, width * 4)
            if shortcut:
                conv_param(1, cin, width * 4)
            cin = width * 4
    params.append(rng.standard_normal((cin, CLASSES)).astype(np.float32) * 0.01)
    params.append(np.zeros(CLASSES, np.float32))

    def conv_bn(x, p, i, stride, relu=True):
        w, gamma, beta = p[i], p[i + 1], p[i + 2]
        y = jax.lax.conv_general_dilated(x, w.astype(compute), (stride, stride), "SAME",
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"), precision=prec)
        y32 = y.astype(jnp.float32)
        mean, var = y32.mean((0, 1, 2)), y32.var((0, 1, 2))
        y = ((y32 - mean) * jax.lax.rsqrt(var + 1e-3) * gamma + beta).astype(compute)
        return jax.nn.relu(y) if relu else y

    def loss_fn(p, x, labels):
        x = conv_bn(x.astype(compute), p, 0, 2)
        x = jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
        i = 3
        for n, (width, shortcut, _) in enumerate(plan):
            stride = 2 if shortcut and n > 0 else 1
            y = conv_bn(x, p, i, 1)
            y = conv_bn(y, p, i + 3, stride)
            y = conv_bn(y, p, i + 6, 1, relu=False)
            i += 9
            if shortcut:
                x = conv_bn(x, p, i, stride, relu=False)
                i += 3
            x = jax.nn.relu(x + y)
        logits = jnp.dot(x.astype(jnp.float32).mean((1, 2)), p[i], precision=prec) + p[i + 1]
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), labels[:, None], 1))

    def sgd(p, v, x, labels):
        loss, g = jax.value_and_grad(loss_fn)(p, x, labels)
        v = [0.9 * vi + gi for vi, gi in zip(v, g)]
        return [pi - 0.01 * vi for pi, vi in zip(p, v)], v, loss

    train = jax.jit(sgd, donate_argnums=(0, 1))  # weights and momenta updated in place
    state = {"p": [jax.device_put(a, device) for a in params],
             "v": [jax.device_put(np.zeros_like(a), device) for a in params]}
    x = jax.device_put(rng.standard_normal((batch, size, size, 3)).astype(np.float32), device)
    labels = jax.device_put(rng.integers(0, CLASSES, batch).astype(np.int32), device)

    def step() -> float:
        state["p"], state["v"], loss = train(state["p"], state["v"], x, labels)
        return float(loss)
    return step


def torch_resnet50(size: int, batch: int, precision: str, platform: str, small: bool = False):
    """torchvision's ResNet-50 training step (SGD with momentum 0.9), channels-last."""
    import torch
    import torchvision

    device = torch.device("cuda" if platform == "gpu" else "cpu")
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    torch.manual_seed(0)
    model = (torchvision.models.resnet18(num_classes=CLASSES) if small
             else torchvision.models.resnet50(num_classes=CLASSES))
    model = model.to(device).to(memory_format=torch.channels_last).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, 3, size, size, device=device).to(memory_format=torch.channels_last)
    labels = torch.randint(0, CLASSES, (batch,), device=device)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16")

    def step() -> float:
        opt.zero_grad(set_to_none=True)
        with autocast:
            loss = torch.nn.functional.cross_entropy(model(x), labels)
        loss.backward()
        opt.step()
        return float(loss)  # .item(): waits for the device
    return step
