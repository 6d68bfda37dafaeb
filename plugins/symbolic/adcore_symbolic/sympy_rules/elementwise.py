"""Sympy rules of adcore/ops/elementwise.py: arithmetic, exp/log, trigonometry, kinks, clip, where."""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore_symbolic.sympy_rules.table import defsympy, each, fn, sp


def _clip(x: Any, a_min: Any, a_max: Any) -> Any:
    pieces = [(a_min, x < a_min)] if a_min is not None else []
    pieces += [(a_max, x > a_max)] if a_max is not None else []
    return sp.Piecewise(*pieces, (x, True))


def _truth(condition: Any) -> Any:
    """A `where` condition as a sympy boolean: a number or expression is true where nonzero."""
    if isinstance(condition, (bool, np.bool_)) or isinstance(condition, sp.logic.boolalg.Boolean):
        return condition
    return sp.Ne(condition, 0)


def _where(condition: Any, x: Any, y: Any) -> Any:
    return sp.Piecewise((x, _truth(condition)), (y, True))


# fmt: off
# --- arithmetic -------------------------------------------------------------------
defsympy("negative",   lambda x: -x)
defsympy("add",        lambda x, y: x + y)
defsympy("subtract",   lambda x, y: x - y)
defsympy("multiply",   lambda x, y: x * y)
defsympy("divide",     lambda x, y: x / y)
defsympy("power",      lambda x, y: each(fn.power, x, y))
defsympy("square",     lambda x: x ** 2)
defsympy("reciprocal", lambda x: 1 / x)
defsympy("sqrt",       lambda x: each(sp.sqrt, x))

# --- exponentials and logarithms ----------------------------------------------------
defsympy("exp",        lambda x: each(sp.exp, x))
defsympy("expm1",      lambda x: each(fn.expm1, x))
defsympy("log",        lambda x: each(sp.log, x))
defsympy("log1p",      lambda x: each(fn.log1p, x))

# --- trigonometric and hyperbolic -------------------------------------------------
defsympy("sin",        lambda x: each(sp.sin, x))
defsympy("cos",        lambda x: each(sp.cos, x))
defsympy("tan",        lambda x: each(sp.tan, x))
defsympy("arcsin",     lambda x: each(sp.asin, x))
defsympy("arccos",     lambda x: each(sp.acos, x))
defsympy("arctan",     lambda x: each(sp.atan, x))
defsympy("arctan2",    lambda y, x: each(sp.atan2, y, x))
defsympy("sinh",       lambda x: each(sp.sinh, x))
defsympy("cosh",       lambda x: each(sp.cosh, x))
defsympy("tanh",       lambda x: each(sp.tanh, x))

# --- kinks and steps -----------------------------------------------------------------
defsympy("abs",        lambda x: each(sp.Abs, x))
defsympy("sign",       lambda x: each(fn.sign, x))
defsympy("floor",      lambda x: each(fn.floor, x))
defsympy("round",      lambda x, decimals=0: each(lambda e: fn.Round(e, decimals), x))
defsympy("maximum",    lambda x, y: each(sp.Max, x, y))
defsympy("minimum",    lambda x, y: each(sp.Min, x, y))
defsympy("clip",       lambda x, a_min=None, a_max=None: each(_clip, x, a_min, a_max))
defsympy("where",      lambda c, x, y: each(_where, c, x, y))

# fmt: on
