"""VJPs of adcore/ops/shapes.py and rearrangements.py: transpose, reshape, broadcasting, indexing,
concatenate, stack, the ops that move elements (their transposes, or a scatter_add through the op's
source-index map), astype."""

from __future__ import annotations

import numpy as np

import adcore.numpy as anp
from adcore import ops
from adcore.extend import unbroadcast
from adcore.ops import complex_parts as cp
from adcore.ops.rearrangements import axes_permutation, source_index
from adcore_reverse.vjps.table import defvjp, defvjp_joint


def _transpose_vjp(g, ans, x, axes=None):
    if axes is None:
        return anp.transpose(g)
    return anp.transpose(g, tuple(int(i) for i in np.argsort([a % x.ndim for a in axes])))


def _concatenate_vjps(g, ans, *xs, axis=0):
    ax = axis % ans.ndim
    lead, cotangents, end = (slice(None),) * ax, [], 0
    for x in xs:
        start, end = end, end + np.shape(x)[ax]  # a constant input may be a list
        cotangents.append(anp.getitem(g, index=lead + (slice(start, end),)))
    return cotangents


def _stack_vjps(g, ans, *xs, axis=0):
    lead = (slice(None),) * (axis % ans.ndim)
    return [anp.getitem(g, index=lead + (i,)) for i in range(len(xs))]


# fmt: off
# --- shapes and indexing ------------------------------------------------------------
defvjp("transpose",    _transpose_vjp)
defvjp("reshape",      lambda g, ans, x, shape: anp.reshape(g, x.shape))
defvjp("broadcast_to", lambda g, ans, x, shape: unbroadcast(g, x))
defvjp("expand_dims",  lambda g, ans, x, axis: anp.reshape(g, x.shape))
defvjp("squeeze",      lambda g, ans, x, axis=None: anp.reshape(g, x.shape))
defvjp("getitem",      lambda g, ans, x, index: anp.scatter_add(g, index=index, shape=x.shape))
defvjp("scatter_add",  lambda g, ans, v, index, shape: unbroadcast(anp.getitem(g, index=index), v))
# joint rules (hookspecs.Joint): every input's cotangent from one call, where per-input rules
# each reading all k inputs would cost k^2 (a stack of 4096 traced rows: 170 ms)
defvjp_joint("concatenate", _concatenate_vjps)
defvjp_joint("stack",       _stack_vjps)

# fmt: on


# --- ops that move elements (adcore.ops.rearrangements.source_index) -------------------------------------
def _scatter_vjp(name):
    """The VJP of an op that only moves elements: the cotangent of each output element added to
    the input element it came from (repeated ones accumulate; constants send nothing)."""
    impl = getattr(ops, name).impl

    def vjp(g, ans, x, **params):
        n = int(np.prod(x.shape, dtype=int))
        source = source_index(impl, x.shape, params).reshape(-1) % (n + 1)  # constants land at n
        summed = anp.scatter_add(anp.reshape(g, (-1,)), index=(source,), shape=(n + 1,))
        return anp.reshape(anp.getitem(summed, index=(slice(0, n),)), x.shape)

    return vjp


def _permute_vjp(name):
    """The VJP of an op that only reorders axes: the inverse permutation."""
    impl = getattr(ops, name).impl

    def vjp(g, ans, x, **params):
        order = axes_permutation(impl, x.ndim, params)
        return anp.transpose(g, tuple(int(a) for a in np.argsort(order)))

    return vjp


def _reshape_vjp(g, ans, x, **params):
    return anp.reshape(g, x.shape)


def _ravel_vjp(g, ans, x, order="C"):
    return anp.reshape(g, x.shape) if order == "C" else _scatter_vjp("ravel")(g, ans, x, order=order)


def _triangle_vjp(name):
    """tril's and triu's VJP is the op itself on a matrix (it masks the cotangent alike)."""
    op = getattr(ops, name)
    scatter = _scatter_vjp(name)

    def vjp(g, ans, x, k=0):
        return op(g, k=k) if x.ndim >= 2 else scatter(g, ans, x, k=k)  # a 1-d x is broadcast

    return vjp


