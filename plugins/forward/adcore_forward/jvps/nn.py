"""JVPs of adcore/ops/nn.py: relu, softmax, log_softmax, logsumexp (sigmoid's and softplus's come
from adcore.extend.elementwise_partials, in elementwise.py)."""

from __future__ import annotations

import adcore.numpy as anp
from adcore.core import concrete
from adcore.extend import batched_axis, kept_shape, mask, times_step
from adcore_forward.jvps.table import defjvp
from adcore_forward.jvps.table import reduce as _reduce

# fmt: off
# --- neural-network ops -------------------------------------------------------------
defjvp("relu",        lambda t, ans, x: times_step(t, mask(concrete(x) > 0, t)))
defjvp("softmax",     lambda t, ans, x, axis=-1: ans * (t - anp.sum(t * ans, axis=batched_axis(axis, x.ndim), keepdims=True)))
defjvp("log_softmax", lambda t, ans, x, axis=-1: t - anp.sum(t * anp.exp(ans), axis=batched_axis(axis, x.ndim), keepdims=True))
defjvp("logsumexp",   lambda t, ans, x, axis=None, keepdims=False: _reduce(t, x, axis, keepdims, anp.exp(x - anp.reshape(ans, kept_shape(x, axis)))))
# fmt: on
