"""VJPs of adcore/ops/elementwise.py and remainders.py: arithmetic, exp/log, trigonometry, kinks,
clip, where."""

from __future__ import annotations

import numpy as np

import adcore.numpy as anp
import adcore.ops.elementwise_rules as er
from adcore.core import concrete
from adcore.extend import inside_clip, mask, power_by_base, power_by_exponent, tie_split, unbroadcast
from adcore.extend.rules import nan_where_value_is
from adcore.ops import complex_parts as cp
from adcore_reverse.vjps.table import VJPS, defvjp, defvjp_steps
from adcore_reverse.zeros import MaskingRules, step_cotangent, where_branch

# fmt: off
# --- arithmetic -------------------------------------------------------------------
defvjp("negative",   lambda g, ans, x: -g)
defvjp("add",        lambda g, ans, x, y: unbroadcast(g, x),
                     lambda g, ans, x, y: unbroadcast(g, y))
defvjp("subtract",   lambda g, ans, x, y: unbroadcast(g, x),
                     lambda g, ans, x, y: unbroadcast(-g, y))
defvjp("multiply",   lambda g, ans, x, y: unbroadcast(g * y, x),
                     lambda g, ans, x, y: unbroadcast(g * x, y))
defvjp("divide",     lambda g, ans, x, y: unbroadcast(g / y, x),
                     lambda g, ans, x, y: unbroadcast(-g * ans / y, y))
defvjp("power",      lambda g, ans, x, y: unbroadcast(g * power_by_base(x, y), x),
                     lambda g, ans, x, y: unbroadcast(g * power_by_exponent(cp.complex_base(x, ans), y, ans), y))
defvjp("square",     lambda g, ans, x: g * 2 * x)
defvjp("reciprocal", lambda g, ans, x: -g * ans * ans)
defvjp("sqrt",       lambda g, ans, x: g * 0.5 / ans)

# --- exponentials and logarithms ----------------------------------------------------
defvjp("exp",        lambda g, ans, x: g * ans)
defvjp("expm1",      lambda g, ans, x: g * (ans + 1))
defvjp("log",        lambda g, ans, x: g / nan_where_value_is(x, ans))  # nan at real x < 0, as the value
defvjp("log1p",      lambda g, ans, x: g / (1 + nan_where_value_is(x, ans)))

# --- trigonometric and hyperbolic -------------------------------------------------
defvjp("sin",        lambda g, ans, x: g * anp.cos(x))
defvjp("cos",        lambda g, ans, x: -g * anp.sin(x))
defvjp("tan",        lambda g, ans, x: g * (1 + ans * ans))
defvjp("arcsin",     lambda g, ans, x: g / anp.sqrt(1 - x * x))
defvjp("arccos",     lambda g, ans, x: -g / anp.sqrt(1 - x * x))
defvjp("arctan",     lambda g, ans, x: g / (1 + x * x))
defvjp("arctan2",    lambda g, ans, y, x: unbroadcast(g * x / (x * x + y * y), y),
                     lambda g, ans, y, x: unbroadcast(-g * y / (x * x + y * y), x))
defvjp("sinh",       lambda g, ans, x: g * anp.cosh(x))
defvjp("cosh",       lambda g, ans, x: g * anp.sinh(x))
defvjp("tanh",       lambda g, ans, x: g * (1 - ans * ans))

# --- kinks and steps -----------------------------------------------------------------
defvjp_steps("abs",  lambda g, ans, x: g * cp.abs_slope(x, ans) if cp.is_complex(x) else step_cotangent(g, mask(np.sign(concrete(x)), g), x))  # conj(x) / |x| on complex x
defvjp("sign",       None)
defvjp("floor",      None)
defvjp("round",      None)
# steps select, not multiply, and their zero derivatives are structural zeros (zeros.step_cotangent)
defvjp_steps("maximum", lambda g, ans, x, y: step_cotangent(g, tie_split(x, y, np.greater, g), x),
                        lambda g, ans, x, y: step_cotangent(g, tie_split(y, x, np.greater, g), y))
defvjp_steps("minimum", lambda g, ans, x, y: step_cotangent(g, tie_split(x, y, np.less, g), x),
                        lambda g, ans, x, y: step_cotangent(g, tie_split(y, x, np.less, g), y))
defvjp_steps("clip",    lambda g, ans, x, a_min=None, a_max=None: step_cotangent(g, mask(inside_clip(x, a_min, a_max), g), x))
VJPS["where"] = MaskingRules((None,  # untaken positions are structural zeros (zeros.py): no 0 * inf there
                     lambda g, ans, c, x, y: where_branch(g, ans, c, x, taken_where=True),
                     lambda g, ans, c, x, y: where_branch(g, ans, c, y, taken_where=False)))

