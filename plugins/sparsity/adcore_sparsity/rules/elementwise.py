"""Sparsity rules of adcore/ops/elementwise.py and remainders.py (and where): each output element
depends on the inputs' elements at its broadcast position, nowhere else.

Smooth ops keep every such dependency, even where their derivative happens to be 0 at a point
(x * y at y = 0, sinc'(0)): the second derivative is not 0 there, and Hessian patterns are built
from these dependencies. Steps (sign, floor, round, ceil, floor_divide) have none. Kinks and
branches (abs, relu, maximum, clip, where, mod's divisor, nan_to_num) keep, at a point (a local
pattern, or constants), only the positions where the derivative the conventions give
(docs/conventions.md) is not 0; their second derivatives are 0, so their order is "linear".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import adcore.ops.elementwise_rules as er
from adcore.extend import inside_clip
from adcore.ops.complex_parts import is_complex
from adcore_sparsity.extend import SparsityRule, elementwise, known, no_dependency, readable, selected
from adcore_sparsity.rules.table import defsparsity

# keeps[i]: True (input i at every position), None (no dependency) or keep(ans, *inputs, **params),
# the positions of the output (broadcastable to its shape) that input i's derivative reaches
Keep = Callable[..., Any] | bool | None


def piecewise(*keeps: Keep, order: str = "linear", exact: bool = True) -> SparsityRule:
    """An elementwise op whose input i reaches only the output positions keeps[i] gives; a keep
    returns True when the values it decides by are not readable (a global pattern)."""

    def dependencies(ans: Any, *args: Any, **params: Any) -> tuple:
        out = np.shape(ans)
        reached = [keep if keep in (True, None) else keep(ans, *args, **params) for keep in keeps]
        return tuple(None if r is None else selected(np.shape(a), out, r) for r, a in zip(reached, args))

    return SparsityRule(dependencies, order, exact)


# --- where each kink's or branch's derivative is not 0, at a point -----------------------------


def nonzero(ans: Any, x: Any, *rest: Any, **params: Any) -> Any:
    """x != 0 for a real x: abs'(0) = fabs'(0) = 0, copysign's d/dx = 0 at x = 0. A complex z keeps
    z = 0: abs's rule there is conj(z) / 1, 0 with a second derivative that is not."""
    return np.asarray(x) != 0 if readable(x) and not is_complex(x) else True


def by_the_other(position: int) -> Keep:
    """multiply's input: where the other factor may be non-zero. A factor's zeros are structure
    when it is a constant: any readable factor of a global pattern (only constants are readable
    there) and a non-float one (a mask, a count: never traced) of a local one. A float factor of a
    local pattern may be traced, and its zero at this point still leaves a second derivative (the
    cross term of x * y), which Hessian patterns build from this rule's entries: it is kept."""

    def keep(ans: Any, *factors: Any) -> Any:
        other = factors[1 - position]
        if not readable(other) or (known(ans) and np.result_type(other).kind in "fc"):
            return True
        nonzero = np.asarray(other) != 0
        return True if nonzero.all() else nonzero

    return keep


def positive(ans: Any, x: Any) -> Any:
    """x > 0: relu'(0) = 0."""
    return np.asarray(x) > 0 if readable(x) else True


def finite(ans: Any, x: Any, **params: Any) -> Any:
    """nan_to_num passes x where it is finite; a replaced NaN or infinity is a constant."""
    return np.isfinite(x) if readable(x) else True


def inside(ans: Any, x: Any, a_min: Any = None, a_max: Any = None) -> Any:
    """clip's closed interval [a_min, a_max] (a value on a bound keeps its derivative)."""
    return inside_clip(x, a_min, a_max) if readable(x, a_min, a_max) else True


def wins(beats: Callable[..., Any], first: bool) -> Keep:
    """maximum (beats=np.greater) or minimum (np.less): the input that wins, both on a tie (each
    gets half), neither where one is NaN (tie_split's 0: the result is NaN)."""

    def keep(ans: Any, x: Any, y: Any) -> Any:
        if not readable(x, y):
            return True
        mine, other = (x, y) if first else (y, x)
        return beats(mine, other) | (np.asarray(mine) == other)

    return keep


def wins_ignoring_nan(beats: Callable[..., Any], first: bool) -> Keep:
    """fmax, fmin: as maximum, minimum, but a NaN input passes the derivative to the other one."""

    def keep(ans: Any, x: Any, y: Any) -> Any:
        if not readable(x, y):
            return True
        return er.fmax_weight(x, y, beats) != 0 if first else er.fmax_weight(y, x, beats) != 0

    return keep


def taken(branch: bool) -> Keep:
    """where's x where the condition holds (branch True), y where it does not; both when the
    condition is a global pattern's Condition or not known."""

    def keep(ans: Any, c: Any, x: Any, y: Any) -> Any:
        if not readable(c):
            return True
        holds = np.asarray(c).astype(bool)
        return holds if branch else ~holds

    return keep


def counts_divisor(ans: Any, x: Any, y: Any) -> Any:
    """mod and fmod: d/dy = -q (x = q y + ans), 0 where the quotient q is 0 (|x| < |y| there)."""
    return er.quotient(x, y, ans) != 0 if readable(x, y, ans) else True


