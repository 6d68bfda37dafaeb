"""JVPs of adcore/ops/shapes.py and rearrangements.py: transpose, reshape, broadcasting, indexing,
concatenate, stack, the ops that move elements (the op on the batched tangent, or a gather through
its source-index map), astype."""

from __future__ import annotations

from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore import ops
from adcore.core import concrete
from adcore.extend import batched_axis, lift
from adcore.ops.rearrangements import axes_permutation, source_index
from adcore_forward.jvps.table import batch as _batch
from adcore_forward.jvps.table import defjvp, defjvp_joint
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


def _tangents_or_zeros(ts: list, xs: tuple) -> list:
    t = next(t for t in ts if t is not None)
    return [np.zeros(t.shape[:1] + np.shape(x), dtype=t.dtype) if ti is None else ti for ti, x in zip(ts, xs)]


# Concatenate and stack are linear: the output's tangent is the op on the inputs' tangents (zeros where
# an input carries none), one op, where summing one share per input (each zero outside its input's
# block) costs k full-size tangents for k inputs: quadratic in k. So their rules are joint (hookspecs.Joint).
def _concatenate_jvps(ts, ans, *xs, axis=0):
    return anp.concatenate(_tangents_or_zeros(ts, xs), axis=batched_axis(axis, ans.ndim))


def _stack_jvps(ts, ans, *xs, axis=0):
    return anp.stack(_tangents_or_zeros(ts, xs), axis=batched_axis(axis, ans.ndim))


# fmt: off
# --- shapes and indexing ------------------------------------------------------------
defjvp("transpose",    _transpose_jvp)
defjvp("reshape",      lambda t, ans, x, shape: anp.reshape(t, _batch(t, ans)))
defjvp("broadcast_to", lambda t, ans, x, shape: anp.broadcast_to(lift(t, ans), _batch(t, ans)))
defjvp("expand_dims",  lambda t, ans, x, axis: anp.reshape(t, _batch(t, ans)))
defjvp("squeeze",      lambda t, ans, x, axis=None: anp.reshape(t, _batch(t, ans)))
defjvp("getitem",      _getitem_jvp)
defjvp("scatter_add",  _scatter_add_jvp)
defjvp_joint("concatenate", _concatenate_jvps)
defjvp_joint("stack",       _stack_jvps)

# fmt: on


# --- ops that move elements (adcore.ops.rearrangements.source_index) -------------------------------------
def _gather_jvp(name):
    """The JVP of an op that only moves elements: each output element's tangent is its source
    element's (position -1, a constant such as tril's zeros, reads an appended zero)."""
    impl = getattr(ops, name).impl

    def jvp(t, ans, x, **params):
        source = source_index(impl, x.shape, params)
        flat = anp.reshape(t, (t.shape[0], -1))
        if source.size and source.min() < 0:
            zero = np.zeros((t.shape[0], 1), dtype=t.dtype)
            flat = anp.concatenate([flat, zero], axis=1)
        return anp.getitem(flat, index=(slice(None), source))

    return jvp


def _permute_jvp(name):
    """The JVP of an op that only reorders axes: the same order, after the batch axis."""
    impl = getattr(ops, name).impl

    def jvp(t, ans, x, **params):
        order = axes_permutation(impl, x.ndim, params)
        return anp.transpose(t, (0,) + tuple(a + 1 for a in order))

    return jvp


def _reshape_jvp(t, ans, x, **params):
    return anp.reshape(t, _batch(t, ans))


def _ravel_jvp(t, ans, x, order="C"):
    return anp.reshape(t, _batch(t, ans)) if order == "C" else _gather_jvp("ravel")(t, ans, x, order=order)


def _triangle_jvp(name):
    """tril's and triu's JVP is the op itself on the batched tangent (on its last two axes)."""
    op = getattr(ops, name)
    gather = _gather_jvp(name)

    def jvp(t, ans, x, k=0):
        return op(t, k=k) if x.ndim >= 2 else gather(t, ans, x, k=k)  # a 1-d x is broadcast

    return jvp


def _rot90_jvp(t, ans, x, k=1, axes=(0, 1)):
    return anp.rot90(t, k=k, axes=tuple(a % x.ndim + 1 for a in axes))


def _tile_jvp(t, ans, x, reps):
    reps = tuple(int(r) for r in np.atleast_1d(reps))
    ndim = max(len(reps), x.ndim)
    t = anp.reshape(
        t, t.shape[:1] + (1,) * (ndim - x.ndim) + tuple(x.shape)
    )  # x's axes padded after the batch
    return anp.tile(t, (1,) * (1 + ndim - len(reps)) + reps)


def _repeat_jvp(t, ans, x, repeats, axis=None):
    if np.ndim(repeats) and np.size(repeats) != 1:  # a count per element
        return _gather_jvp("repeat")(t, ans, x, repeats=repeats, axis=axis)
    if axis is None:  # the flattened array's elements repeat
        return anp.repeat(anp.reshape(t, (t.shape[0], -1)), repeats, axis=1)
    return anp.repeat(t, repeats, axis=axis % x.ndim + 1)


def _pad_jvp(t, ans, x, pad_width, mode="constant", **params):
    if mode != "constant":
        return _gather_jvp("pad")(t, ans, x, pad_width=pad_width, mode=mode, **params)
    pairs = np.broadcast_to(np.asarray(pad_width, dtype=int), (x.ndim, 2))
    return anp.pad(t, ((0, 0),) + tuple((int(b), int(a)) for b, a in pairs))  # the constant's tangent is 0


def _roll_jvp(t, ans, x, shift, axis=None):
    if axis is None:  # the flattened array rolls
        rolled = anp.roll(anp.reshape(t, (t.shape[0], -1)), shift=shift, axis=1)
        return anp.reshape(rolled, t.shape)
    return anp.roll(t, shift=shift, axis=batched_axis(axis, x.ndim))


# fmt: off
defjvp("swapaxes",        _permute_jvp("swapaxes"))
defjvp("moveaxis",        _permute_jvp("moveaxis"))
defjvp("rollaxis",        _permute_jvp("rollaxis"))
defjvp("ravel",           _ravel_jvp)
defjvp("atleast_1d",      _reshape_jvp)
defjvp("atleast_2d",      _reshape_jvp)
defjvp("atleast_3d",      _reshape_jvp)
defjvp("diag",            _gather_jvp("diag"))
defjvp("diagonal",        _gather_jvp("diagonal"))
defjvp("diagflat",        _gather_jvp("diagflat"))
defjvp("tril",            _triangle_jvp("tril"))
defjvp("triu",            _triangle_jvp("triu"))
defjvp("flip",            lambda t, ans, x, axis=None: anp.flip(t, axis=batched_axis(axis, x.ndim)))
defjvp("flipud",          lambda t, ans, x: anp.flip(t, axis=1))
defjvp("fliplr",          lambda t, ans, x: anp.flip(t, axis=2))
defjvp("rot90",           _rot90_jvp)
defjvp("roll",            _roll_jvp)
defjvp("repeat",          _repeat_jvp)
defjvp("tile",            _tile_jvp)
defjvp("pad",             _pad_jvp)
defjvp("take",            _gather_jvp("take"))
defjvp("take_along_axis", _gather_jvp("take_along_axis"))
defjvp("astype",          lambda t, ans, x, dtype: ops.astype(t, dtype=ans.dtype))

# fmt: on
