"""VJPs of adcore/ops/reductions.py: sum, mean, prod, max, min."""

from __future__ import annotations

from adcore.extend import prod_partials, tie_weights
from adcore_reverse.vjps.table import defvjp
from adcore_reverse.vjps.table import expand as _expand

# fmt: off
# --- reductions ----------------------------------------------------------------------
defvjp("sum",        lambda g, ans, x, axis=None, keepdims=False: _expand(g, x, axis))
defvjp("mean",       lambda g, ans, x, axis=None, keepdims=False: _expand(g, x, axis) * (max(ans.size, 1) / max(x.size, 1)))
defvjp("prod",       lambda g, ans, x, axis=None, keepdims=False: _expand(g, x, axis) * prod_partials(x, ans, axis))
defvjp("max",        lambda g, ans, x, axis=None, keepdims=False: _expand(g, x, axis) * tie_weights(x, ans, axis, g.dtype))
defvjp("min",        lambda g, ans, x, axis=None, keepdims=False: _expand(g, x, axis) * tie_weights(x, ans, axis, g.dtype))

# fmt: on
