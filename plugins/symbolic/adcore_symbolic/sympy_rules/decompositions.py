"""Sympy rules of adcore/ops/decompositions.py: norm; the decompositions, pinv and lstsq refuse.

norm: vector ords as sums of |x|**p (None, 2 and 'fro' as sqrt(sum x**2), whose derivative at
x = 0 is 0 here too: see _safe_sqrt), inf/-inf and the matrix ±1/±inf through amax/amin (ties
split), ord 0 as a count of Piecewise steps; the singular-value norms ('nuc', ±2) refuse. eigh,
eigvalsh, svd and svdvals have no sympy form for a symbolic matrix, and the closed forms of qr
(Gram-Schmidt), pinv and lstsq ((A^T A)^-1 A^T) pass the symbolic backend's expression budget
from 3x3 on: they have no rule (NO_SYMPY_FORM says why), so the backend refuses them with
MissingRuleError, which conformance counts as unsupported; so do norm's singular-value ords.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from adcore.errors import MissingRuleError
from adcore.extend import each, reduce_with
from adcore.ops.decompositions import norm_axes
from adcore_symbolic.sympy_rules.table import NO_SYMPY_FORM, defsympy, fn, sp


def _refuse(op: str, why: str) -> MissingRuleError:
    return MissingRuleError(
        f"op {op!r} has no sympy form on backend 'symbolic': {why}. Differentiate it with "
        "backend 'reverse', 'forward' or 'numeric'."
    )


@functools.cache
def _safe_sqrt() -> Any:
    """sqrt whose derivative is 0 where its argument (a sum of squares) is 0: the 2-norm's
    subgradient 0 at x = 0 (docs/conventions.md), where 1 / (2 sqrt(0)) would be inf and nan."""

    class safe_sqrt(sp.Function):
        nargs = 1

        def fdiff(self, argindex: int = 1) -> Any:
            s = self.args[0]
            return sp.Piecewise((0, sp.Eq(s, 0)), (1 / (2 * sp.sqrt(s)), True))

        def _eval_evalf(self, prec: int) -> Any:
            return sp.sqrt(self.args[0])._eval_evalf(prec)

        def _numpycode(self, printer: Any) -> str:
            return printer._print(sp.sqrt(self.args[0]))

        _lambdacode = _numpycode

    return safe_sqrt


def _vector_norm(ord: Any):
    def norm(*xs: Any) -> Any:
        if ord in (None, 2, "fro"):
            return _safe_sqrt()(sp.Add(*(x * x for x in xs)))
        if ord == 0:  # the count of nonzero entries, derivative 0
            return sp.Add(*(sp.Piecewise((0, sp.Eq(x, 0)), (1, True)) for x in xs))
        if ord == 1:
            return sp.Add(*(sp.Abs(x) for x in xs))
        if ord == np.inf:
            return fn.amax(*(sp.Abs(x) for x in xs))
        if ord == -np.inf:
            return fn.amin(*(sp.Abs(x) for x in xs))
        p = sp.nsimplify(ord)
        return sp.Add(*(sp.Abs(x) ** p for x in xs)) ** (1 / p)

    return norm


def _norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    x = np.asarray(x, dtype=object)
    axes, matrix = norm_axes(x, ord, axis)
    if not matrix:
        return reduce_with(_vector_norm(ord), x, axes, keepdims)
    if ord in ("nuc", 2, -2):
        raise _refuse("norm", f"ord={ord!r} is a function of the singular values, which sympy cannot express")
    rows, columns = axes
    along = rows if ord in (1, -1) else columns  # column sums for ±1, row sums for ±inf
    sums = reduce_with(sp.Add, each(sp.Abs, x), along, keepdims=True)
    extreme = fn.amax if ord > 0 else fn.amin
    return reduce_with(extreme, sums, axes, keepdims)


_NO_SPECTRUM = "sympy has no eigen- or singular value decomposition of a symbolic matrix"
_TOO_LARGE = "its closed form (Gram-Schmidt, (A^T A)^-1 A^T) outgrows the expression budget past 2x2"

# fmt: off
defsympy("norm",           _norm)
# fmt: on
NO_SYMPY_FORM.update(
    {
        "eigh_packed": _NO_SPECTRUM,
        "eigvalsh": _NO_SPECTRUM,
        "svd_packed": _NO_SPECTRUM,
        "svdvals": _NO_SPECTRUM,
        "qr_packed": _TOO_LARGE,
        "pinv": _TOO_LARGE,
        "lstsq_solution": _TOO_LARGE,
    }
)
