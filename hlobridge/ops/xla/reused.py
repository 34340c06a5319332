"""Xla* ops that are another op's rule with fixed attributes: XlaIf and XlaWhile are
StatelessIf and StatelessWhile (ops/control/flow.py: their branches and bodies lower through the
function library), XlaSelfAdjointEig is SelfAdjointEigV2 with its vectors, XlaSvd is Svd with
full U and V (ops/linalg/factor.py). The registry entries are shared, not copied, so the two
ops cannot drift.

- XlaIf/XlaWhile: tf2xla's own forms (written by tf2xla's Python `xla.while_loop`, and by the
  TPU bridge); XLA requires XlaIf's predicate to be a scalar bool, which If's rule accepts.
- XlaSelfAdjointEig(a; lower, max_iter, epsilon): eigenvalues ascending, as XLA's Jacobi
  solver returns them; `lower` False reads the upper triangle (the rule is applied to the
  transposed matrix). XLA stops after `max_iter` sweeps or at `epsilon`; hlobridge's Jacobi
  sweeps run to its own convergence test, so a max_iter too small to converge gives a more exact
  answer than XLA's.
- XlaSvd(a; max_iter, epsilon, precision_config): s descending, full U [m, m] and V [n, n];
  the same note on convergence. Singular vectors are unique up to sign (and, for repeated
  values, a rotation): compare U diag(s) V^T, not the vectors.
"""

from __future__ import annotations

import numpy as np

from ..linalg.blocks import swap_last
from ..registry import _REQUIRED, lookup, register


class _Fixed:
    """An OpContext whose attributes `fixed` override (or add to) the node's."""

    def __init__(self, ctx, fixed: dict):
        self._ctx, self._fixed = ctx, fixed

    def attr(self, name, default=_REQUIRED):
        return self._fixed[name] if name in self._fixed else self._ctx.attr(name, default)

    def __getattr__(self, name):
        return getattr(self._ctx, name)


def _with(rule, fixed: dict, transform=None):
    """`rule` of another op, its ctx showing the `fixed` attributes; `transform(ctx, args)` may
    rewrite the operands first (lowering and kernel)."""
    def wrapped(ctx, *args):
        if transform is not None:
            args = transform(ctx, args)
        return rule(_Fixed(ctx, fixed), *args)
    return wrapped


_if, _while = lookup("StatelessIf"), lookup("StatelessWhile")
register("XlaIf", infer=_if.infer, lower=_if.lower, kernel=_if.kernel,
         attrs=("Tcond", "then_branch", "else_branch", "Tin", "Tout"))
register("XlaWhile", infer=_while.infer, lower=_while.lower, kernel=_while.kernel, attrs=("T", "cond", "body"))


def _upper_as_lower(lowering: bool):
    """XlaSelfAdjointEig with lower=False: the transposed matrix's lower triangle is a's upper one."""
    def transform(ctx, args):
        if ctx.attr("lower"):
            return args
        (a,) = args
        return (swap_last(a),) if lowering else (np.swapaxes(a, -1, -2),)
    return transform


_eig, _svd = lookup("SelfAdjointEigV2"), lookup("Svd")
_EIG = {"compute_v": True}
register("XlaSelfAdjointEig", infer=_with(_eig.infer, _EIG), lower=_with(_eig.lower, _EIG, _upper_as_lower(True)),
         kernel=_with(_eig.kernel, _EIG, _upper_as_lower(False)), attrs=("lower", "max_iter", "epsilon", "T"),
         dtypes=_eig.dtypes, output_args=("w", "v"))
_SVD = {"compute_uv": True, "full_matrices": True}
register("XlaSvd", infer=_with(_svd.infer, _SVD), lower=_with(_svd.lower, _SVD), kernel=_with(_svd.kernel, _SVD),
         attrs=("max_iter", "epsilon", "precision_config", "T"), dtypes=_svd.dtypes, output_args=("s", "u", "v"))
