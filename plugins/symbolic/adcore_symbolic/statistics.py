"""Sympy functions for the order statistics, spreads and NaN-skipping sums of
adcore/ops/reductions.py and cumulative.py (sort, median, quantile, std, nansum, nanmean),
each with the derivative docs/conventions.md gives the op and NumPy code that also runs on
adcore's traced values (a Hessian differentiates the compiled code again).

`order_statistic(k, *xs)` is the k-th smallest of xs; its derivative by x_i is 1 where x_i's
stable rank (the number of smaller values, plus the equal ones before it) is k: ties follow
the stable sort, as the other backends' rules. `std_root(v)` is sqrt(v) with derivative 0 at
v = 0 (std of equal values). `skip_nan(x)` is x with NaN read as 0, whose derivative is 0 there.
"""

from __future__ import annotations

import sympy as sp

from adcore.extend.sympy_functions import OpCall

__all__ = ["in_slot", "is_number", "order_statistic", "skip_nan", "std_root", "variance"]


class in_slot(sp.Function):
    """1 where args[2 + i]'s stable rank among args[2:] is k (args: k, i, *xs), else 0."""

    step = True  # where it is 0 the chain rule selects 0 (program._selected)

    def fdiff(self, argindex=1):
        return sp.S.Zero

    def _numpycode(self, printer) -> str:
        k, i = int(self.args[0]), int(self.args[1])
        xs = [printer._print(a) for a in self.args[2:]]
        # each comparison through numpy.where, so that the code also runs on symbolic's own
        # traced values, whose comparisons are sympy booleans (a Hessian by symbolic)
        counted = [f"numpy.where(numpy.less({x}, {xs[i]}), 1.0, 0.0)" for x in xs]
        counted += [f"numpy.where(numpy.equal({x}, {xs[i]}), 1.0, 0.0)" for x in xs[:i]]
        rank = " + ".join(counted)
        return f"numpy.where(numpy.equal({rank}, {k}), 1.0, 0.0)"


class order_statistic(sp.Function):
    """The k-th smallest of the args after k (args: k, *xs)."""

    @classmethod
    def eval(cls, k, *xs):
        if len(xs) == 1:
            return xs[0]
        if all(x.is_number for x in xs):
            return sorted(xs, key=float)[int(k)]

    def fdiff(self, argindex=1):
        if argindex == 1:
            return sp.S.Zero
        return in_slot(self.args[0], argindex - 2, *self.args[1:])

    def _numpycode(self, printer) -> str:
        xs = ", ".join(printer._print(a) for a in self.args[1:])
        return f"ops.sort(ops.stack([{xs}]), axis=0)[{int(self.args[0])}]"


class std_root(OpCall):
    """sqrt(v), whose derivative is 0 at v = 0, where std has a kink (all values equal)."""

    op = "sqrt"
    nargs = 1

    def fdiff(self, argindex=1):
        # 1 / (2 sqrt v) where v != 0, 0 where v = 0; the denominator is kept off 0 there, since
        # the compiled code computes both branches and 1/0 would warn
        zero = sp.Piecewise((1, sp.Eq(self.args[0], 0)), (0, True))
        return (1 - zero) / (2 * self + zero)

    def elementary(self) -> sp.Expr:
        return sp.sqrt(self.args[0])


class is_number(sp.Function):
    """1 where x is not NaN, 0 where it is: derivative 0."""

    nargs = 1

    step = True  # where it is 0 the chain rule selects 0 (program._selected)

    def fdiff(self, argindex=1):
        return sp.S.Zero

    def _numpycode(self, printer) -> str:
        return f"numpy.where(numpy.isnan({printer._print(self.args[0])}), 0.0, 1.0)"


class skip_nan(sp.Function):
    """x, read as 0 where it is NaN (where its derivative is 0 too)."""

    nargs = 1

    def fdiff(self, argindex=1):
        return is_number(self.args[0])

    def _numpycode(self, printer) -> str:
        x = printer._print(self.args[0])
        return f"numpy.where(numpy.isnan({x}), 0.0, {x})"


class variance(sp.Function):
    """The variance of the args after ddof (args: ddof, *xs), dividing by n - ddof: one node
    with a derivative of n terms, where (x - mean)**2 summed would repeat the mean n times."""

    def fdiff(self, argindex=1):
        if argindex == 1:
            return sp.S.Zero
        ddof, xs = self.args[0], self.args[1:]
        return 2 * (xs[argindex - 2] - sp.Add(*xs) / len(xs)) / (len(xs) - ddof)

    def _numpycode(self, printer) -> str:
        xs = ", ".join(printer._print(a) for a in self.args[1:])
        return f"ops.var(ops.stack([{xs}]), axis=0, ddof={int(self.args[0])})"
