"""Sympy functions for the special ops: each states its exact derivative (`fdiff`) and
prints, in the NumPy code the symbolic backend compiles, as a call of the adcore op.

Calling the op from the compiled code keeps scipy's accuracy and powm1's (x**y - 1 cancels),
and lets that code run on other backends' traced values too (a Hessian differentiates
it again). sympy's own functions would not print: the backend's printer knows
NumPy, not scipy.
"""

from __future__ import annotations

import sympy as sp
from mpmath.libmp import prec_to_dps

from adcore.extend.sympy_functions import OpCall
from adcore_special.vjps import ASYMPTOTIC_FACTORS, ASYMPTOTIC_FROM


class erfcx(OpCall):
    op = "erfcx"
    nargs = 1

    def fdiff(self, argindex=1):
        # as the rules' erfcx_slope: the closed form, which cancels as x grows, up to ASYMPTOTIC_FROM
        (x,) = self.args
        far = x >= ASYMPTOTIC_FROM
        z = 1 / (2 * at_least_asymptotic(x) ** 2)
        series = sp.S.One
        for k in ASYMPTOTIC_FACTORS:
            series = 1 - k * z * series
        two_over_sqrt_pi = 2 / sp.sqrt(sp.pi)
        return sp.Piecewise((-two_over_sqrt_pi * z * series, far), (2 * x * self - two_over_sqrt_pi, True))

    def elementary(self) -> sp.Expr:
        (x,) = self.args
        return sp.exp(x**2) * sp.erfc(x)


class at_least_asymptotic(sp.Function):
    """x where x >= ASYMPTOTIC_FROM, else ASYMPTOTIC_FROM: what erfcx's series is evaluated at, so
    that the branch not taken has no 1/0 (a Piecewise would be folded into one where both are)."""

    nargs = 1

    @classmethod
    def eval(cls, x):
        if x.is_number:
            return x if x >= ASYMPTOTIC_FROM else sp.Float(ASYMPTOTIC_FROM)

    def fdiff(self, argindex=1):
        return sp.Piecewise((1, self.args[0] >= ASYMPTOTIC_FROM), (0, True))

    def _numpycode(self, printer) -> str:
        x, bound = printer._print(self.args[0]), repr(ASYMPTOTIC_FROM)
        return f"numpy.where(numpy.greater_equal({x}, {bound}), {x}, {bound})"


class loggamma(OpCall):
    op = "loggamma"
    nargs = 1

    def fdiff(self, argindex=1):
        return psi(0, self.args[0])

    def elementary(self) -> sp.Expr:
        return sp.loggamma(*self.args)


class psi(sp.Function):
    """psi(n, x) in sympy's (and scipy's polygamma's) argument order; n is a fixed integer."""

    nargs = 2

    def fdiff(self, argindex=2):
        if argindex != 2:  # n is a param, never a variable
            raise sp.ArgumentIndexError(self, argindex)
        n, x = self.args
        return psi(n + 1, x)

    def _numpycode(self, printer) -> str:
        n, x = self.args
        return f"ops.psi({printer._print(x)}, n={int(n)})"

    def _eval_evalf(self, prec):  # sympy's polygamma gives zoo at a pole, where mpmath's raises
        return sp.polygamma(*self.args).evalf(prec_to_dps(prec))


class powm1(OpCall):
    op = "powm1"
    nargs = 2

    def fdiff(self, argindex=1):
        # x**y - 1 differentiated as power is (the vjp rules' power_by_base, power_by_exponent),
        # in terms of powm1 itself. The formulas y (ans + 1) / x and (ans + 1) log(x) are 0/0 or
        # 0 * -inf = nan at x = 0, where the limits exist: y x**(y-1) is written with
        # powm1(x, y - 1) + 1 (1 at x = 0, y = 1), and is 0 at x = y = 0 (x**0 is the constant 1;
        # elsewhere the formula is kept, as d/dy of it at y = 0 is 1/x); d/dy is 0 at x = 0 < y
        # (0**y is 0 near y). log(x) stays nan for x < 0, as NumPy's.
        x, y = self.args
        if argindex == 1:
            return sp.Piecewise((0, sp.Eq(y, 0) & sp.Eq(x, 0)), (y * (powm1(x, y - 1) + 1), True))
        log_x = sp.log(x, evaluate=False)  # nan for x < 0 as NumPy computes it, not log|x| + i pi
        return sp.Piecewise((0, sp.Eq(x, 0) & (y > 0)), ((self + 1) * log_x, True))

    def elementary(self) -> sp.Expr:
        return self.args[0] ** self.args[1] - 1
