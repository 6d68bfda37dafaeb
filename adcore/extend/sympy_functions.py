"""The base of the sympy functions an op plugin's `sympy` rules build. This module imports
sympy: import it only from a module the rules load through a `LazyModule`.

The symbolic backend compiles a derivative to NumPy code whose printer knows NumPy's
functions and calls of adcore ops (`ops.<name>(...)`), not scipy's or sympy's special
functions. An `OpCall` subclass is one op as a sympy function: it says its exact derivative
(`fdiff`), prints as a call of the op (so the compiled code keeps the op's accuracy and runs
on other backends' traced values too, as a symbolic Hessian needs), and, through
`elementary`, gives sympy a number at constant arguments (sympy compares constants in Max,
clip and where).
"""

from __future__ import annotations

import sympy as sp
from mpmath.libmp import prec_to_dps


class OpCall(sp.Function):
    """A sympy function printed to NumPy as a call of the adcore op named `op`.

    A subclass sets `op` and `nargs` and defines `fdiff(self, argindex=1)`, the derivative
    with respect to argument `argindex` (from 1), and `elementary()`, the same function in
    sympy's own terms (None: sympy cannot evaluate it at numbers)."""

    op = ""

    def _numpycode(self, printer) -> str:
        return f"ops.{self.op}({', '.join(printer._print(a) for a in self.args)})"

    def elementary(self) -> sp.Expr | None:
        """The same function in sympy's own terms, for numbers (None: not given)."""
        return None

    def _eval_evalf(self, prec):
        elementary = self.elementary()
        return None if elementary is None else elementary.evalf(prec_to_dps(prec))
