"""VJPs of adcore/ops/shapes.py: transpose, reshape, broadcasting, indexing, concatenate, stack."""

from __future__ import annotations

import numpy as np

import adcore.numpy as anp
from adcore.extend import unbroadcast
from adcore_reverse.vjps.table import defvjp, defvjp_variadic


def _transpose_vjp(g, ans, x, axes=None):
    if axes is None:
        return anp.transpose(g)
    return anp.transpose(g, tuple(int(i) for i in np.argsort([a % x.ndim for a in axes])))


def _concatenate_vjp(i, g, ans, *xs, axis=0):
    ax = axis % ans.ndim
    start = int(np.sum([x.shape[ax] for x in xs[:i]], dtype=int))
    return anp.getitem(g, index=(slice(None),) * ax + (slice(start, start + xs[i].shape[ax]),))


def _stack_vjp(i, g, ans, *xs, axis=0):
    return anp.getitem(g, index=(slice(None),) * (axis % ans.ndim) + (i,))


# fmt: off
# --- shapes and indexing ------------------------------------------------------------
defvjp("transpose",    _transpose_vjp)
defvjp("reshape",      lambda g, ans, x, shape: anp.reshape(g, x.shape))
defvjp("broadcast_to", lambda g, ans, x, shape: unbroadcast(g, x))
defvjp("expand_dims",  lambda g, ans, x, axis: anp.reshape(g, x.shape))
defvjp("squeeze",      lambda g, ans, x, axis=None: anp.reshape(g, x.shape))
defvjp("getitem",      lambda g, ans, x, index: anp.scatter_add(g, index=index, shape=x.shape))
defvjp("scatter_add",  lambda g, ans, v, index, shape: unbroadcast(anp.getitem(g, index=index), v))
defvjp_variadic("concatenate", _concatenate_vjp)
defvjp_variadic("stack",       _stack_vjp)

# fmt: on
