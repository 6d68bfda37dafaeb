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


class erfcx(OpCall):
    op = "erfcx"
    nargs = 1

    def fdiff(self, argindex=1):
        (x,) = self.args
        return 2 * x * self - 2 / sp.sqrt(sp.pi)

    def elementary(self) -> sp.Expr:
        (x,) = self.args
        return sp.exp(x**2) * sp.erfc(x)


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
        # in terms of powm1 itself, x**y = powm1 + 1, so the derivative keeps its accuracy
        x, y = self.args
        return y * (self + 1) / x if argindex == 1 else (self + 1) * sp.log(x)

    def elementary(self) -> sp.Expr:
        return self.args[0] ** self.args[1] - 1
