"""Structural zeros: positions of a cotangent that `where` proved zero, kept through elementwise nodes.

`where(c, x, y)` never uses x where c is false, so the result does not depend on x there,
and x's cotangent at those positions is exactly zero whatever x's own derivative is (an
inf from log at 0, a nan from sin(x)/x at 0). The backward pass keeps such a boolean mask
with the cotangent through elementwise nodes (each output position depends only on the
same input positions) and zeroes those positions of the inputs' cotangents, so
`0 * inf = nan` never appears there. At any other node the mask is dropped: its nan, if
any, remains (as in JAX). Only `where` makes masks (its rules are MaskingRules), so a graph without one pays one
check per node.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

import adcore.numpy as anp
from adcore.core import concrete
from adcore.extend import unbroadcast


class Masked(NamedTuple):
    """A cotangent with the positions (`zeros`, bool, the cotangent's shape) known to be
    structurally zero; a rule returns one, the backward pass unpacks it."""

    cotangent: Any
    zeros: np.ndarray


class MaskingRules(tuple):
    """An op's VJP rules (one per input) some of which may return Masked: the backward pass
    looks for structural zeros only at such nodes and below them."""


def where_branch(g: Any, ans: Any, c: Any, branch: Any, taken_where: bool) -> Any:
    """where's cotangent for one branch (taken where c is `taken_where`): g there, and a
    structural zero elsewhere."""
    chosen = np.broadcast_to(np.asarray(concrete(c), dtype=bool), getattr(ans, "shape", ()))
    zeros = ~chosen if taken_where else chosen
    cotangent = unbroadcast(anp.where(zeros, 0.0, g), branch)
    if not zeros.any():
        return cotangent
    return Masked(cotangent, unbroadcast_mask(zeros, getattr(branch, "shape", ())))


def unbroadcast_mask(zeros: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The positions of an input of `shape` all of whose broadcast copies are structural zeros."""
    if zeros.shape == shape:
        return zeros
    lead = zeros.ndim - len(shape)
    if lead:
        zeros = zeros.all(axis=tuple(range(lead)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and zeros.shape[i] != 1)
    if axes:
        zeros = zeros.all(axis=axes, keepdims=True)
    return zeros.reshape(shape)


def zero_at(g: Any, zeros: np.ndarray) -> Any:
    """g with the positions in `zeros` set to 0 (traced when g is, so higher orders see it too)."""
    return anp.where(zeros, 0.0, g)
