"""VJPs of adcore/ops/elementwise.py: arithmetic, exp/log, trigonometry, kinks, clip, where."""

from __future__ import annotations

import numpy as np

import adcore.numpy as anp
from adcore.extend import inside_clip, mask, power_by_base, power_by_exponent, tie_split, unbroadcast
from adcore_reverse.vjps.table import VJPS, defvjp
from adcore_reverse.zeros import MaskingRules, where_branch

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
                     lambda g, ans, x, y: unbroadcast(g * power_by_exponent(x, y, ans), y))
defvjp("square",     lambda g, ans, x: g * 2 * x)
defvjp("reciprocal", lambda g, ans, x: -g * ans * ans)
defvjp("sqrt",       lambda g, ans, x: g * 0.5 / ans)

# --- exponentials and logarithms ----------------------------------------------------
defvjp("exp",        lambda g, ans, x: g * ans)
defvjp("expm1",      lambda g, ans, x: g * (ans + 1))
defvjp("log",        lambda g, ans, x: g / x)
defvjp("log1p",      lambda g, ans, x: g / (1 + x))

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
defvjp("abs",        lambda g, ans, x: g * anp.sign(x))
defvjp("sign",       None)
defvjp("floor",      None)
defvjp("round",      None)
defvjp("maximum",    lambda g, ans, x, y: unbroadcast(g * tie_split(x, y, np.greater, g), x),
                     lambda g, ans, x, y: unbroadcast(g * tie_split(y, x, np.greater, g), y))
defvjp("minimum",    lambda g, ans, x, y: unbroadcast(g * tie_split(x, y, np.less, g), x),
                     lambda g, ans, x, y: unbroadcast(g * tie_split(y, x, np.less, g), y))
defvjp("clip",       lambda g, ans, x, a_min=None, a_max=None: g * mask(inside_clip(x, a_min, a_max), g))
VJPS["where"] = MaskingRules((None,  # untaken positions are structural zeros (zeros.py): no 0 * inf there
                     lambda g, ans, c, x, y: where_branch(g, ans, c, x, taken_where=True),
                     lambda g, ans, c, x, y: where_branch(g, ans, c, y, taken_where=False)))

# fmt: on
