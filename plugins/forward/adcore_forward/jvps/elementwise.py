"""JVPs of adcore/ops/elementwise.py and remainders.py: arithmetic, exp/log, trigonometry, kinks,
clip, where."""

from __future__ import annotations

import numpy as np

import adcore.numpy as anp
import adcore.ops.elementwise_rules as er
from adcore.core import concrete
from adcore.extend import inside_clip, lift, mask, power_by_base, power_by_exponent, tie_split, times_step
from adcore.extend.rules import nan_where_value_is
from adcore.ops import complex_parts as cp
from adcore_forward.jvps.table import defjvp

# fmt: off
# --- arithmetic -------------------------------------------------------------------
defjvp("negative",   lambda t, ans, x: -t)
defjvp("add",        lambda t, ans, x, y: lift(t, ans),
                     lambda t, ans, x, y: lift(t, ans))
defjvp("subtract",   lambda t, ans, x, y: lift(t, ans),
                     lambda t, ans, x, y: -lift(t, ans))
defjvp("multiply",   lambda t, ans, x, y: lift(t, ans) * y,
                     lambda t, ans, x, y: lift(t, ans) * x)
defjvp("divide",     lambda t, ans, x, y: lift(t, ans) / y,
                     lambda t, ans, x, y: lift(t, ans) * (-ans / y))
defjvp("power",      lambda t, ans, x, y: lift(t, ans) * power_by_base(x, y),
                     lambda t, ans, x, y: lift(t, ans) * power_by_exponent(cp.complex_base(x, ans), y, ans))
defjvp("square",     lambda t, ans, x: t * (2 * x))
defjvp("reciprocal", lambda t, ans, x: t * (-ans * ans))
defjvp("sqrt",       lambda t, ans, x: t * (0.5 / ans))

# --- exponentials and logarithms ----------------------------------------------------
defjvp("exp",        lambda t, ans, x: t * ans)
defjvp("expm1",      lambda t, ans, x: t * (ans + 1))
defjvp("log",        lambda t, ans, x: t / nan_where_value_is(x, ans))  # nan at real x < 0, as the value
defjvp("log1p",      lambda t, ans, x: t / (1 + nan_where_value_is(x, ans)))

# --- trigonometric and hyperbolic -------------------------------------------------
defjvp("sin",        lambda t, ans, x: t * anp.cos(x))
defjvp("cos",        lambda t, ans, x: t * -anp.sin(x))
defjvp("tan",        lambda t, ans, x: t * (1 + ans * ans))
defjvp("arcsin",     lambda t, ans, x: t / anp.sqrt(1 - x * x))
defjvp("arccos",     lambda t, ans, x: t / -anp.sqrt(1 - x * x))
defjvp("arctan",     lambda t, ans, x: t / (1 + x * x))
defjvp("arctan2",    lambda t, ans, y, x: lift(t, ans) * (x / (x * x + y * y)),
                     lambda t, ans, y, x: lift(t, ans) * (-y / (x * x + y * y)))
defjvp("sinh",       lambda t, ans, x: t * anp.cosh(x))
defjvp("cosh",       lambda t, ans, x: t * anp.sinh(x))
defjvp("tanh",       lambda t, ans, x: t * (1 - ans * ans))

# --- kinks and steps -----------------------------------------------------------------
defjvp("abs",        lambda t, ans, x: cp.real_if_complex(t * cp.abs_slope(x, ans)) if cp.is_complex(x) else times_step(t, mask(np.sign(concrete(x)), t)))
defjvp("sign",       None)
defjvp("floor",      None)
defjvp("round",      None)
# steps select, not multiply: 0 where the step is 0, even for an inf or nan tangent (times_step)
defjvp("maximum",    lambda t, ans, x, y: times_step(lift(t, ans), tie_split(x, y, np.greater, t)),
                     lambda t, ans, x, y: times_step(lift(t, ans), tie_split(y, x, np.greater, t)))
defjvp("minimum",    lambda t, ans, x, y: times_step(lift(t, ans), tie_split(x, y, np.less, t)),
                     lambda t, ans, x, y: times_step(lift(t, ans), tie_split(y, x, np.less, t)))
defjvp("clip",       lambda t, ans, x, a_min=None, a_max=None: times_step(t, mask(inside_clip(x, a_min, a_max), t)))
defjvp("where",      None,
                     lambda t, ans, c, x, y: anp.where(concrete(c), lift(t, ans), 0.0),
                     lambda t, ans, c, x, y: anp.where(concrete(c), 0.0, lift(t, ans)))

