"""JVPs of adcore/ops/elementwise.py: arithmetic, exp/log, trigonometry, kinks, clip, where."""

from __future__ import annotations

import numpy as np

import adcore.numpy as anp
from adcore.core import concrete
from adcore.extend import inside_clip, lift, mask, power_by_base, power_by_exponent, tie_split
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
                     lambda t, ans, x, y: lift(t, ans) * power_by_exponent(x, y, ans))
defjvp("square",     lambda t, ans, x: t * (2 * x))
defjvp("reciprocal", lambda t, ans, x: t * (-ans * ans))
defjvp("sqrt",       lambda t, ans, x: t * (0.5 / ans))

# --- exponentials and logarithms ----------------------------------------------------
defjvp("exp",        lambda t, ans, x: t * ans)
defjvp("expm1",      lambda t, ans, x: t * (ans + 1))
defjvp("log",        lambda t, ans, x: t / x)
defjvp("log1p",      lambda t, ans, x: t / (1 + x))

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
defjvp("abs",        lambda t, ans, x: t * anp.sign(x))
defjvp("sign",       None)
defjvp("floor",      None)
defjvp("round",      None)
defjvp("maximum",    lambda t, ans, x, y: lift(t, ans) * tie_split(x, y, np.greater, t),
                     lambda t, ans, x, y: lift(t, ans) * tie_split(y, x, np.greater, t))
defjvp("minimum",    lambda t, ans, x, y: lift(t, ans) * tie_split(x, y, np.less, t),
                     lambda t, ans, x, y: lift(t, ans) * tie_split(y, x, np.less, t))
defjvp("clip",       lambda t, ans, x, a_min=None, a_max=None: t * mask(inside_clip(x, a_min, a_max), t))
defjvp("where",      None,
                     lambda t, ans, c, x, y: anp.where(concrete(c), lift(t, ans), 0.0),
                     lambda t, ans, c, x, y: anp.where(concrete(c), 0.0, lift(t, ans)))

# fmt: on