# fmt: on


# === elementwise ops added in issue 17 (conventions at their kinks: docs/conventions.md) ===
# fmt: off
# --- inverse hyperbolic -------------------------------------------------------------
defvjp("arcsinh",      lambda g, ans, x: g / anp.sqrt(x * x + 1))
defvjp("arccosh",      lambda g, ans, x: g / (anp.sqrt(x - 1) * anp.sqrt(x + 1)))  # not sqrt(x*x - 1): complex x
defvjp("arctanh",      lambda g, ans, x: g / (1 - x * nan_where_value_is(x, ans)))

# --- bases 2 and 10, log-sum-exp of two -------------------------------------------------
defvjp("log2",         lambda g, ans, x: g / (nan_where_value_is(x, ans) * er.LN2))
defvjp("log10",        lambda g, ans, x: g / (nan_where_value_is(x, ans) * er.LN10))
defvjp("exp2",         lambda g, ans, x: g * ans * er.LN2)
defvjp("logaddexp",    lambda g, ans, x, y: unbroadcast(g * er.exp_share(x, y, ans), x),
                       lambda g, ans, x, y: unbroadcast(g * er.exp_share(y, x, ans), y))
defvjp("logaddexp2",   lambda g, ans, x, y: unbroadcast(g * er.exp_share(x, y, ans, anp.exp2), x),
                       lambda g, ans, x, y: unbroadcast(g * er.exp_share(y, x, ans, anp.exp2), y))

# --- sinc, hypot, angles, cube root ------------------------------------------------------
defvjp("sinc",         lambda g, ans, x: g * er.sinc_slope(x))
defvjp("hypot",        lambda g, ans, x, y: unbroadcast(g * er.hypot_share(x, y, ans), x),
                       lambda g, ans, x, y: unbroadcast(g * er.hypot_share(y, x, ans), y))
defvjp("deg2rad",      lambda g, ans, x: g * (np.pi / 180))
defvjp("rad2deg",      lambda g, ans, x: g * (180 / np.pi))
defvjp("cbrt",         lambda g, ans, x: g / (3 * ans * ans))

# --- remainders ---------------------------------------------------------------------------
defvjp("mod",          lambda g, ans, x, y: unbroadcast(g, x),
                       lambda g, ans, x, y: unbroadcast(-g * er.quotient(x, y, ans), y))
defvjp("fmod",         lambda g, ans, x, y: unbroadcast(g, x),
                       lambda g, ans, x, y: unbroadcast(-g * er.quotient(x, y, ans), y))
defvjp("floor_divide", None, None)

# --- steps, kinks and signs -----------------------------------------------------------
defvjp("ceil",         None)
defvjp_steps("fabs",      lambda g, ans, x: step_cotangent(g, mask(np.sign(concrete(x)), g), x))
defvjp_steps("copysign",  lambda g, ans, x, y: step_cotangent(g, er.copysign_weight(x, y, g), x),
                          None)
defvjp_steps("heaviside", None,  # the value at 0 is h: d/dh = 1 where x = 0
                          lambda g, ans, x, h: step_cotangent(g, mask(concrete(x) == 0, g), h))
defvjp_steps("fmax",      lambda g, ans, x, y: step_cotangent(g, er.fmax_weight(x, y, np.greater, g), x),
                          lambda g, ans, x, y: step_cotangent(g, er.fmax_weight(y, x, np.greater, g), y))
defvjp_steps("fmin",      lambda g, ans, x, y: step_cotangent(g, er.fmax_weight(x, y, np.less, g), x),
                          lambda g, ans, x, y: step_cotangent(g, er.fmax_weight(y, x, np.less, g), y))

# --- float_power, nan_to_num -------------------------------------------------------------
defvjp("float_power",  lambda g, ans, x, y: unbroadcast(g * power_by_base(er.in_float64(x), er.in_float64(y)), x),
                       lambda g, ans, x, y: unbroadcast(g * power_by_exponent(cp.complex_base(er.in_float64(x), ans), er.in_float64(y), ans), y))
# d nan_to_num / dx is 0 at a nan or inf x (NumPy's replacement is a constant there; JAX's too)
defvjp_steps("nan_to_num", lambda g, ans, x, **params: step_cotangent(g, er.finite_weight(x, g), x))

# fmt: on
