"""Sympy rules of adcore/ops/decompositions.py and norms.py: norm; the decompositions, pinv and lstsq refuse.

norm: vector ords as sums of |x|**p (None, 2 and 'fro' as sqrt(sum x**2)) whose derivatives at 0
keep reverse's and forward's conventions (_norm_functions), inf/-inf and the matrix ±1/±inf through
amax/amin (ties split), ord 0 as a count of Piecewise steps; the singular-value norms ('nuc', ±2)
refuse. eigh, eigvalsh, svd and svdvals have no sympy form for a symbolic matrix, and the closed
forms of qr (Gram-Schmidt), pinv and lstsq ((A^T A)^-1 A^T) pass the symbolic backend's expression
budget from 3x3 on: they have no rule (NO_SYMPY_FORM says why), so the backend refuses them with
MissingRuleError, which conformance counts as unsupported; so do norm's singular-value ords.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from adcore.errors import MissingRuleError
from adcore.extend import each, reduce_with
from adcore.ops.norms import norm_axes
from adcore_symbolic.sympy_rules.table import NO_SYMPY_FORM, defsympy, fn, sp


def _refuse(op: str, why: str) -> MissingRuleError:
    return MissingRuleError(
        f"op {op!r} has no sympy form on backend 'symbolic': {why}. Differentiate it with "
        "backend 'reverse', 'forward' or 'numeric'."
    )


@functools.cache
def _norm_functions() -> Any:
    """sympy functions for the p-norm (sum |x|**p)**(1/p) whose derivatives keep adcore's conventions
    (docs/conventions.md, norm), where sympy's own would give nan or a plausible 0: the gradient at
    x = 0 is 0 (a subgradient), with no second derivative there (the compiled code raises
    InvalidValueError, as reverse and forward do); |x|**p with p < 1 has no derivative at a zero
    entry, and for 1 < p < 2 no second one (an infinite slope at 0)."""
    from mpmath.libmp import prec_to_dps

    def nonzero(why: str) -> Any:
        """x, checked nonzero at run time where a derivative of the norm divides by it."""

        def code(self: Any, printer: Any) -> str:
            return f"checks.norm_nonzero({printer._print(self.args[0])}, {why!r})"

        return type(
            f"norm_nonzero_{abs(hash(why)) % 10**6}",
            (sp.Function,),
            {
                "nargs": 1,
                "fdiff": lambda self, argindex=1: sp.S.One,
                "_numpycode": code,
                "_lambdacode": code,
                "_eval_evalf": lambda self, prec: self.args[0].evalf(prec_to_dps(prec)),
            },
        )

    at_zero = nonzero("no second derivative at x = 0 (its gradient there is the subgradient 0)")
    at_entry = nonzero("no derivative of |x|**q with q < 1 at a zero entry (an infinite slope at 0)")

    class _Printed(sp.Function):
        def _numpycode(self, printer: Any) -> str:
            return printer._print(self.elementary())

        _lambdacode = _numpycode

        def _eval_evalf(self, prec: int) -> Any:
            return self.elementary().evalf(prec_to_dps(prec))

    class abs_power(_Printed):
        """|x|**p."""

        nargs = 2

        def elementary(self) -> Any:
            return sp.Abs(self.args[0]) ** self.args[1]

        def fdiff(self, argindex: int = 1) -> Any:
            x, p = self.args
            return p * signed_power(x if p >= 1 else at_entry(x), p - 1)

    class signed_power(_Printed):
        """sign(x) |x|**q, the derivative of |x|**(q+1) over q+1 (checks.norm_signed_power: the
        compiled gradient refuses what it cannot give, also to an outer derivative)."""

        nargs = 2

        def elementary(self) -> Any:
            return sp.sign(self.args[0]) * sp.Abs(self.args[0]) ** self.args[1]

        def _numpycode(self, printer: Any) -> str:
            x, q = (printer._print(a) for a in self.args)
            return f"checks.norm_signed_power({x}, {q})"

        _lambdacode = _numpycode

        def fdiff(self, argindex: int = 1) -> Any:
            x, q = self.args
            return q * abs_power(x if q >= 1 else at_entry(x), q - 1)

    class root_slope(_Printed):
        """d s**(1/p) / ds, 0 at s = 0 (the subgradient there); its own derivative refuses s = 0."""

        nargs = 2

        def elementary(self) -> Any:
            s, p = self.args
            return sp.Piecewise((0, sp.Eq(s, 0)), (s ** (1 / p - 1) / p, True))

        def _numpycode(self, printer: Any) -> str:
            s, p = (printer._print(a) for a in self.args)
            return f"checks.norm_root_slope({s}, {p})"

        _lambdacode = _numpycode

        def fdiff(self, argindex: int = 1) -> Any:
            s, p = self.args
            return (1 / p) * (1 / p - 1) * at_zero(s) ** (1 / p - 2)

    class p_root(_Printed):
        """s**(1/p) of the sum s of |x|**p."""

        nargs = 2

        def elementary(self) -> Any:
            return self.args[0] ** (1 / self.args[1])

        def fdiff(self, argindex: int = 1) -> Any:
            return root_slope(*self.args)

    return abs_power, p_root


def _vector_norm(ord: Any):
    def norm(*xs: Any) -> Any:
        if len(xs) == 1 and ord != 0:
            return sp.Abs(xs[0])  # any ord's norm of one entry: abs, whose conventions hold at 0
        abs_power, p_root = _norm_functions()
        if ord in (None, 2, "fro"):
            return p_root(sp.Add(*(x * x for x in xs)), sp.Integer(2))
        if ord == 0:  # the count of nonzero entries, derivative 0
            return sp.Add(*(sp.Piecewise((0, sp.Eq(x, 0)), (1, True)) for x in xs))
        if ord == 1:
            return sp.Add(*(sp.Abs(x) for x in xs))
        if ord == np.inf:
            return fn.amax(*(sp.Abs(x) for x in xs))
        if ord == -np.inf:
            return fn.amin(*(sp.Abs(x) for x in xs))
        p = sp.nsimplify(ord)
        return p_root(sp.Add(*(abs_power(x, p) for x in xs)), p)

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
        "lstsq_residuals": _TOO_LARGE,
        "lstsq_singular_values": _NO_SPECTRUM,
    }
)
