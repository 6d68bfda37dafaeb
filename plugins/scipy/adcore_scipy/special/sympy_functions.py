"""The scipy.special ops as sympy functions: each states its exact derivative (`fdiff`) and prints,
in the NumPy code the symbolic backend compiles, as a call of the op (adcore.extend's OpCall), so
the compiled code keeps SciPy's accuracy. This module imports sympy: the rules reach it through a
LazyModule. An argument with no derivative (an order, betainc's a) refuses in `fdiff`, as the
other backends' rules do (rules.refused).
"""

from __future__ import annotations

import sympy as sp
from mpmath.libmp import prec_to_dps

from adcore.extend.sympy_functions import OpCall
from adcore_scipy.special.rules import INTEGER_ORDER, NO_CLOSED_FORM, refused


def _refuse(op: str, arg: str, why: str = NO_CLOSED_FORM) -> sp.Expr:
    refused(op, arg, why)()  # raises MissingRuleError
    raise AssertionError("unreachable")


class _Unary(OpCall):
    nargs = 1

    @property
    def x(self) -> sp.Expr:
        return self.args[0]


class erf(_Unary):
    op = "erf"

    def fdiff(self, argindex=1):
        return 2 / sp.sqrt(sp.pi) * sp.exp(-(self.x**2))

    def elementary(self):
        return sp.erf(self.x)


class erfc(_Unary):
    op = "erfc"

    def fdiff(self, argindex=1):
        return -2 / sp.sqrt(sp.pi) * sp.exp(-(self.x**2))

    def elementary(self):
        return sp.erfc(self.x)


class erfinv(_Unary):
    op = "erfinv"

    def fdiff(self, argindex=1):
        return sp.sqrt(sp.pi) / 2 * sp.exp(self**2)

    def elementary(self):
        return sp.erfinv(self.x)


class erfcinv(_Unary):
    op = "erfcinv"

    def fdiff(self, argindex=1):
        return -sp.sqrt(sp.pi) / 2 * sp.exp(self**2)

    def elementary(self):
        return sp.erfcinv(self.x)


class gamma(_Unary):
    op = "gamma"

    def fdiff(self, argindex=1):
        return self * digamma(self.x)

    def elementary(self):
        return sp.gamma(self.x)


class gammaln(_Unary):
    op = "gammaln"

    def fdiff(self, argindex=1):
        return digamma(self.x)

    def elementary(self):
        return sp.loggamma(self.x)


class digamma(_Unary):
    op = "digamma"

    def fdiff(self, argindex=1):
        return polygamma(1, self.x)

    def elementary(self):
        return sp.digamma(self.x)


class polygamma(sp.Function):
    """polygamma(n, x) in sympy's (and scipy's) argument order; n is a fixed integer."""

    nargs = 2

    def fdiff(self, argindex=2):
        if argindex != 2:
            _refuse("polygamma", "n", INTEGER_ORDER)
        n, x = self.args
        return polygamma(n + 1, x)

    def _numpycode(self, printer) -> str:
        n, x = self.args
        return f"ops.polygamma({printer._print(x)}, n={int(n)})"

    def _eval_evalf(self, prec):  # sympy's polygamma gives zoo at a pole, where mpmath's raises
        return sp.polygamma(*self.args).evalf(prec_to_dps(prec))


class beta(OpCall):
    op = "beta"
    nargs = 2

    def fdiff(self, argindex=1):
        a, b = self.args
        return self * (digamma(self.args[argindex - 1]) - digamma(a + b))

    def elementary(self):
        return sp.beta(*self.args)


class betaln(OpCall):
    op = "betaln"
    nargs = 2

    def fdiff(self, argindex=1):
        a, b = self.args
        return digamma(self.args[argindex - 1]) - digamma(a + b)

    def elementary(self):
        return sp.log(sp.Abs(sp.beta(*self.args)))


class betainc(OpCall):
    op = "betainc"
    nargs = 3

    def fdiff(self, argindex=3):
        if argindex != 3:
            _refuse("betainc", "ab"[argindex - 1])
        a, b, x = self.args
        return sp.exp((a - 1) * sp.log(x) + (b - 1) * sp.log(1 - x) - betaln(a, b))

    def elementary(self):
        a, b, x = self.args
        return sp.betainc_regularized(a, b, 0, x)


