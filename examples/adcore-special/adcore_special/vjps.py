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

from adcore.extend import power_by_base, power_by_exponent, unbroadcast
from adcore_special.ops import psi

TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)  # -erfcx'(0)

# fmt: off
VJPS: dict[str, tuple[Any, ...]] = {
    # erfcx' = 2 x erfcx(x) - 2/sqrt(pi): in terms of the output, as exp's rule is
    "erfcx":     (lambda g, ans, x: g * (2 * x * ans - TWO_OVER_SQRT_PI),),
    "loggamma":  (lambda g, ans, x: g * psi(x, n=0),),
    "psi":       (lambda g, ans, x, n=0: g * psi(x, n=n + 1),),
    # powm1 is x**y - 1, so its derivatives are power's, stated once in adcore.extend: d/dx =
    # y x**(y - 1), d/dy = x**y log(x) (x**y being ans + 1), with their limits where the formulas
    # are 0 * inf = nan: d/dx = 1 at x = 0, y = 1, and d/dy = 0 at x = 0 < y (0**y is flat there)
    "powm1":     (lambda g, ans, x, y: unbroadcast(g * power_by_base(x, y), x),
                  lambda g, ans, x, y: unbroadcast(g * power_by_exponent(x, y, ans + 1), y)),
}
# fmt: on
