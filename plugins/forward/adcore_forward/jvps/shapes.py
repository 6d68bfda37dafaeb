"""JVPs of adcore/ops/shapes.py: transpose, reshape, broadcasting, indexing, concatenate, stack."""

from __future__ import annotations

from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore.core import concrete
from adcore.extend import batched_axis, lift
from adcore_forward.jvps.table import batch as _batch
from adcore_forward.jvps.table import defjvp, defjvp_variadic
from adcore_forward.jvps.table import lift_to as _lift_to
from adcore_forward.jvps.table import move_axis as _move_axis


def _transpose_jvp(t, ans, x, axes=None):
    order = range(x.ndim - 1, -1, -1) if axes is None else (a % x.ndim for a in axes)
    return anp.transpose(t, (0,) + tuple(a + 1 for a in order))


def _as_tuple(index: Any) -> tuple:
    return index if isinstance(index, tuple) else (index,)


def _advanced_axes_first(index: tuple) -> int:
    """Where NumPy puts the batch axis of t[:, *index]: after the advanced-index axes when
    the advanced indices (arrays, and integers among them) are not next to each other,
    since NumPy then moves those axes to the front; else first (0)."""
    if not any(isinstance(i, (np.ndarray, list)) for i in index):
        return 0
    positions = [k for k, i in enumerate(index) if isinstance(i, (np.ndarray, list, int, np.integer))]
    if positions == list(range(positions[0], positions[-1] + 1)):
        return 0
    shapes = [
        np.shape(np.nonzero(i)[0]) if np.asarray(i).dtype == bool else np.shape(i)
        for i in index
        if isinstance(i, (np.ndarray, list, int, np.integer))
    ]
    return len(np.broadcast_shapes(*shapes))


def _getitem_jvp(t, ans, x, index):
    index = _as_tuple(index)
    out = anp.getitem(t, (slice(None),) + index)
    k = _advanced_axes_first(index)
    return out if k == 0 else _move_axis(out, k, 0)


def _scatter_add_jvp(t, ans, v, index, shape):
    index = _as_tuple(index)
    region = np.shape(concrete(ans)[index])  # where v lands, which v broadcasts to
    batched_shape = t.shape[:1] + tuple(shape)
    t = _lift_to(t, len(region))
    k = _advanced_axes_first(index)
    if k:
        t = _move_axis(t, 0, k)
    return anp.scatter_add(t, index=(slice(None),) + index, shape=batched_shape)


def _concatenate_jvp(i, t, ans, *xs, axis=0):
    # the output's tangent is zero outside input i's block
    parts = [t if j == i else np.zeros(t.shape[:1] + x.shape, dtype=t.dtype) for j, x in enumerate(xs)]
    return anp.concatenate(parts, axis=batched_axis(axis, ans.ndim))


def _stack_jvp(i, t, ans, *xs, axis=0):
    parts = [t if j == i else np.zeros(t.shape, dtype=t.dtype) for j in range(len(xs))]
    return anp.stack(parts, axis=batched_axis(axis, ans.ndim))


# fmt: off
# --- shapes and indexing ------------------------------------------------------------
defjvp("transpose",    _transpose_jvp)
defjvp("reshape",      lambda t, ans, x, shape: anp.reshape(t, _batch(t, ans)))
defjvp("broadcast_to", lambda t, ans, x, shape: anp.broadcast_to(lift(t, ans), _batch(t, ans)))
defjvp("expand_dims",  lambda t, ans, x, axis: anp.reshape(t, _batch(t, ans)))
defjvp("squeeze",      lambda t, ans, x, axis=None: anp.reshape(t, _batch(t, ans)))
defjvp("getitem",      _getitem_jvp)
defjvp("scatter_add",  _scatter_add_jvp)
defjvp_variadic("concatenate", _concatenate_jvp)
defjvp_variadic("stack",       _stack_jvp)

# fmt: on
