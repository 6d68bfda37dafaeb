"""Sympy functions for the ops sympy has no exact match for, each with the derivative that
docs/conventions.md gives the op and NumPy code that calls the adcore op itself.

Calling the op keeps the compiled derivative numerically stable (sigmoid at -1e3) and lets
it run on other backends' traced values too (a Hessian differentiates it again).
`floor` and `round` have zero derivative, `amax`/`amin` split it among ties, and
`stop_gradient` passes its value but no derivative. expm1 and log1p come from
sympy.codegen, which prints them as numpy.expm1 and numpy.log1p.
"""

from __future__ import annotations

import functools

import sympy as sp
from mpmath.libmp import prec_to_dps
from sympy.codegen.cfunctions import expm1, log1p

from adcore.extend.sympy_functions import OpCall

__all__ = [
    "Round",
    "amax",
    "amin",
    "cholesky_pivot",
    "expm1",
    "floor",
    "log1p",
    "logabs",
    "logsumexp",
    "nonsingular",
    "nonsingular_in",
    "power",
    "sigmoid",
    "sign",
    "softplus",
    "stop_gradient",
]


class sigmoid(OpCall):
    op = "sigmoid"
    nargs = 1

    def fdiff(self, argindex=1):
        return self * (1 - self)

    def elementary(self) -> sp.Expr:
        return 1 / (1 + sp.exp(-self.args[0]))


class softplus(OpCall):
    op = "softplus"
    nargs = 1

    def fdiff(self, argindex=1):
        return sigmoid(self.args[0])

    def elementary(self) -> sp.Expr:
        return sp.log(1 + sp.exp(self.args[0]))


class power(OpCall):
    """x**y. sympy's own derivatives are 0 * inf = nan where x**y is flat: y x**(y-1) at
    x = y = 0 (x**0 is 1) and x**y log(x) at x = 0 < y. Elsewhere they are the same as
    sympy's, so nan or -inf where no derivative exists."""

    op = "power"
    nargs = 2

    @classmethod
    def eval(cls, x, y):
        if y.is_number and y.is_zero:  # the constant 1 (unevaluated, x**0.0 would differentiate to 0.0/x)
            return sp.S.One
        if y.is_number or (x.is_number and x.is_positive):  # sympy's Pow is exact there
            return sp.Pow(x, y)

    def fdiff(self, argindex=1):
        x, y = self.args
        if argindex == 1:
            return sp.Piecewise((0, sp.Eq(y, 0) & sp.Eq(x, 0)), (y * power(x, y - 1), True))
        log_x = sp.log(x, evaluate=False)  # nan for x < 0 as NumPy computes it, not log|x| + i pi
        return sp.Piecewise((0, sp.Eq(x, 0) & (y > 0)), (self * log_x, True))

    def elementary(self) -> sp.Expr:
        return sp.Pow(*self.args)


class cholesky_pivot(sp.Function):
    """sqrt of a Cholesky pivot: the compiled code raises LinearAlgebraError where the pivot is not
    positive (the matrix is not positive definite), as np.linalg.cholesky does, instead of nan."""

    nargs = 1

    def fdiff(self, argindex=1):
        return 1 / (2 * self)

    def _numpycode(self, printer) -> str:
        return f"checks.cholesky_pivot({printer._print(self.args[0])})"

    def _eval_evalf(self, prec):
        return sp.sqrt(self.args[0]).evalf(prec_to_dps(prec))


class stop_gradient(OpCall):
    op = "stop_gradient"
    nargs = 1

    @classmethod
    def eval(cls, x):
        if isinstance(x, stop_gradient):
            return x

    def fdiff(self, argindex=1):
        return sp.S.Zero

    def elementary(self) -> sp.Expr:
        return self.args[0]


class Round(OpCall):
    """round(x, decimals), half to even as NumPy rounds."""

    op = "round"
    nargs = 2

    def fdiff(self, argindex=1):
        return sp.S.Zero


