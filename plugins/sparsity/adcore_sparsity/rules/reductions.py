"""Sparsity rules of adcore/ops/reductions.py: an output element depends on the elements of its
fibre along the reduced axes (params axis, keepdims as NumPy's).

Smooth reductions keep the whole fibre. The order statistics (max, min, ptp, median, quantile,
percentile) keep, at a point, the elements they pick (ties: every tied element, as the derivative
splits among them), and the whole fibre in a global pattern; they are piecewise linear, so their
order is "linear". sum's and mean's where= mask and the NaNs nansum and nanmean skip are kept out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from adcore.extend import tie_weights
from adcore.ops.ordering import quantile_weights, to_rows
from adcore.ops.reductions import reduced_count
from adcore_sparsity.extend import SparsityRule, fibres, normalize_axes, readable, reduced, reduction
from adcore_sparsity.rules.table import defsparsity


def along(x: Any, axis: Any) -> tuple[int, ...]:
    """The axes a reduction over `axis` reduces x along (None: all; a 0-d x has none)."""
    return normalize_axes(axis, np.ndim(x)) if np.ndim(x) else ()


def selecting(keep: Callable[..., Any], order: str = "linear", exact: bool = True) -> SparsityRule:
    """A reduction whose output element depends on the elements of its fibre where
    `keep(ans, x, **params)` holds (broadcastable to x's shape; True: all of them)."""

    def dependencies(ans: Any, x: Any, **params: Any) -> tuple:
        axis = params.get("axis")
        return (reduced(np.shape(x), along(x, axis), np.size(ans), keep(ans, x, **params)),)

    return SparsityRule(dependencies, order, exact)


# --- which elements of a fibre the derivative reaches, at a point ---------------------------


def unmasked(
    ans: Any, x: Any, axis: Any = None, keepdims: bool = False, dtype: Any = None, where: Any = True
):
    """sum's and mean's where=: the selected elements only (a mask read from a traced value is a
    global pattern's Condition: every element)."""
    return where if where is not True and readable(where) else True


def not_nan(ans: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """nansum and nanmean: a NaN element is skipped (derivative 0)."""
    return ~np.isnan(x) if readable(x) else True


def ties(ans: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """max and min: the elements equal to the result (k tied ones get 1/k each)."""
    return tie_weights(x, ans, axis, np.float64) != 0 if readable(x, ans) else True


def extremes(ans: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """ptp = max - min: the maxima and the minima, ties included."""
    if not readable(x):
        return True
    x = np.asarray(x)
    highest = np.max(x, axis=axis, keepdims=True)
    lowest = np.min(x, axis=axis, keepdims=True)
    return (tie_weights(x, highest, axis, np.float64) != 0) | (tie_weights(x, lowest, axis, np.float64) != 0)


def spread(order: str = "nonlinear") -> SparsityRule:
    """var and std: the whole fibre; nothing for fibres of one element (var is 0 there, for every
    x; std's derivative is 0 there by abs'(0)'s convention)."""

    def dependencies(ans: Any, x: Any, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> tuple:
        if reduced_count(x, axis) == 1:
            return (None,)
        return (reduced(np.shape(x), along(x, axis), np.size(ans)),)

    return SparsityRule(dependencies, order, True)


def _average(
    ans: Any, a: Any, weights: Any, axis: Any = None, keepdims: bool = False, returned: bool = False
):
    """sum(a * w) / sum(w): each output element depends on its fibre of a and on the weights
    laid over that fibre (1-d weights lie along the int axis: all of them)."""
    from scipy import sparse

    shape, axes, out = np.shape(a), along(a, axis), np.size(ans)
    by_a = reduced(shape, axes, out)
    if weights is None:
        return by_a, None
    w_shape = np.shape(weights)
    if w_shape != shape:  # 1-d weights along `axis`
        w_shape = tuple(w_shape[0] if i == axes[0] else 1 for i in range(len(shape)))
    w_at = np.broadcast_to(np.arange(np.size(weights)).reshape(w_shape), shape)
    fibre = fibres(shape, axes)
    by_w = sparse.coo_array(
        (np.ones(fibre.size), (fibre.ravel(), w_at.ravel())), shape=(out, np.size(weights))
    ).tocsr()
    return by_a, by_w


def quantile_of(scale: float | None) -> Callable[..., tuple]:
    """median (scale None: q = 0.5), quantile (scale 1) and percentile (scale 100): output
    (q, fibre) depends on the elements of the fibre holding the two order statistics it
    interpolates (those with non-zero weight), at a point; on the whole fibre in a global pattern."""

    def dependencies(ans: Any, x: Any, q: Any = 0.5, axis: Any = None, method: str = "linear", **params: Any):
        from scipy import sparse

        size = np.size(x)
        position = np.asarray(to_rows(np.arange(size).reshape(np.shape(x)), axis))  # (m, n)
        fraction = np.asarray(q, dtype=np.float64) / (scale or 1.0)
        m, n = position.shape
        if readable(x):
            reached = quantile_weights(np.asarray(x), fraction, axis, method, np.float64) != 0  # (nq, m, n)
        else:
            reached = np.ones((max(fraction.size, 1), m, n), dtype=bool)
        qi, row, j = np.nonzero(reached)
        matrix = sparse.coo_array(
            (np.ones(qi.size), (qi * m + row, position[row, j])), shape=(np.size(ans), size)
        )
        return (matrix.tocsr(),)

    return dependencies


def _median(ans: Any, x: Any, axis: Any = None, keepdims: bool = False) -> tuple:
    return quantile_of(None)(ans, x, 0.5, axis)


# fmt: off
# --- reductions ----------------------------------------------------------------------
defsparsity("sum",        selecting(unmasked))
defsparsity("mean",       selecting(unmasked))
# not exact: a fibre holding two zeros has every first derivative 0, a lone zero all but its own,
# yet the second derivatives there are not 0, so the pattern keeps them
defsparsity("prod",       reduction("nonlinear", exact=False))
defsparsity("max",        selecting(ties))
defsparsity("min",        selecting(ties))
defsparsity("var",        spread())
defsparsity("std",        spread())
defsparsity("ptp",        selecting(extremes))
defsparsity("average",    SparsityRule(_average, "nonlinear", True))
defsparsity("nansum",     selecting(not_nan))
defsparsity("nanmean",    selecting(not_nan))
defsparsity("median",     SparsityRule(_median, "linear", True))
defsparsity("quantile",   SparsityRule(quantile_of(1.0), "linear", True))
defsparsity("percentile", SparsityRule(quantile_of(100.0), "linear", True))
# fmt: on