def at_zero(ans: Any, x: Any, h: Any) -> Any:
    """heaviside(x, h) is h where x = 0: d/dh is 1 there, 0 elsewhere."""
    return np.asarray(x) == 0 if readable(x) else True


def exp_share(exp_fn: Callable[..., Any], first: bool) -> Keep:
    """logaddexp (exp_fn np.exp), logaddexp2 (np.exp2): d/dx = exp(x - ans) is 0 only where it
    underflows or x is -inf, a 0 its second derivatives share (exp(x - ans) times bounded terms)."""

    def keep(ans: Any, x: Any, y: Any) -> Any:
        if not readable(x, y, ans):
            return True
        mine, other = (x, y) if first else (y, x)
        with np.errstate(invalid="ignore", over="ignore"):
            return np.asarray(er.exp_share(mine, other, ans, exp_fn)) != 0

    return keep


def both(keep: Callable[..., Keep], how: Any, order: str = "linear", exact: bool = True) -> SparsityRule:
    """A binary op whose two inputs each keep keep(how, first) (maximum, fmax, logaddexp)."""
    return piecewise(keep(how, True), keep(how, False), order=order, exact=exact)


SMOOTH = elementwise("nonlinear")
LINEAR = elementwise("linear")
STEP = no_dependency()

# fmt: off
# --- arithmetic -------------------------------------------------------------------
defsparsity("negative",     LINEAR)
defsparsity("add",          LINEAR)
defsparsity("subtract",     LINEAR)
defsparsity("multiply",     piecewise(by_the_other(0), by_the_other(1), order="multilinear"))
defsparsity("divide",       SMOOTH)
defsparsity("power",        SMOOTH)
defsparsity("square",       SMOOTH)
defsparsity("reciprocal",   SMOOTH)
defsparsity("sqrt",         SMOOTH)

# --- exponentials and logarithms ----------------------------------------------------
defsparsity("exp",          SMOOTH)
defsparsity("expm1",        SMOOTH)
defsparsity("log",          SMOOTH)
defsparsity("log1p",        SMOOTH)

# --- trigonometric and hyperbolic -------------------------------------------------
defsparsity("sin",          SMOOTH)
defsparsity("cos",          SMOOTH)
defsparsity("tan",          SMOOTH)
defsparsity("arcsin",       SMOOTH)
defsparsity("arccos",       SMOOTH)
defsparsity("arctan",       SMOOTH)
defsparsity("arctan2",      SMOOTH)
defsparsity("sinh",         SMOOTH)
defsparsity("cosh",         SMOOTH)
defsparsity("tanh",         SMOOTH)

# --- kinks and steps -----------------------------------------------------------------
defsparsity("abs",          piecewise(nonzero, order="nonlinear"))  # |z| of a complex z: not piecewise linear
defsparsity("sign",         STEP)
defsparsity("floor",        STEP)
defsparsity("round",        STEP)
defsparsity("maximum",      both(wins, np.greater))
defsparsity("minimum",      both(wins, np.less))
defsparsity("clip",         piecewise(inside))
defsparsity("where",        piecewise(None, taken(True), taken(False)))

# --- inverse hyperbolic, bases 2 and 10, log-sum-exp of two ------------------------------
defsparsity("arcsinh",      SMOOTH)
defsparsity("arccosh",      SMOOTH)
defsparsity("arctanh",      SMOOTH)
defsparsity("log2",         SMOOTH)
defsparsity("log10",        SMOOTH)
defsparsity("exp2",         SMOOTH)
defsparsity("logaddexp",    both(exp_share, np.exp, order="nonlinear"))
# not claimed exact: at its sample (3, -900), d/dy = 2**-903 ~ 1e-272 is a true non-zero the
# pattern keeps, but one that conformance judges as 0 (below every atol)
defsparsity("logaddexp2",   both(exp_share, np.exp2, order="nonlinear", exact=False))

# --- sinc, hypot, angles, cube root ------------------------------------------------------
# not exact: sinc'(0) = 0 (a sample), yet sinc''(0) != 0, so the dependency stays
defsparsity("sinc",         elementwise("nonlinear", exact=False))
defsparsity("hypot",        SMOOTH)
defsparsity("deg2rad",      LINEAR)
defsparsity("rad2deg",      LINEAR)
defsparsity("cbrt",         SMOOTH)

# --- remainders: x - q y with q a step ----------------------------------------------------
defsparsity("mod",          piecewise(True, counts_divisor))
defsparsity("fmod",         piecewise(True, counts_divisor))
defsparsity("floor_divide", STEP)

# --- steps, kinks and signs -----------------------------------------------------------
defsparsity("ceil",         STEP)
defsparsity("fabs",         piecewise(nonzero))
defsparsity("copysign",     piecewise(nonzero, None))
defsparsity("heaviside",    piecewise(None, at_zero))
defsparsity("fmax",         both(wins_ignoring_nan, np.greater))
defsparsity("fmin",         both(wins_ignoring_nan, np.less))

# --- float_power, nan_to_num -------------------------------------------------------------
defsparsity("float_power",  SMOOTH)
defsparsity("nan_to_num",   piecewise(finite))
# fmt: on