def _tiled_shape(x, reps):
    """tile's reps and x's shape, both padded with leading 1s to the output's number of axes."""
    reps = tuple(int(r) for r in np.atleast_1d(reps))
    ndim = max(len(reps), x.ndim)
    return (1,) * (ndim - len(reps)) + reps, (1,) * (ndim - x.ndim) + tuple(x.shape)


def _tile_vjp(g, ans, x, reps):
    # the output's axis i is reps[i] copies of x's: split each into (copy, element), sum the copies
    reps, shape = _tiled_shape(x, reps)
    split = tuple(n for pair in zip(reps, shape) for n in pair)
    return anp.reshape(anp.sum(anp.reshape(g, split), axis=tuple(range(0, 2 * len(reps), 2))), x.shape)


def _repeat_vjp(g, ans, x, repeats, axis=None):
    if np.ndim(repeats) and np.size(repeats) != 1:  # a count per element: scatter them back
        return _scatter_vjp("repeat")(g, ans, x, repeats=repeats, axis=axis)
    shape = (int(np.prod(x.shape, dtype=int)),) if axis is None else tuple(x.shape)
    ax = 0 if axis is None else axis % x.ndim
    split = shape[: ax + 1] + (int(np.reshape(repeats, -1)[0]),) + shape[ax + 1 :]
    return anp.reshape(anp.sum(anp.reshape(g, split), axis=ax + 1), x.shape)  # sum each run of copies


def _pad_vjp(g, ans, x, pad_width, mode="constant", **params):
    if mode != "constant":  # edge, reflect, ...: the copies scatter back onto their sources
        return _scatter_vjp("pad")(g, ans, x, pad_width=pad_width, mode=mode, **params)
    pairs = np.broadcast_to(np.asarray(pad_width, dtype=int), (x.ndim, 2))
    return anp.getitem(g, index=tuple(slice(int(b), int(b) + n) for (b, _), n in zip(pairs, x.shape)))


def _roll_vjp(g, ans, x, shift, axis=None):
    return anp.roll(g, shift=_negated(shift), axis=axis)


def _negated(shift):
    back = np.negative(shift)
    return int(back) if np.ndim(back) == 0 else tuple(int(s) for s in back)


# fmt: off
defvjp("swapaxes",        _permute_vjp("swapaxes"))
defvjp("moveaxis",        _permute_vjp("moveaxis"))
defvjp("rollaxis",        _permute_vjp("rollaxis"))
defvjp("ravel",           _ravel_vjp)
defvjp("atleast_1d",      _reshape_vjp)
defvjp("atleast_2d",      _reshape_vjp)
defvjp("atleast_3d",      _reshape_vjp)
defvjp("diag",            _scatter_vjp("diag"))
defvjp("diagonal",        _scatter_vjp("diagonal"))
defvjp("diagflat",        _scatter_vjp("diagflat"))
defvjp("tril",            _triangle_vjp("tril"))
defvjp("triu",            _triangle_vjp("triu"))
defvjp("flip",            lambda g, ans, x, axis=None: anp.flip(g, axis=axis))
defvjp("flipud",          lambda g, ans, x: anp.flipud(g))
defvjp("fliplr",          lambda g, ans, x: anp.fliplr(g))
defvjp("rot90",           lambda g, ans, x, k=1, axes=(0, 1): anp.rot90(g, k=-k, axes=axes))
defvjp("roll",            _roll_vjp)
defvjp("repeat",          _repeat_vjp)
defvjp("tile",            _tile_vjp)
defvjp("pad",             _pad_vjp)
defvjp("take",            _scatter_vjp("take"))
defvjp("take_along_axis", _scatter_vjp("take_along_axis"))
defvjp("astype",          lambda g, ans, x, dtype: ops.astype(g if cp.is_complex(x) else cp.real_if_complex(g), dtype=x.dtype))

# fmt: on