class floor(sp.floor):
    """sympy's floor with the derivative 0 (sympy leaves it unevaluated)."""

    def fdiff(self, argindex=1):
        return sp.S.Zero


class sign(sp.sign):
    """sympy's sign with the derivative 0 (sympy's is 2 DiracDelta for a real argument, and
    none at all for one it cannot tell is real, such as acos(x))."""

    def _eval_derivative(self, x):
        return sp.S.Zero


class logsumexp(sp.Function):
    """log(sum(exp(args))); its derivative exp(arg - logsumexp) never overflows."""

    @classmethod
    def eval(cls, *args):
        if len(args) == 1:
            return args[0]

    def fdiff(self, argindex=1):
        return sp.exp(self.args[argindex - 1] - self)

    def _eval_evalf(self, prec):
        return sp.log(sp.Add(*map(sp.exp, self.args))).evalf(prec_to_dps(prec))

    def _numpycode(self, printer) -> str:
        return f"ops.logsumexp(ops.stack([{', '.join(printer._print(a) for a in self.args)}]), axis=0)"


class _TiedExtremum(sp.Function):
    """The max (min) of the args, whose derivative is split equally among the args equal to it."""

    numpy = ""
    extremum = sp.Max

    @classmethod
    def eval(cls, *args):
        unique = list(dict.fromkeys(args))  # max(x, x, y) is max(x, y), and so are the derivatives' sums
        if len(unique) == 1:
            return unique[0]
        if all(a.is_number for a in args):
            return cls.extremum(*args)
        if len(unique) < len(args):
            return cls(*unique)

    def fdiff(self, argindex=1):
        # unevaluated: canonicalizing each Eq and Piecewise costs ms, n^2 of them for n args
        ties = [
            sp.Piecewise((1, sp.Eq(a, self, evaluate=False)), (0, True), evaluate=False) for a in self.args
        ]
        return ties[argindex - 1] / sp.Add(*ties)

    def _numpycode(self, printer) -> str:
        code = printer._print(self.args[0])
        for a in self.args[1:]:
            code = f"numpy.{self.numpy}({code}, {printer._print(a)})"
        return code


class amax(_TiedExtremum):
    numpy = "maximum"
    extremum = sp.Max


class amin(_TiedExtremum):
    numpy = "minimum"
    extremum = sp.Min


class nonsingular(sp.Function):
    """d, a determinant or pivot that the sympy forms of the op `op` divide by: the compiled code
    raises LinearAlgebraError where d is 0, as NumPy's LU refuses the matrix ("Singular matrix"),
    instead of inf or nan (a nearly singular matrix gives huge values, as NumPy does). The
    derivative is 1: d's own. One subclass per op (nonsingular_in), so the error names it."""

    nargs = 1
    op = ""

    @classmethod
    def eval(cls, d):
        if d.is_number and d.is_finite and d.is_nonzero:  # nothing to check at run time
            return d

    def fdiff(self, argindex=1):
        return sp.S.One

    def _numpycode(self, printer) -> str:
        return f"checks.nonsingular({printer._print(self.args[0])}, {self.op!r})"

    def _eval_evalf(self, prec):
        return self.args[0].evalf(prec_to_dps(prec))


@functools.cache
def nonsingular_in(op: str) -> type[nonsingular]:
    """The nonsingular function whose check names the op `op`."""
    return type(f"nonsingular_{op}", (nonsingular,), {"op": op})


class logabs(sp.Function):
    """log|d| of a determinant d: -inf where d is 0, as np.linalg.slogdet gives, while its
    derivative 1/d raises LinearAlgebraError there (log|det| = -inf has no derivative)."""

    nargs = 1

    def fdiff(self, argindex=1):
        return 1 / nonsingular_in("logabsdet")(self.args[0])

    def _numpycode(self, printer) -> str:
        return printer._print(sp.log(sp.Abs(self.args[0])))

    def _eval_evalf(self, prec):
        return sp.log(sp.Abs(self.args[0])).evalf(prec_to_dps(prec))