class gammainc(OpCall):
    op = "gammainc"
    nargs = 2

    def fdiff(self, argindex=2):
        if argindex != 2:
            _refuse(self.op, "a")
        a, x = self.args
        sign = 1 if self.op == "gammainc" else -1
        return sign * sp.exp((a - 1) * sp.log(x) - x - gammaln(a))

    def elementary(self):
        a, x = self.args
        return sp.lowergamma(a, x) / sp.gamma(a)


class gammaincc(gammainc):
    op = "gammaincc"

    def elementary(self):
        a, x = self.args
        return sp.uppergamma(a, x) / sp.gamma(a)


class expit(_Unary):
    op = "expit"

    def fdiff(self, argindex=1):
        return self * expit(-self.x)  # expit (1 - expit), without 1 - 1 at large x

    def elementary(self):
        return 1 / (1 + sp.exp(-self.x))


class logit(_Unary):
    op = "logit"

    def fdiff(self, argindex=1):
        return 1 / (self.x * (1 - self.x))

    def elementary(self):
        return sp.log(self.x / (1 - self.x))


class xlogy(OpCall):
    op = "xlogy"
    nargs = 2

    def fdiff(self, argindex=1):
        x, y = self.args
        return sp.log(y) if argindex == 1 else x / y

    def elementary(self):
        x, y = self.args
        return x * sp.log(y)


class xlog1py(OpCall):
    op = "xlog1py"
    nargs = 2

    def fdiff(self, argindex=1):
        x, y = self.args
        return sp.log(1 + y) if argindex == 1 else x / (1 + y)

    def elementary(self):
        x, y = self.args
        return x * sp.log(1 + y)


# --- Bessel functions ---------------------------------------------------------------------
class i0(_Unary):
    op = "i0"

    def fdiff(self, argindex=1):
        return i1(self.x)

    def elementary(self):
        return sp.besseli(0, self.x)


class i1(_Unary):
    op = "i1"

    def fdiff(self, argindex=1):
        return (i0(self.x) + iv(2, self.x)) / 2

    def elementary(self):
        return sp.besseli(1, self.x)


class j0(_Unary):
    op = "j0"

    def fdiff(self, argindex=1):
        return -j1(self.x)

    def elementary(self):
        return sp.besselj(0, self.x)


class j1(_Unary):
    op = "j1"

    def fdiff(self, argindex=1):
        return (j0(self.x) - jv(2, self.x)) / 2

    def elementary(self):
        return sp.besselj(1, self.x)


class y0(_Unary):
    op = "y0"

    def fdiff(self, argindex=1):
        return -y1(self.x)

    def elementary(self):
        return sp.bessely(0, self.x)


class y1(_Unary):
    op = "y1"

    def fdiff(self, argindex=1):
        return (y0(self.x) - yn(2, self.x)) / 2

    def elementary(self):
        return sp.bessely(1, self.x)


class _Order(OpCall):
    """A Bessel function of (order, x); the order has no derivative here."""

    nargs = 2
    why = NO_CLOSED_FORM
    order = "v"

    def fdiff(self, argindex=2):
        if argindex != 2:
            _refuse(self.op, self.order, self.why)
        v, x = self.args
        return self.slope(v, x)


class iv(_Order):
    op = "iv"

    def slope(self, v, x):
        return (iv(v - 1, x) + iv(v + 1, x)) / 2

    def elementary(self):
        return sp.besseli(*self.args)


class ive(_Order):
    op = "ive"

    def slope(self, v, x):
        return (ive(v - 1, x) + ive(v + 1, x)) / 2 - sp.sign(x) * self

    def elementary(self):
        v, x = self.args
        return sp.besseli(v, x) * sp.exp(-sp.Abs(x))


class jv(_Order):
    op = "jv"

    def slope(self, v, x):
        return (jv(v - 1, x) - jv(v + 1, x)) / 2

    def elementary(self):
        return sp.besselj(*self.args)


class yn(_Order):
    op = "yn"
    why = INTEGER_ORDER
    order = "n"

    def slope(self, n, x):
        return (yn(n - 1, x) - yn(n + 1, x)) / 2

    def elementary(self):
        return sp.bessely(*self.args)
