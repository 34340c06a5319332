"""The anchors benchmarks/gpu_check.py times beside hlobridge: ResNet-50 v1 training written
directly in JAX (jax.lax.conv, a few lines) and PyTorch's torchvision ResNet-50, and BERT-base
training written in each (below: the same parameters, data and Adam), each a
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
        return loss.item()  # waits for the device
    return step


# BERT-base training, as tools/make_bench_models.py --bert-base-train-graph writes it for
# hlobridge (google-research/bert's modeling.py: post-norm layers, tanh gelu, additive mask,
# pooler, a 2-class head; Adam at 1e-3), batch 32 at sequence 128 in gpu_check.
BERT_BASE = {"vocab": 30522, "hidden": 768, "layers": 12, "heads": 12, "intermediate": 3072, "seq": 128, "classes": 2}
BERT_SMALL = {"vocab": 128, "hidden": 32, "layers": 1, "heads": 2, "intermediate": 64, "seq": 16, "classes": 2}


def _bert_shapes(c: dict) -> dict:
    """Parameter name -> (shape, init) with init "normal" (stddev 0.02, BERT's), "ones" or "zeros"."""
    h, i = c["hidden"], c["intermediate"]
    shapes = {"word": ((c["vocab"], h), "normal"), "type": ((2, h), "normal"), "position": ((c["seq"], h), "normal"),
              "emb_ln_g": ((h,), "ones"), "emb_ln_b": ((h,), "zeros"),
              "pool_w": ((h, h), "normal"), "pool_b": ((h,), "zeros"),
              "cls_w": ((h, c["classes"]), "normal"), "cls_b": ((c["classes"],), "zeros")}
    for n in range(c["layers"]):
        for part, (cin, cout) in {"q": (h, h), "k": (h, h), "v": (h, h), "o": (h, h), "in": (h, i), "out": (i, h)}.items():
            shapes[f"l{n}_{part}_w"], shapes[f"l{n}_{part}_b"] = ((cin, cout), "normal"), ((cout,), "zeros")
        for ln in ("ln1", "ln2"):
            shapes[f"l{n}_{ln}_g"], shapes[f"l{n}_{ln}_b"] = ((h,), "ones"), ((h,), "zeros")
    return shapes


def _bert_data(c: dict, batch: int):
    """(parameters as NumPy, token ids, padding mask, segment ids, labels): fixed and seeded."""
    rng = np.random.default_rng(0)
    params = {name: (rng.standard_normal(shape) * 0.02).astype(np.float32) if init == "normal"
              else (np.ones if init == "ones" else np.zeros)(shape, np.float32)
              for name, (shape, init) in _bert_shapes(c).items()}
    seq = c["seq"]
    ids = rng.integers(0, c["vocab"], (batch, seq)).astype(np.int32)
    lengths = rng.integers(seq // 4, seq + 1, batch)
    mask = (np.arange(seq) < lengths[:, None]).astype(np.int32)
    segments = (np.arange(seq) >= (lengths // 2)[:, None]).astype(np.int32) * mask
    return params, ids, mask, segments, rng.integers(0, c["classes"], batch).astype(np.int32)


def jax_bert(batch: int, precision: str, platform: str, small: bool = False):
    """A jitted JAX BERT training step (Adam): dense layers and attention at `precision`."""
    import jax
    import jax.numpy as jnp

    c = BERT_SMALL if small else BERT_BASE
    device = jax.devices(platform)[0]
    prec = jax.lax.Precision.HIGHEST if precision == "f32" else jax.lax.Precision.DEFAULT
    compute = jnp.bfloat16 if precision == "bf16" else jnp.float32
    heads, hidden = c["heads"], c["hidden"]
    params, ids, mask, segments, labels = _bert_data(c, batch)

    def dense(x, p, name):
        return jnp.dot(x.astype(compute), p[f"{name}_w"].astype(compute), precision=prec).astype(jnp.float32) + p[f"{name}_b"]

    def norm(x, p, name):
        mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + 1e-12) * p[f"{name}_g"] + p[f"{name}_b"]

    def attend(q, k, v, adder):
        split = lambda t: t.reshape(t.shape[0], t.shape[1], heads, -1).astype(compute)  # noqa: E731
        scores = jnp.einsum("bqhd,bkhd->bhqk", split(q), split(k), precision=prec).astype(jnp.float32)
        probs = jax.nn.softmax(scores / np.sqrt(hidden // heads) + adder).astype(compute)
        context = jnp.einsum("bhqk,bkhd->bqhd", probs, split(v), precision=prec).astype(jnp.float32)
        return context.reshape(q.shape)

    def loss_fn(p, ids, mask, segments, labels):
        x = norm(p["word"][ids] + p["type"][segments] + p["position"][None], p, "emb_ln")
        adder = (1.0 - mask[:, None, None, :].astype(jnp.float32)) * -10000.0
        for n in range(c["layers"]):
            context = attend(dense(x, p, f"l{n}_q"), dense(x, p, f"l{n}_k"), dense(x, p, f"l{n}_v"), adder)
            x = norm(dense(context, p, f"l{n}_o") + x, p, f"l{n}_ln1")
            inner = jax.nn.gelu(dense(x, p, f"l{n}_in"), approximate=True)
            x = norm(dense(inner, p, f"l{n}_out") + x, p, f"l{n}_ln2")
        logits = dense(jnp.tanh(dense(x[:, 0], p, "pool")), p, "cls")
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), labels[:, None], 1))

    def adam(p, m, v, t, *batch_data):
        loss, g = jax.value_and_grad(loss_fn)(p, *batch_data)
        t = t + 1
        m = jax.tree_util.tree_map(lambda mi, gi: 0.9 * mi + 0.1 * gi, m, g)
        v = jax.tree_util.tree_map(lambda vi, gi: 0.999 * vi + 0.001 * gi * gi, v, g)
        scale = 1e-3 * jnp.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
        p = jax.tree_util.tree_map(lambda pi, mi, vi: pi - scale * mi / (jnp.sqrt(vi) + 1e-8), p, m, v)
        return p, m, v, t, loss

    train = jax.jit(adam, donate_argnums=(0, 1, 2))
    put = lambda a: jax.device_put(a, device)  # noqa: E731
    state = {"p": {k: put(a) for k, a in params.items()}, "m": {k: put(np.zeros_like(a)) for k, a in params.items()},
             "v": {k: put(np.zeros_like(a)) for k, a in params.items()}, "t": put(np.float32(0))}
    data = [put(a) for a in (ids, mask, segments, labels)]

    def step() -> float:
        state["p"], state["m"], state["v"], state["t"], loss = train(state["p"], state["m"], state["v"], state["t"], *data)
        return float(loss)
    return step


def torch_bert(batch: int, precision: str, platform: str, small: bool = False):
    """The same BERT training step in PyTorch (Adam; attention by scaled_dot_product_attention,
    which picks its fused kernels on a GPU)."""
    import torch
    import torch.nn.functional as F

    c = BERT_SMALL if small else BERT_BASE
    device = torch.device("cuda" if platform == "gpu" else "cpu")
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    params, ids, mask, segments, labels = _bert_data(c, batch)
    p = {k: torch.tensor(a, device=device, requires_grad=True) for k, a in params.items()}
    ids, mask, segments, labels = (torch.tensor(a, device=device, dtype=torch.long) for a in (ids, mask, segments, labels))
    heads, hidden = c["heads"], c["hidden"]
    opt = torch.optim.Adam(p.values(), lr=1e-3)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16")
    adder = ((1.0 - mask[:, None, None, :].float()) * -10000.0)

    def dense(x, name):
        return F.linear(x, p[f"{name}_w"].t(), p[f"{name}_b"])

    def norm(x, name):
        return F.layer_norm(x, (hidden,), p[f"{name}_g"], p[f"{name}_b"], eps=1e-12)

    def split(t):
        return t.reshape(t.shape[0], t.shape[1], heads, -1).transpose(1, 2)

    def step() -> float:
        opt.zero_grad(set_to_none=True)
        with autocast:
            x = norm(p["word"][ids] + p["type"][segments] + p["position"][None], "emb_ln")
            for n in range(c["layers"]):
                q, k, v = (split(dense(x, f"l{n}_{part}")) for part in "qkv")
                context = F.scaled_dot_product_attention(q, k, v, attn_mask=adder.to(q.dtype))
                x = norm(dense(context.transpose(1, 2).reshape(x.shape), f"l{n}_o") + x, f"l{n}_ln1")
                inner = F.gelu(dense(x, f"l{n}_in"), approximate="tanh")
                x = norm(dense(inner, f"l{n}_out") + x, f"l{n}_ln2")
            logits = dense(torch.tanh(dense(x[:, 0], "pool")), "cls")
            loss = F.cross_entropy(logits.float(), labels)
        loss.backward()
        opt.step()
        return loss.item()  # waits for the device
    return step
