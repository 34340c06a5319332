"""Activation gradients: ReluGrad, Relu6Grad, SigmoidGrad, TanhGrad, SoftplusGrad, RsqrtGrad,
SqrtGrad, ReciprocalGrad, InvGrad, EluGrad, SeluGrad, SoftsignGrad, LeakyReluGrad.

Binary elementwise ops in all but name: a third table beside elementwise.BINARY, registered by
the same generic rule (elementwise.register_binary). A row is
  TF op -> (lowering, NumPy kernel, dtypes it compiles for)
both over the op's two inputs in TF's order and in the evaluation order of TF's Eigen functors.
LeakyReluGrad, which reads an attribute, is written out like LeakyRelu.
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from .elementwise import SELU_ALPHA, SELU_SCALE, binary_infer, like, register_binary
from ..registry import register
from ..typesets import FLOAT


def _square(x):
    return hlo.multiply(x, x)


def _relu_grad(g, f):
    return hlo.select(hlo.compare("GT", f, like(f, 0)), g, like(g, 0))


def _relu6_grad(g, f):
    inside = hlo.binary("and", hlo.compare("GT", f, like(f, 0)), hlo.compare("LT", f, like(f, 6)))
    return hlo.select(inside, g, like(g, 0))


ACTIVATION_GRADS = {
    "ReluGrad": (_relu_grad, lambda g, f: np.where(f > 0, g, 0), FLOAT),
    "Relu6Grad": (_relu6_grad, lambda g, f: np.where((f > 0) & (f < 6), g, 0), FLOAT),
    "SigmoidGrad": (lambda y, dy: hlo.multiply(hlo.multiply(dy, y), hlo.subtract(like(y, 1), y)),
                    lambda y, dy: dy * y * (1 - y), FLOAT),
    "TanhGrad": (lambda y, dy: hlo.multiply(dy, hlo.subtract(like(y, 1), hlo.multiply(y, y))),
                 lambda y, dy: dy * (1 - y * y), FLOAT),
    "SoftplusGrad": (lambda g, f: hlo.divide(g, hlo.add(hlo.unary("exponential", hlo.unary("negate", f)), like(f, 1))),
                     lambda g, f: g / (np.exp(-f) + 1), FLOAT),
    "RsqrtGrad": (lambda y, dy: hlo.multiply(hlo.multiply(like(y, -0.5), hlo.multiply(dy, y)), hlo.multiply(y, y)),
                  lambda y, dy: -0.5 * (dy * y) * (y * y), FLOAT),
    "SqrtGrad": (lambda y, dy: hlo.divide(hlo.multiply(like(dy, 0.5), dy), y),
                 lambda y, dy: 0.5 * dy / y, FLOAT),
    "ReciprocalGrad": (lambda y, dy: hlo.multiply(hlo.multiply(hlo.unary("negate", dy), y), y),
                       lambda y, dy: -dy * y * y, FLOAT),
    "InvGrad": (lambda y, dy: hlo.multiply(hlo.multiply(hlo.unary("negate", dy), y), y),
                lambda y, dy: -dy * y * y, FLOAT),
    "EluGrad": (lambda g, y: hlo.select(hlo.compare("LT", y, like(y, 0)), hlo.multiply(g, hlo.add(y, like(y, 1))), g),
                lambda g, y: np.where(y < 0, g * (y + 1), g), FLOAT),
    "SeluGrad": (lambda g, y: hlo.select(hlo.compare("LT", y, like(y, 0)),
                                         hlo.multiply(g, hlo.add(y, like(y, SELU_SCALE * SELU_ALPHA))),
                                         hlo.multiply(g, like(g, SELU_SCALE))),
                 lambda g, y: np.where(y < 0, g * (y + SELU_SCALE * SELU_ALPHA), g * SELU_SCALE), FLOAT),
    "SoftsignGrad": (lambda g, f: hlo.divide(g, _square(hlo.add(like(f, 1), hlo.unary("abs", f)))),
                     lambda g, f: g / np.square(1 + np.abs(f)), FLOAT),
}


register_binary(ACTIVATION_GRADS)


def _leaky_relu_grad_lower(ctx, g, f):
    shape = ctx.out().shape
    g, f = hlo.broadcast_to(g, shape), hlo.broadcast_to(f, shape)
    return hlo.select(hlo.compare("GT", f, like(f, 0)), g, hlo.multiply(g, like(g, ctx.attr("alpha", 0.2))))


register("LeakyReluGrad", infer=binary_infer(), attrs=("T", "alpha"), dtypes=FLOAT, lower=_leaky_relu_grad_lower,
         kernel=lambda ctx, g, f: np.where(f > 0, g, g * np.asarray(ctx.attr("alpha", 0.2), g.dtype))
         .astype(ctx.out().dtype))
