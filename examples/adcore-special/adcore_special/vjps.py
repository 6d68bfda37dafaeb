"""VJP rules of the special ops: the "vjp" table the reverse backend needs.

Each entry maps an op name to a tuple with one rule per input of the op:

    rule(g, ans, *inputs, **params) -> the cotangent of that input

`g` is the cotangent of the output, `ans` the output, `inputs` the op's inputs and
`params` its params as the caller passed them (so a rule gives each param its default).
The cotangent has the input's shape: powm1 broadcasts, so it `unbroadcast`s. Rules
are written with adcore ops (this plugin's `psi`, adcore.extend's power helpers), never raw NumPy, so the
backward pass can itself be differentiated: second and higher derivatives come for free.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore.core import concrete
from adcore.errors import AdcoreError
from adcore.extend import power_by_base, power_by_exponent, unbroadcast
from adcore_special.ops import psi

TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)  # -erfcx'(0)
# erfcx' from x = 40 on: -2/sqrt(pi) (z - 3 z**2 + 15 z**3 - ... + 135135 z**7), z = 1/(2 x**2), in
# Horner's form z (1 - 3 z (1 - 5 z (... (1 - 13 z)))): these are the factors, innermost first. At
# x = 40 the first term left out is 1e-16 of the sum, and the closed form still keeps 12 digits.
ASYMPTOTIC_FROM = 40.0
ASYMPTOTIC_FACTORS = (13, 11, 9, 7, 5, 3)


def loggamma_slope(x: Any) -> Any:
    """psi(x) where loggamma is real (x > 0); nan elsewhere, where scipy's real loggamma is nan:
    a slope must not be a number where the value is not one."""
    slope = psi(x, n=0)
    try:
        inside = bool(np.all(concrete(x) > 0))
    except AdcoreError:  # symbolic x has no number, and its where refuses a nan constant
        inside = True
    return slope if inside else anp.where(x > 0, slope, np.nan)


def erfcx_slope(x: Any, ans: Any) -> Any:
    """erfcx'(x) = 2 x erfcx(x) - 2/sqrt(pi). Both terms tend to 2/sqrt(pi) as x grows, and their
    difference, about -1/(sqrt(pi) x**2), loses digits as x**2 grows (every one by x = 1e8, where
    it rounds to 0): from ASYMPTOTIC_FROM on it is the asymptotic series, exact to rounding."""
    far = x >= ASYMPTOTIC_FROM
    z = 1 / (2 * anp.square(anp.where(far, x, ASYMPTOTIC_FROM)))  # (finite in the branch not taken)
    series = 1.0
    for k in ASYMPTOTIC_FACTORS:
        series = 1 - k * z * series
    return anp.where(far, -TWO_OVER_SQRT_PI * z * series, 2 * x * ans - TWO_OVER_SQRT_PI)


# fmt: off
VJPS: dict[str, tuple[Any, ...]] = {
    # erfcx' = 2 x erfcx(x) - 2/sqrt(pi): in terms of the output, as exp's rule is
    "erfcx":     (lambda g, ans, x: g * erfcx_slope(x, ans),),
    "loggamma":  (lambda g, ans, x: g * loggamma_slope(x),),
    "psi":       (lambda g, ans, x, n=0: g * psi(x, n=n + 1),),
    # powm1 is x**y - 1, so its derivatives are power's, stated once in adcore.extend: d/dx =
    # y x**(y - 1), d/dy = x**y log(x) (x**y being ans + 1), with their limits where the formulas
    # are 0 * inf = nan: d/dx = 1 at x = 0, y = 1, and d/dy = 0 at x = 0 < y (0**y is flat there)
    "powm1":     (lambda g, ans, x, y: unbroadcast(g * power_by_base(x, y), x),
                  lambda g, ans, x, y: unbroadcast(g * power_by_exponent(x, y, ans + 1), y)),
}
# fmt: on
