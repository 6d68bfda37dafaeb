"""The scipy.special ops' rules, side by side: JVPS (forward), VJPS (reverse), SYMPY_RULES (symbolic).

The rule forms are those of the core tables (adcore_forward.jvps, adcore_reverse.vjps,
adcore_symbolic.sympy_rules): one rule per input of the op, None where no derivative flows.
Each op's derivative is one function `d_<op>` of its inputs (and output), written with adcore
ops so it differentiates again; adcore.extend.jvp_rules and vjp_rules build the JVP
(`lift(t, ans) * d`) and the VJP (`unbroadcast(g * d, x)`) from it, as the core's elementwise ops'.
An input with no closed-form derivative (an order, betainc's a and b) gets `refused`: a rule
raising MissingRuleError that names the argument and the way out. expit and logit have no rules:
they are traceable, Python over the core ops.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore.core import concrete, plain_numbers
from adcore.errors import AdcoreError, MissingRuleError
from adcore.extend import LazyModule, each, jvp_rules, vjp_rules
from adcore_scipy.special.ops import (
    _order,
    betaln,
    digamma,
    expit,
    gamma,
    gammaln,
    i0,
    i1,
    iv,
    ive,
    j0,
    j1,
    jv,
    polygamma,
    rgamma,
    xlog1py,
    xlogy,
    y0,
    y1,
    yn,
)

fn = LazyModule("adcore_scipy.special.sympy_functions")

TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)  # erf'(0)
SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2  # erfinv'(0)


class refused:  # noqa: N801 (used as a rule, lower case as the rules are)
    """The rule of an input with no derivative adcore can give, in every mode: it raises, naming
    the argument and the way out."""

    def __init__(self, op: str, arg: str, why: str) -> None:
        self.op, self.arg, self.why = op, arg, why

    def __call__(self, *args: Any, **params: Any) -> Any:
        raise MissingRuleError(
            f"op {self.op!r} has no derivative with respect to its argument {self.arg!r}: {self.why}. "
            f"Pass {self.arg} as a constant (a plain number or array, not a traced value); for an "
            "estimate of this derivative, differentiate with backend='numeric' (finite differences)."
        )


NO_CLOSED_FORM = "SciPy has none in closed form"
INTEGER_ORDER = "it is an integer order, with no derivative"


def divide_where_x(x: Any, y: Any) -> Any:
    """x / y, and 0 where x is 0 (even where y is 0): d xlogy / dy, whose value is 0 for every y at x = 0."""
    zero = concrete(x) == 0
    if not plain_numbers(zero).any():  # (under vmap: in no example; the where is right for each)
        return x / y
    return anp.where(zero, 0.0, x / anp.where(zero, 1.0, y))


def d_rgamma(x: Any) -> Any:
    """d (1 / Gamma(x)) / dx: left of 0.5 by the reflection 1/Gamma(x) = sin(pi x) Gamma(1 - x) / pi,
    exact at the poles of Gamma (0, -1, ...: (-1)**n n!), where -digamma(x) / Gamma(x) is 0 * inf."""
    left = concrete(x) < 0.5
    lefts = plain_numbers(left)  # (under vmap every example's: the mixed form is right for each)
    if not lefts.any():
        return -rgamma(x) * digamma(x)
    xl = anp.where(left, x, 0.0)
    g = gamma(1 - xl)
    reflected = anp.cos(math.pi * xl) * g - anp.sin(math.pi * xl) * g * digamma(1 - xl) / math.pi
    if lefts.all():
        return reflected
    xr = anp.where(left, 1.0, x)
    return anp.where(left, reflected, -rgamma(xr) * digamma(xr))


def d_betainc_x(a: Any, b: Any, x: Any) -> Any:
    """x**(a-1) (1-x)**(b-1) / B(a, b), in logs (no overflow for large a, b)."""
    return anp.exp(xlogy(a - 1.0, x) + xlog1py(b - 1.0, -x) - betaln(a, b))


def d_gammainc_x(a: Any, x: Any) -> Any:
    """x**(a-1) exp(-x) / Gamma(a), in logs."""
    return anp.exp(xlogy(a - 1.0, x) - x - gammaln(a))


# d op / d input for each input: a function of (ans, *inputs, **params), or a refusal
# fmt: off
DERIVATIVES: dict[str, tuple[Any, ...]] = {
    # error functions
    "erf":       (lambda ans, x: TWO_OVER_SQRT_PI * anp.exp(-(x * x)),),
    "erfc":      (lambda ans, x: -TWO_OVER_SQRT_PI * anp.exp(-(x * x)),),
    "erfinv":    (lambda ans, x: SQRT_PI_OVER_2 * anp.exp(ans * ans),),
    "erfcinv":   (lambda ans, x: -SQRT_PI_OVER_2 * anp.exp(ans * ans),),
    # gamma and beta functions: digamma(x) = polygamma(x, n=0)
    "gamma":     (lambda ans, x: ans * digamma(x),),
    "gammaln":   (lambda ans, x: digamma(x),),
    "digamma":   (lambda ans, x: polygamma(x, n=1),),
    "polygamma": (lambda ans, x, n=0: polygamma(x, n=n + 1),),
    "rgamma":    (lambda ans, x: d_rgamma(x),),
    "beta":      (lambda ans, a, b: ans * (digamma(a) - digamma(a + b)),
                  lambda ans, a, b: ans * (digamma(b) - digamma(a + b))),
    "betaln":    (lambda ans, a, b: digamma(a) - digamma(a + b),
                  lambda ans, a, b: digamma(b) - digamma(a + b)),
    "betainc":   (refused("betainc", "a", NO_CLOSED_FORM), refused("betainc", "b", NO_CLOSED_FORM),
                  lambda ans, a, b, x: d_betainc_x(a, b, x)),
    "gammainc":  (refused("gammainc", "a", NO_CLOSED_FORM), lambda ans, a, x: d_gammainc_x(a, x)),
    "gammaincc": (refused("gammaincc", "a", NO_CLOSED_FORM), lambda ans, a, x: -d_gammainc_x(a, x)),
    # logistic
    "expit":     (lambda ans, x: ans * expit(-x),),  # expit (1 - expit), without 1 - 1 at large x
    "logit":     (lambda ans, x: 1.0 / (x * (1.0 - x)),),
    # x log y: 0 where x = 0, and so is d/dy there
    "xlogy":     (lambda ans, x, y: anp.log(y), lambda ans, x, y: divide_where_x(x, y)),
    "xlog1py":   (lambda ans, x, y: anp.log1p(y), lambda ans, x, y: divide_where_x(x, 1.0 + y)),
    # Bessel functions: I_v' = (I_{v-1} + I_{v+1}) / 2, J_v' = (J_{v-1} - J_{v+1}) / 2, Y likewise;
    # I_1' and J_1' through order 2, not I_1 / x (0 / 0 at 0)
    "i0":        (lambda ans, x: i1(x),),
    "i1":        (lambda ans, x: (i0(x) + iv(2.0, x)) / 2,),
    "j0":        (lambda ans, x: -j1(x),),
    "j1":        (lambda ans, x: (j0(x) - jv(2.0, x)) / 2,),
    "y0":        (lambda ans, x: -y1(x),),
    "y1":        (lambda ans, x: (y0(x) - yn(2, x)) / 2,),
    "iv":        (refused("iv", "v", NO_CLOSED_FORM), lambda ans, v, x: (iv(v - 1, x) + iv(v + 1, x)) / 2),
    "ive":       (refused("ive", "v", NO_CLOSED_FORM),
                  lambda ans, v, x: (ive(v - 1, x) + ive(v + 1, x)) / 2 - anp.sign(x) * ans),
    "jv":        (refused("jv", "v", NO_CLOSED_FORM), lambda ans, v, x: (jv(v - 1, x) - jv(v + 1, x)) / 2),
    "yn":        (refused("yn", "n", INTEGER_ORDER), lambda ans, n, x: (yn(n - 1, x) - yn(n + 1, x)) / 2),
}
# fmt: on


def _nan_where_value_is(ans: Any, d: Any) -> Any:
    """d, nan where the op's value is nan (outside its real domain: logit(2), xlog1py(1, -2)): a
    slope must not be a number where the value is not one."""
    try:
        # (under vmap: in no example; plain_numbers, since bool() of a batch raises BatchedConversionError,
        # an AdcoreError, which this would take for "no number" and return d: a number where one is nan)
        if not plain_numbers(np.isnan(concrete(ans))).any():
            return d
    except AdcoreError:  # a symbolic ans has no number, and its where refuses a nan constant
        return d
    return anp.where(anp.isnan(ans), np.nan, d)


def _guarded(d: Any) -> Any:
    """The partial d, nan where the value is; a refusal as it is."""
    if isinstance(d, refused):
        return d
    return lambda ans, *inputs, **params: _nan_where_value_is(ans, d(ans, *inputs, **params))


def _rules(build: Any, ds: tuple[Any, ...]) -> tuple[Any, ...]:
    """The rules adcore.extend builds from the (guarded) partials; a refusal is its own rule."""
    built = build(*map(_guarded, ds))
    return tuple(d if isinstance(d, refused) else rule for d, rule in zip(ds, built, strict=True))


JVPS: dict[str, Any] = {op: _rules(jvp_rules, ds) for op, ds in DERIVATIVES.items()}
VJPS: dict[str, Any] = {op: _rules(vjp_rules, ds) for op, ds in DERIVATIVES.items()}


def _sympy_rule(op: str) -> Any:
    """The op's value, elementwise, as its sympy function."""
    return lambda *inputs: each(getattr(fn, op), *inputs)


# sympy: each op as a function of adcore_scipy.special.sympy_functions (exact derivatives, printed
# as calls of the ops); numbers stay numbers, so an order or a shape parameter is a constant.
# rgamma has none: 1/gamma's derivative is 0 * inf at the poles, where d_rgamma reflects
_SYMPY_OPS = (
    "erf", "erfc", "erfinv", "erfcinv", "gamma", "gammaln", "digamma", "beta", "betaln", "betainc",
    "gammainc", "gammaincc", "expit", "logit", "xlogy", "xlog1py", "i0", "i1", "j0", "j1", "y0", "y1", "iv", "ive", "jv", "yn",
)  # fmt: skip
SYMPY_RULES: dict[str, Any] = {op: _sympy_rule(op) for op in _SYMPY_OPS}


def _sympy_polygamma(x: Any, n: int = 0) -> Any:
    order = _order(n)  # checked as impl checks it: the symbolic backend never runs impl
    return each(lambda e: fn.polygamma(order, e), x)


SYMPY_RULES["polygamma"] = _sympy_polygamma
