"""Sympy rules of adcore/ops/elementwise.py and remainders.py: arithmetic, exp/log, trigonometry,
kinks, clip, where."""

from __future__ import annotations

import functools
from types import SimpleNamespace
from typing import Any

import numpy as np

import adcore.ops.elementwise_rules as er
from adcore.extend import each
from adcore_symbolic.sympy_rules.table import defsympy, fn, sp


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


# === elementwise ops added in issue 17 (conventions at their kinks: docs/conventions.md) ===
# Where a derivative needs NumPy's own test of its input (NaN, inf: fmax, logaddexp, hypot,
# nan_to_num), the expression is a function printed as a call of the adcore op, whose derivative
# is a function printed as a call of the piece the VJP and JVP rules share (adcore.ops.elementwise):
# the compiled code then gives the same limits as they do, and runs on traced values too.
_SINC_SERIES_BELOW = (
    0.1  # as adcore.ops.elementwise_rules.sinc_slope: the series where sin(pi x) / (pi x) cancels
)


@functools.cache
def _functions() -> SimpleNamespace:
    """The sympy functions of these rules, made when a rule first runs (sympy is imported then)."""

    class _Call(sp.Function):
        """A function printed to NumPy by `code`, a format string of its printed arguments a0, a1...,
        and evaluated at numbers by `evaluate` (so sympy can compare it: Max(fmax(1, 2), 1))."""

        code = ""
        evaluate: Any = None

        def _numpycode(self, printer) -> str:
            return self.code.format(**{f"a{i}": printer._print(a) for i, a in enumerate(self.args)})

        def _eval_evalf(self, prec):
            if self.evaluate is None or not all(a.is_number for a in self.args):
                return None
            from mpmath.libmp import prec_to_dps  # sympy's, imported with it

            try:
                numbers = [np.float64(float(a)) for a in self.args]
            except TypeError:  # not real
                return None
            return sp.Float(float(self.evaluate(*numbers)), prec_to_dps(prec))

    class Step(_Call):
        """A concrete 0/1/0.5 weight: no derivative."""

        step = True  # where it is 0 the chain rule selects 0 (program._selected)

        def fdiff(self, argindex=1):
            return sp.S.Zero

    class FmaxWeight(Step):
        code = "ops.elementwise_rules.fmax_weight({a0}, {a1}, numpy.greater)"
        evaluate = staticmethod(lambda x, y: er.fmax_weight(x, y, np.greater))

    class FminWeight(Step):
        code = "ops.elementwise_rules.fmax_weight({a0}, {a1}, numpy.less)"
        evaluate = staticmethod(lambda x, y: er.fmax_weight(x, y, np.less))

    class Finite(Step):
        code = "ops.elementwise_rules.finite_weight({a0})"
        evaluate = staticmethod(er.finite_weight)

    class Fmax(_Call):
        code = "ops.fmax({a0}, {a1})"
        evaluate = staticmethod(np.fmax)

        def fdiff(self, argindex=1):
            x, y = self.args if argindex == 1 else reversed(self.args)
            return FmaxWeight(x, y)

    class Fmin(_Call):
        code = "ops.fmin({a0}, {a1})"
        evaluate = staticmethod(np.fmin)

        def fdiff(self, argindex=1):
            x, y = self.args if argindex == 1 else reversed(self.args)
            return FminWeight(x, y)

    class ExpShare(_Call):
        """exp(x - ans) (2**(x - ans) with `base2`), args (x, y, ans): its limit where ans is infinite."""

        code = "ops.elementwise_rules.exp_share({a0}, {a1}, {a2})"
        evaluate = staticmethod(er.exp_share)
        scale = sp.S.One

        def fdiff(self, argindex=1):
            return (self.scale * self, sp.S.Zero, -self.scale * self)[argindex - 1]

    class ExpShare2(ExpShare):
        code = "ops.elementwise_rules.exp_share({a0}, {a1}, {a2}, ops.exp2)"
        evaluate = staticmethod(lambda x, y, ans: er.exp_share(x, y, ans, np.exp2))
        scale = sp.log(2)

    class LogAddExp(_Call):
        code = "ops.logaddexp({a0}, {a1})"
        evaluate = staticmethod(np.logaddexp)
        share = ExpShare

        def fdiff(self, argindex=1):
            x, y = self.args if argindex == 1 else reversed(self.args)
            return self.share(x, y, self)

    class LogAddExp2(LogAddExp):
        code = "ops.logaddexp2({a0}, {a1})"
        evaluate = staticmethod(np.logaddexp2)
        share = ExpShare2

    class HypotShare(_Call):
        """x / ans, args (x, y, ans): 0 at (0, 0), the limit at an infinite input."""

        code = "ops.elementwise_rules.hypot_share({a0}, {a1}, {a2})"
        evaluate = staticmethod(er.hypot_share)

        def fdiff(self, argindex=1):
            x, _, ans = self.args
            at_zero = sp.Eq(ans, 0)  # the rules' constant 0 there: no second derivative either
            if argindex == 1:
                return sp.Piecewise((0, at_zero), (1 / ans, True))
            return sp.S.Zero if argindex == 2 else sp.Piecewise((0, at_zero), (-x / ans**2, True))

    class Hypot(_Call):
        code = "ops.hypot({a0}, {a1})"
        evaluate = staticmethod(np.hypot)

        def fdiff(self, argindex=1):
            x, y = self.args if argindex == 1 else reversed(self.args)
            return HypotShare(x, y, self)

    return SimpleNamespace(
        Call=_Call,
        Fmax=Fmax,
        Fmin=Fmin,
        LogAddExp=LogAddExp,
        LogAddExp2=LogAddExp2,
        Hypot=Hypot,
        Finite=Finite,
    )


