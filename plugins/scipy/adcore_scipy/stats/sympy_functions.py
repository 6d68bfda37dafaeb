"""Sympy functions for the scipy.stats ops (imported through a LazyModule: this module imports sympy).

Each states its exact derivative and prints, in the code the symbolic backend compiles, as a
call of its op, which keeps SciPy's accuracy in the tails.
"""

from __future__ import annotations

import sympy as sp

from adcore.extend.sympy_functions import OpCall


class log_ndtr(OpCall):
    """log Phi(x); its derivative phi(x) / Phi(x) is written with itself, finite far left."""

    op = "log_ndtr"
    nargs = 1

    def fdiff(self, argindex=1):
        (x,) = self.args
        return sp.exp(-(x**2) / 2 - sp.log(2 * sp.pi) / 2 - self)

    def elementary(self) -> sp.Expr:
        return sp.log(sp.erfc(-self.args[0] / sp.sqrt(2)) / 2)


class stdtr(OpCall):
    """Student's t CDF stdtr(df, t): d/dt is the density; d/d df has no closed form (refused)."""

    op = "stdtr"
    nargs = 2

    def fdiff(self, argindex=2):
        df, t = self.args
        if argindex == 1:
            from adcore_scipy.stats.rules import no_closed_form

            raise no_closed_form("stdtr", "df")
        log_c = sp.loggamma((df + 1) / 2) - sp.loggamma(df / 2) - sp.log(df * sp.pi) / 2
        return sp.exp(log_c) * (1 + t**2 / df) ** (-(df + 1) / 2)