# fmt: on


# === elementwise ops added in issue 17 (conventions at their kinks: docs/conventions.md) ===
# fmt: off
# --- inverse hyperbolic -------------------------------------------------------------
defjvp("arcsinh",      lambda t, ans, x: t / anp.sqrt(x * x + 1))
defjvp("arccosh",      lambda t, ans, x: t / (anp.sqrt(x - 1) * anp.sqrt(x + 1)))  # not sqrt(x*x - 1): complex x
defjvp("arctanh",      lambda t, ans, x: t / (1 - x * nan_where_value_is(x, ans)))

# --- bases 2 and 10, log-sum-exp of two -------------------------------------------------
defjvp("log2",         lambda t, ans, x: t / (nan_where_value_is(x, ans) * er.LN2))
defjvp("log10",        lambda t, ans, x: t / (nan_where_value_is(x, ans) * er.LN10))
defjvp("exp2",         lambda t, ans, x: t * (ans * er.LN2))
defjvp("logaddexp",    lambda t, ans, x, y: lift(t, ans) * er.exp_share(x, y, ans),
                       lambda t, ans, x, y: lift(t, ans) * er.exp_share(y, x, ans))
defjvp("logaddexp2",   lambda t, ans, x, y: lift(t, ans) * er.exp_share(x, y, ans, anp.exp2),
                       lambda t, ans, x, y: lift(t, ans) * er.exp_share(y, x, ans, anp.exp2))

# --- sinc, hypot, angles, cube root ------------------------------------------------------
defjvp("sinc",         lambda t, ans, x: t * er.sinc_slope(x))
defjvp("hypot",        lambda t, ans, x, y: lift(t, ans) * er.hypot_share(x, y, ans),
                       lambda t, ans, x, y: lift(t, ans) * er.hypot_share(y, x, ans))
defjvp("deg2rad",      lambda t, ans, x: t * (np.pi / 180))
defjvp("rad2deg",      lambda t, ans, x: t * (180 / np.pi))
defjvp("cbrt",         lambda t, ans, x: t / (3 * ans * ans))

# --- remainders ---------------------------------------------------------------------------
defjvp("mod",          lambda t, ans, x, y: lift(t, ans),
                       lambda t, ans, x, y: lift(t, ans) * -er.quotient(x, y, ans))
defjvp("fmod",         lambda t, ans, x, y: lift(t, ans),
                       lambda t, ans, x, y: lift(t, ans) * -er.quotient(x, y, ans))
defjvp("floor_divide", None, None)

# --- steps, kinks and signs -----------------------------------------------------------
defjvp("ceil",         None)
defjvp("fabs",         lambda t, ans, x: times_step(t, mask(np.sign(concrete(x)), t)))
defjvp("copysign",     lambda t, ans, x, y: times_step(lift(t, ans), er.copysign_weight(x, y, t)),
                       None)
defjvp("heaviside",    None,  # the value at 0 is h: d/dh = 1 where x = 0
                       lambda t, ans, x, h: times_step(lift(t, ans), mask(concrete(x) == 0, t)))
defjvp("fmax",         lambda t, ans, x, y: times_step(lift(t, ans), er.fmax_weight(x, y, np.greater, t)),
                       lambda t, ans, x, y: times_step(lift(t, ans), er.fmax_weight(y, x, np.greater, t)))
defjvp("fmin",         lambda t, ans, x, y: times_step(lift(t, ans), er.fmax_weight(x, y, np.less, t)),
                       lambda t, ans, x, y: times_step(lift(t, ans), er.fmax_weight(y, x, np.less, t)))

# --- float_power, nan_to_num -------------------------------------------------------------
defjvp("float_power",  lambda t, ans, x, y: lift(t, ans) * power_by_base(er.in_float64(x), er.in_float64(y)),
                       lambda t, ans, x, y: lift(t, ans) * power_by_exponent(cp.complex_base(er.in_float64(x), ans), er.in_float64(y), ans))
# d nan_to_num / dx is 0 at a nan or inf x (NumPy's replacement is a constant there; JAX's too)
defjvp("nan_to_num",   lambda t, ans, x, **params: times_step(t, er.finite_weight(x, t)))

# fmt: on
