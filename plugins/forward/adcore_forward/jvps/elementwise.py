"""JVPs of adcore/ops/elementwise.py and remainders.py: the ops with a derivative stated once
(adcore.extend.elementwise_partials) get the rules built from it; below are the steps and kinks,
whose forward rules select the tangent (times_step) where the reverse ones send structural zeros."""

from __future__ import annotations

import numpy as np

import adcore.numpy as anp
import adcore.ops.elementwise_rules as er
from adcore.core import concrete
from adcore.extend import inside_clip, jvp_rules, lift, mask, tie_split, times_step
from adcore.extend.elementwise_partials import PARTIALS
from adcore.ops import complex_parts as cp
from adcore_forward.jvps.table import defjvp

for _op, _partials in PARTIALS.items():
    defjvp(_op, *jvp_rules(*_partials))

# fmt: off
# --- kinks and steps: 0 where the step is 0, even for an inf or nan tangent (times_step) ------
defjvp("abs",        lambda t, ans, x: cp.real_if_complex(t * cp.abs_slope(x, ans)) if cp.is_complex(x) else times_step(t, mask(np.sign(concrete(x)), t)))
defjvp("fabs",       lambda t, ans, x: times_step(t, mask(np.sign(concrete(x)), t)))
defjvp("maximum",    lambda t, ans, x, y: times_step(lift(t, ans), tie_split(x, y, np.greater, t)),
                     lambda t, ans, x, y: times_step(lift(t, ans), tie_split(y, x, np.greater, t)))
defjvp("minimum",    lambda t, ans, x, y: times_step(lift(t, ans), tie_split(x, y, np.less, t)),
                     lambda t, ans, x, y: times_step(lift(t, ans), tie_split(y, x, np.less, t)))
defjvp("fmax",       lambda t, ans, x, y: times_step(lift(t, ans), er.fmax_weight(x, y, np.greater, t)),
                     lambda t, ans, x, y: times_step(lift(t, ans), er.fmax_weight(y, x, np.greater, t)))
defjvp("fmin",       lambda t, ans, x, y: times_step(lift(t, ans), er.fmax_weight(x, y, np.less, t)),
                     lambda t, ans, x, y: times_step(lift(t, ans), er.fmax_weight(y, x, np.less, t)))
defjvp("clip",       lambda t, ans, x, a_min=None, a_max=None: times_step(t, mask(inside_clip(x, a_min, a_max), t)))
defjvp("copysign",   lambda t, ans, x, y: times_step(lift(t, ans), er.copysign_weight(x, y, t)),
                     None)
defjvp("heaviside",  None,  # the value at 0 is h: d/dh = 1 where x = 0
                     lambda t, ans, x, h: times_step(lift(t, ans), mask(concrete(x) == 0, t)))
# d nan_to_num / dx is 0 at a nan or inf x (NumPy's replacement is a constant there; JAX's too)
defjvp("nan_to_num", lambda t, ans, x, **params: times_step(t, er.finite_weight(x, t)))
defjvp("where",      None,
                     lambda t, ans, c, x, y: anp.where(concrete(c), lift(t, ans), 0.0),
                     lambda t, ans, c, x, y: anp.where(concrete(c), 0.0, lift(t, ans)))
# fmt: on