@functools.cache
def _nan_to_num(nan: float, posinf: Any, neginf: Any) -> Any:
    """x where finite, as a call of the op with these params (NumPy replaces the rest); derivative
    1 where x is finite, 0 elsewhere."""
    f = _functions()
    finite = f.Finite

    class NanToNum(f.Call):
        evaluate = staticmethod(lambda x: np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf))

        def _numpycode(self, printer) -> str:
            x = printer._print(self.args[0])
            return f"ops.nan_to_num({x}, nan={nan!r}, posinf={posinf!r}, neginf={neginf!r})"

        def fdiff(self, argindex=1):
            return finite(self.args[0])

    return NanToNum


def _sinc(x: Any) -> Any:
    """sin(pi x) / (pi x), by its Taylor series (to x**16) below 0.1: sinc'(0) = 0, sinc''(0) = -pi**2/3."""
    z = sp.pi * x
    series = sp.Add(*[(-1) ** k * z ** (2 * k) / sp.factorial(2 * k + 1) for k in range(9)])
    return sp.Piecewise((series, sp.Abs(x) < sp.Float(_SINC_SERIES_BELOW)), (sp.sin(z) / z, True))


def _trunc(v: Any) -> Any:
    return fn.sign(v) * fn.floor(sp.Abs(v))


def _copysign(x: Any, y: Any) -> Any:
    """|x| with y's sign; y = -0.0 is 0 here, so only NumPy-based rules see its sign bit."""
    return sp.Piecewise((sp.Abs(x), y >= 0), (-sp.Abs(x), True))


def _heaviside(x: Any, h: Any) -> Any:
    return sp.Piecewise((0, x < 0), (h, sp.Eq(x, 0)), (1, True))


# fmt: off
# --- inverse hyperbolic -------------------------------------------------------------
defsympy("arcsinh",      lambda x: each(sp.asinh, x))
defsympy("arccosh",      lambda x: each(sp.acosh, x))
defsympy("arctanh",      lambda x: each(sp.atanh, x))

# --- bases 2 and 10, log-sum-exp of two -------------------------------------------------
defsympy("log2",         lambda x: each(lambda e: sp.log(e) / sp.log(2), x))
defsympy("log10",        lambda x: each(lambda e: sp.log(e) / sp.log(10), x))
defsympy("exp2",         lambda x: each(lambda e: sp.Pow(2, e), x))
defsympy("logaddexp",    lambda x, y: each(_functions().LogAddExp, x, y))
defsympy("logaddexp2",   lambda x, y: each(_functions().LogAddExp2, x, y))

# --- sinc, hypot, angles, cube root ------------------------------------------------------
defsympy("sinc",         lambda x: each(_sinc, x))
defsympy("hypot",        lambda x, y: each(_functions().Hypot, x, y))
defsympy("deg2rad",      lambda x: x * (sp.pi / 180))
defsympy("rad2deg",      lambda x: x * (180 / sp.pi))
defsympy("cbrt",         lambda x: each(lambda e: fn.sign(e) * sp.Abs(e) ** sp.Rational(1, 3), x))

# --- remainders ---------------------------------------------------------------------------
defsympy("mod",          lambda x, y: each(lambda a, b: a - b * fn.floor(a / b), x, y))
defsympy("fmod",         lambda x, y: each(lambda a, b: a - b * _trunc(a / b), x, y))
defsympy("floor_divide", lambda x, y: each(lambda a, b: fn.floor(a / b), x, y))

# --- steps, kinks and signs -----------------------------------------------------------
defsympy("ceil",         lambda x: each(lambda e: -fn.floor(-e), x))
defsympy("fabs",         lambda x: each(sp.Abs, x))
defsympy("copysign",     lambda x, y: each(_copysign, x, y))
defsympy("heaviside",    lambda x, h: each(_heaviside, x, h))
defsympy("fmax",         lambda x, y: each(_functions().Fmax, x, y))
defsympy("fmin",         lambda x, y: each(_functions().Fmin, x, y))

# --- float_power, nan_to_num -------------------------------------------------------------
defsympy("float_power",  lambda x, y: each(fn.power, x, y))
defsympy("nan_to_num",   lambda x, copy=True, nan=0.0, posinf=None, neginf=None:
                         each(_nan_to_num(nan, posinf, neginf), x))

# fmt: on


# === the parts of complex values (adcore/ops/complex_parts.py): symbolic's symbols are real ===
# (a complex value is refused before a rule runs), so these are the ops on a real x: real(x) = x,
# imag(x) = 0, conj(x) = x, angle(x) = pi for x < 0, else 0 (a step: derivative 0)
def _angle(deg: bool) -> Any:
    half_turn = 180 if deg else sp.pi
    return lambda e: sp.Piecewise((half_turn, e < 0), (0, True))


# fmt: off
defsympy("real",         lambda x: x)
defsympy("imag",         lambda x: each(lambda e: sp.S.Zero, x))
defsympy("conj",         lambda x: x)
defsympy("angle",        lambda x, deg=False: each(_angle(deg), x))
# fmt: on
