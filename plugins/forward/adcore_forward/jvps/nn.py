"""JVPs of adcore/ops/nn.py: sigmoid, relu, softplus, softmax, log_softmax, logsumexp."""

from __future__ import annotations

import adcore.numpy as anp
from adcore.core import concrete
from adcore.extend import batched_axis, kept_shape, mask, times_step
from adcore_forward.jvps.table import defjvp
from adcore_forward.jvps.table import reduce as _reduce

# fmt: off
# --- neural-network ops -------------------------------------------------------------
defjvp("sigmoid",     lambda t, ans, x: t * (ans * (1 - ans)))
defjvp("relu",        lambda t, ans, x: times_step(t, mask(concrete(x) > 0, t)))
defjvp("softplus",    lambda t, ans, x: t * anp.sigmoid(x))
defjvp("softmax",     lambda t, ans, x, axis=-1: ans * (t - anp.sum(t * ans, axis=batched_axis(axis, x.ndim), keepdims=True)))
defjvp("log_softmax", lambda t, ans, x, axis=-1: t - anp.sum(t * anp.exp(ans), axis=batched_axis(axis, x.ndim), keepdims=True))
defjvp("logsumexp",   lambda t, ans, x, axis=None, keepdims=False: _reduce(t, x, axis, keepdims, anp.exp(x - anp.reshape(ans, kept_shape(x, axis)))))
# fmt: on
