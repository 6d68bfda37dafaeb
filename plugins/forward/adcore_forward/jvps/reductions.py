"""JVPs of adcore/ops/reductions.py: sum, mean, prod, max, min."""

from __future__ import annotations

import adcore.numpy as anp
from adcore.extend import batched_axis, prod_partials, tie_weights
from adcore_forward.jvps.table import defjvp
from adcore_forward.jvps.table import reduce as _reduce

# fmt: off
# --- reductions ----------------------------------------------------------------------
defjvp("sum",        lambda t, ans, x, axis=None, keepdims=False: _reduce(t, x, axis, keepdims))
defjvp("mean",       lambda t, ans, x, axis=None, keepdims=False: anp.mean(t, axis=batched_axis(axis, x.ndim), keepdims=keepdims))
defjvp("prod",       lambda t, ans, x, axis=None, keepdims=False: _reduce(t, x, axis, keepdims, prod_partials(x, ans, axis)))
defjvp("max",        lambda t, ans, x, axis=None, keepdims=False: _reduce(t, x, axis, keepdims, tie_weights(x, ans, axis, t.dtype)))
defjvp("min",        lambda t, ans, x, axis=None, keepdims=False: _reduce(t, x, axis, keepdims, tie_weights(x, ans, axis, t.dtype)))

# fmt: on
