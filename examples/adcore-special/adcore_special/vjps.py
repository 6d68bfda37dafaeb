"""VJP rules of the special ops: the "vjp" table the reverse backend needs.

Each entry maps an op name to a tuple with one rule per input of the op:

    rule(g, ans, *inputs, **params) -> the cotangent of that input

`g` is the cotangent of the output, `ans` the output, `inputs` the op's inputs and
`params` its params as the caller passed them (so a rule gives each param its default).
The cotangent has the input's shape: powm1 broadcasts, so it `unbroadcast`s. Rules
are written with adcore ops (`anp.log`, this plugin's `psi`), never raw NumPy, so the
backward pass can itself be differentiated: second and higher derivatives come for free.
"""

from __future__ import annotations

import math
from typing import Any

import adcore.numpy as anp
from adcore.extend import unbroadcast
from adcore_special.ops import psi

TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)  # -erfcx'(0)

# fmt: off
VJPS: dict[str, tuple[Any, ...]] = {
    # erfcx' = 2 x erfcx(x) - 2/sqrt(pi): in terms of the output, as exp's rule is
    "erfcx":     (lambda g, ans, x: g * (2 * x * ans - TWO_OVER_SQRT_PI),),
    "loggamma":  (lambda g, ans, x: g * psi(x, n=0),),
    "psi":       (lambda g, ans, x, n=0: g * psi(x, n=n + 1),),
    # x**y is ans + 1: d/dx = y x**(y - 1), d/dy = x**y log(x)
    "powm1":     (lambda g, ans, x, y: unbroadcast(g * y * (ans + 1) / x, x),
                  lambda g, ans, x, y: unbroadcast(g * (ans + 1) * anp.log(x), y)),
}
# fmt: on
