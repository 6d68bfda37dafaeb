"""The partial derivatives of the core's elementwise ops (adcore/ops/elementwise.py, remainders.py,
and nn.py's sigmoid and softplus), each stated once: the reverse and forward backends build their `vjp` and `jvp` rules from this
table (`adcore.extend.partials`). The forms of a partial are in that module's docstring.

Ops whose rules differ by mode are not here: the steps and kinks (abs, maximum, clip, where, ...),
whose zero derivatives are structural zeros in reverse mode and selected, not multiplied, in forward
mode. Conventions at kinks and branch cuts: docs/conventions.md. Layer 3: core and ops only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import adcore.ops.elementwise_rules as er
from adcore.extend.partials import over
from adcore.extend.rules import nan_where_value_is, power_by_base, power_by_exponent
from adcore.ops import complex_parts as cp
from adcore.ops.elementwise import cos, cosh, exp2, sin, sinh, sqrt
from adcore.ops.nn import sigmoid

# op: (d op / d input, for each input)
# fmt: off
PARTIALS: dict[str, tuple[Any, ...]] = {
    # arithmetic
    "negative":     (-1,),
    "add":          (1, 1),
    "subtract":     (1, -1),
    "multiply":     (lambda ans, x, y: y, lambda ans, x, y: x),
    "divide":       (over(lambda ans, x, y: y), lambda ans, x, y: -ans / y),
    "power":        (lambda ans, x, y: power_by_base(x, y),
                     lambda ans, x, y: power_by_exponent(cp.complex_base(x, ans), y, ans)),
    "float_power":  (lambda ans, x, y: power_by_base(er.in_float64(x), er.in_float64(y)),
                     lambda ans, x, y: power_by_exponent(cp.complex_base(er.in_float64(x), ans), er.in_float64(y), ans)),
    "square":       (lambda ans, x: 2 * x,),
    "reciprocal":   (lambda ans, x: -ans * ans,),
    "sqrt":         (lambda ans, x: 0.5 / ans,),
    "cbrt":         (over(lambda ans, x: 3 * ans * ans),),
    # exponentials and logarithms: nan where the value is nan (real x < 0), as the value
    "exp":          (lambda ans, x: ans,),
    "expm1":        (lambda ans, x: ans + 1,),
    "exp2":         (lambda ans, x: ans * er.LN2,),
    "log":          (over(lambda ans, x: nan_where_value_is(x, ans)),),
    "log1p":        (over(lambda ans, x: 1 + nan_where_value_is(x, ans)),),
    "log2":         (over(lambda ans, x: nan_where_value_is(x, ans) * er.LN2),),
    "log10":        (over(lambda ans, x: nan_where_value_is(x, ans) * er.LN10),),
    "logaddexp":    (lambda ans, x, y: er.exp_share(x, y, ans), lambda ans, x, y: er.exp_share(y, x, ans)),
    "logaddexp2":   (lambda ans, x, y: er.exp_share(x, y, ans, exp2),
                     lambda ans, x, y: er.exp_share(y, x, ans, exp2)),
    # trigonometric and hyperbolic
    "sin":          (lambda ans, x: cos(x),),
    "cos":          (lambda ans, x: -sin(x),),
    "tan":          (lambda ans, x: 1 + ans * ans,),
    "arcsin":       (over(lambda ans, x: sqrt(1 - x * x)),),
    "arccos":       (over(lambda ans, x: -sqrt(1 - x * x)),),
    "arctan":       (over(lambda ans, x: 1 + x * x),),
    "arctan2":      (lambda ans, y, x: x / (x * x + y * y), lambda ans, y, x: -y / (x * x + y * y)),
    "sinh":         (lambda ans, x: cosh(x),),
    "cosh":         (lambda ans, x: sinh(x),),
    "tanh":         (lambda ans, x: 1 - ans * ans,),
    "arcsinh":      (over(lambda ans, x: sqrt(x * x + 1)),),
    "arccosh":      (over(lambda ans, x: sqrt(x - 1) * sqrt(x + 1)),),  # not sqrt(x*x - 1): complex x
    "arctanh":      (over(lambda ans, x: 1 - x * nan_where_value_is(x, ans)),),
    # sinc, hypot, angles
    "sinc":         (lambda ans, x: er.sinc_slope(x),),
    "hypot":        (lambda ans, x, y: er.hypot_share(x, y, ans), lambda ans, x, y: er.hypot_share(y, x, ans)),
    "deg2rad":      (np.pi / 180,),
    "rad2deg":      (180 / np.pi,),
    # remainders: x = q y + ans with an integer q, so d ans / dy = -q
    "mod":          (1, lambda ans, x, y: -er.quotient(x, y, ans)),
    "fmod":         (1, lambda ans, x, y: -er.quotient(x, y, ans)),
    # neural-network ops
    "sigmoid":      (lambda ans, x: ans * (1 - ans),),
    "softplus":     (lambda ans, x: sigmoid(x),),
    # integer-valued: no derivative flows
    "sign":         (None,),
    "floor":        (None,),
    "ceil":         (None,),
    "round":        (None,),
    "floor_divide": (None, None),
}
# fmt: on
