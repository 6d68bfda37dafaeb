"""VJPs of adcore/ops/cumulative.py: cumsum, cumprod, diff, sort."""

from __future__ import annotations

import numpy as np

import adcore.numpy as anp
from adcore.core import concrete, plain_numbers
from adcore.ops.cumulative import zero_split
from adcore.ops.ordering import from_rows, inverse, permute_rows, sorting_permutation, to_rows
from adcore_reverse.vjps.table import defvjp


def reverse_cumsum(g, axis):
    """sum of g over each position and the ones after it along `axis`: cumsum's transpose."""
    flip = (slice(None),) * (axis % g.ndim) + (slice(None, None, -1),)
    return anp.getitem(anp.cumsum(anp.getitem(g, index=flip), axis=axis), index=flip)


def _cumsum_vjp(g, ans, x, axis=None, dtype=None):
    if axis is None:
        return anp.reshape(reverse_cumsum(g, 0), x.shape)
    return reverse_cumsum(g, axis)


def _cumprod_vjp(g, ans, x, axis=None, dtype=None):
    if x.ndim == 0:
        return anp.reshape(g, x.shape)  # cumprod of a 0-d x is (1,)
    if axis is None:
        return anp.reshape(_cumprod_vjp(g, ans, anp.reshape(x, (-1,)), 0), x.shape)
    ax = axis % x.ndim
    if not plain_numbers(concrete(x) == 0).any():  # (under vmap: in any example)
        return reverse_cumsum(g * ans, ax) / x
    # with zeros: sum over k >= i of g_k d out_k / d x_i, by the pieces of zero_split
    split = zero_split(x, ax)
    up_to_zero = reverse_cumsum(g * ans, ax) / split.x_before  # i < z
    at_zero = split.before_zero * anp.sum(
        anp.where(split.from_zero, g * split.after_zero, 0.0), axis=ax, keepdims=True
    )
    past_zero = split.zero * _cumprod_vjp(
        g, anp.cumprod(split.rest, axis=ax), split.rest, ax
    )  # 0, x_z's slope
    return (
        anp.where(split.before, up_to_zero, 0.0)
        + anp.where(split.at, at_zero, 0.0)
        + anp.where(split.past, past_zero, 0.0)
    )


def end_length(end, ndim: int, axis: int) -> int:
    """How many positions a prepend or append adds along axis (a scalar adds one)."""
    return 0 if end is None else (1 if np.ndim(end) == 0 else np.shape(end)[axis])


def _diff_vjp(g, ans, x, n=1, axis=-1, prepend=None, append=None):
    ax = axis % max(x.ndim, 1)
    if g.shape[ax] == 0:  # n at least the length (with prepend and append): the output is empty
        return anp.zeros_like(x)
    for _ in range(n):  # the transpose of one difference: -g[i] + g[i-1], padded with zeros at the ends
        zero = anp.zeros_like(anp.getitem(g, index=(slice(None),) * ax + (slice(0, 1),)))
        g = anp.concatenate([zero, g], axis=ax) - anp.concatenate([g, zero], axis=ax)
    start = end_length(prepend, x.ndim, ax)
    return anp.getitem(g, index=(slice(None),) * ax + (slice(start, start + x.shape[ax]),))


def _sort_vjp(g, ans, x, axis=-1, kind=None, stable=None):
    perm = sorting_permutation(x, axis)
    return from_rows(permute_rows(to_rows(g, axis), inverse(perm)), x.shape, axis)


# fmt: off
# --- cumulative and ordering ----------------------------------------------------------
defvjp("cumsum",  _cumsum_vjp)
defvjp("cumprod", _cumprod_vjp)
defvjp("diff",    _diff_vjp)
defvjp("sort",    _sort_vjp)

# fmt: on
