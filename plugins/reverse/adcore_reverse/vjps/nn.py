"""VJPs of adcore/ops/nn.py: relu, softmax, log_softmax, logsumexp (sigmoid's and softplus's come
from adcore.extend.elementwise_partials, in elementwise.py)."""

from __future__ import annotations

import adcore.numpy as anp
from adcore.core import concrete
from adcore.extend import kept_shape, mask
from adcore_reverse.vjps.table import defvjp, defvjp_steps
from adcore_reverse.vjps.table import expand as _expand
from adcore_reverse.zeros import step_cotangent

# fmt: off
# --- neural-network ops -------------------------------------------------------------
defvjp_steps("relu",  lambda g, ans, x: step_cotangent(g, mask(concrete(x) > 0, g), x))
defvjp("softmax",     lambda g, ans, x, axis=-1: ans * (g - anp.sum(g * ans, axis=axis, keepdims=True)))
defvjp("log_softmax", lambda g, ans, x, axis=-1: g - anp.exp(ans) * anp.sum(g, axis=axis, keepdims=True))
defvjp("logsumexp",   lambda g, ans, x, axis=None, keepdims=False: _expand(g, x, axis) * anp.exp(x - anp.reshape(ans, kept_shape(x, axis))))
# fmt: on
