"""VJPs of adcore/ops/elementwise.py and remainders.py: the ops with a derivative stated once
(adcore.extend.elementwise_partials) get the rules built from it; below are the steps and kinks,
whose zero derivatives are structural zeros here (zeros.step_cotangent), selected in forward mode."""

from __future__ import annotations

import numpy as np

import adcore.ops.elementwise_rules as er
from adcore.core import concrete
from adcore.extend import inside_clip, mask, tie_split, vjp_rules
from adcore.extend.elementwise_partials import PARTIALS
from adcore.ops import complex_parts as cp
from adcore_reverse.vjps.table import defvjp, defvjp_steps
from adcore_reverse.zeros import step_cotangent, where_branch

for _op, _partials in PARTIALS.items():
    defvjp(_op, *vjp_rules(*_partials))

# fmt: off
# --- kinks and steps: they select, not multiply ---------------------------------------------
defvjp_steps("abs",       lambda g, ans, x: g * cp.abs_slope(x, ans) if cp.is_complex(x) else step_cotangent(g, mask(np.sign(concrete(x)), g), x))  # conj(x) / |x| on complex x
defvjp_steps("fabs",      lambda g, ans, x: step_cotangent(g, mask(np.sign(concrete(x)), g), x))
defvjp_steps("maximum",   lambda g, ans, x, y: step_cotangent(g, tie_split(x, y, np.greater, g), x),
                          lambda g, ans, x, y: step_cotangent(g, tie_split(y, x, np.greater, g), y))
defvjp_steps("minimum",   lambda g, ans, x, y: step_cotangent(g, tie_split(x, y, np.less, g), x),
                          lambda g, ans, x, y: step_cotangent(g, tie_split(y, x, np.less, g), y))
defvjp_steps("fmax",      lambda g, ans, x, y: step_cotangent(g, er.fmax_weight(x, y, np.greater, g), x),
                          lambda g, ans, x, y: step_cotangent(g, er.fmax_weight(y, x, np.greater, g), y))
defvjp_steps("fmin",      lambda g, ans, x, y: step_cotangent(g, er.fmax_weight(x, y, np.less, g), x),
                          lambda g, ans, x, y: step_cotangent(g, er.fmax_weight(y, x, np.less, g), y))
defvjp_steps("clip",      lambda g, ans, x, a_min=None, a_max=None: step_cotangent(g, mask(inside_clip(x, a_min, a_max), g), x))
defvjp_steps("copysign",  lambda g, ans, x, y: step_cotangent(g, er.copysign_weight(x, y, g), x),
                          None)
defvjp_steps("heaviside", None,  # the value at 0 is h: d/dh = 1 where x = 0
                          lambda g, ans, x, h: step_cotangent(g, mask(concrete(x) == 0, g), h))
# d nan_to_num / dx is 0 at a nan or inf x (NumPy's replacement is a constant there; JAX's too)
defvjp_steps("nan_to_num", lambda g, ans, x, **params: step_cotangent(g, er.finite_weight(x, g), x))
defvjp_steps("where",     None,  # untaken positions are structural zeros (zeros.py): no 0 * inf there
                          lambda g, ans, c, x, y: where_branch(g, ans, c, x, taken_where=True),
                          lambda g, ans, c, x, y: where_branch(g, ans, c, y, taken_where=False))
# fmt: on
