"""Structural zeros: positions of a cotangent that `where` or a step proved zero, kept through
elementwise nodes and the ops that only move elements.

`where(c, x, y)` never uses x where c is false, so the result does not depend on x there,
and x's cotangent at those positions is exactly zero whatever x's own derivative is (an
inf from log at 0, a nan from sin(x)/x at 0). The same holds where a step's derivative is 0
(relu, clip, maximum's loser, nan_to_num at a non-finite x: `step_cotangent`). The backward
pass keeps such a boolean mask with the cotangent through elementwise nodes (each output
position depends only on the same input positions), zeroing those positions of the inputs'
cotangents so `0 * inf = nan` never appears there, and through the ops in MOVES (reshape,
transpose, broadcast_to, tile, stack, getitem, pad, sum, ...), whose VJP only copies or adds
cotangent entries: an input position is a structural zero when everything it receives is
(`moved_zeros`). At any other node the mask is dropped: its nan, if any, remains (as in
JAX). The mask travels with the cotangent as one value, Masked, which only `where` and the
steps' rules make, so a graph without one pays one class check per cotangent.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

import adcore.numpy as anp
from adcore.core import Tracer, concrete, plain_numbers
from adcore.extend import times_step, unbroadcast
from adcore.extend.rules import all_finite
from adcore.registry import JointRules


class Masked(NamedTuple):
    """A cotangent with the positions (`zeros`, bool, the cotangent's shape) known to be
    structurally zero: a rule returns one, the backward pass carries it to the next node."""

    cotangent: Any
    zeros: np.ndarray


def plain(g: Any) -> Any:
    """The cotangent itself, without what is known of its zeros."""
    return g.cotangent if g.__class__ is Masked else g


def total(a: Any, b: Any) -> Any:
    """a + b for cotangents: a structural zero only where it is one in both."""
    if a.__class__ is Masked:
        if b.__class__ is Masked:
            return Masked(a.cotangent + b.cotangent, a.zeros & b.zeros)
        return a.cotangent + b
    return a + b.cotangent if b.__class__ is Masked else a + b


def input_zeros(node: Any, known_zero: np.ndarray) -> list | None:
    """For a node whose output cotangent is zero at `known_zero`: per input of this sweep, its
    structural zeros, as (positions, moved); None where nothing is known (see with_zeros)."""
    op, trace, rules = node._op, node._trace, node._vjps
    sweep = [getattr(a, "_trace", None) is trace and a.requires_grad for a in node._args]
    if op.name in MOVES:  # the input cotangents gather g's entries, zero at known_zero
        return moved_zeros(rules, known_zero, node._ans, node._primals, node._params, sweep)
    if not op.elementwise:
        every = _all(known_zero)
        if not _some(every):
            return None  # positions no longer line up with the inputs'
        # no output position reaches the result: no input one does (under vmap, in the examples
        # whose every position is zero; the others' all-False masks zero nothing)
        known_zero = every if isinstance(every, Tracer) else np.ones((), bool)
    zeros = [None] * len(sweep)
    for i, a in enumerate(node._args):
        if sweep[i]:
            shape = a.value.shape
            if known_zero.ndim == 0:
                mask = np.broadcast_to(known_zero, shape)
            else:
                mask = unbroadcast_mask(known_zero, shape)
            zeros[i] = (mask, False) if _some(_any(mask)) else None
    return zeros


def with_zeros(gi: Any, zeros: tuple | None) -> Any:
    """An input's cotangent `gi` with the structural zeros its node passes on: the moved ones
    replace gi's own; others are set to zero in gi (no 0 * inf there) and join gi's own."""
    if zeros is None:
        return gi
    mask, moved = zeros
    if moved:
        return plain(gi) if mask is None else Masked(plain(gi), mask)
    if gi.__class__ is Masked:
        return Masked(zero_at(gi.cotangent, mask), gi.zeros | mask)
    return Masked(zero_at(gi, mask), mask)


def where_branch(g: Any, ans: Any, c: Any, branch: Any, taken_where: bool) -> Any:
    """where's cotangent for one branch (taken where c is `taken_where`): g there, and a
    structural zero elsewhere."""
    c = concrete(c)
    chosen = np.broadcast_to(
        c.astype(bool) if isinstance(c, Tracer) else np.asarray(c, dtype=bool), getattr(ans, "shape", ())
    )
    zeros = ~chosen if taken_where else chosen
    cotangent = unbroadcast(anp.where(zeros, 0.0, g), branch)
    if not _some(_any(zeros)):
        return cotangent
    return Masked(cotangent, unbroadcast_mask(zeros, getattr(branch, "shape", ())))


def step_cotangent(g: Any, weight: np.ndarray, target: Any) -> Any:
    """The cotangent `g * weight` of a step's input `target` (weight concrete: 0/1, or 0.5 on a tie),
    selected rather than multiplied, with the positions where weight is 0 marked structurally zero:
    a nan or inf cotangent there, or one met further down (log's g / 0), contributes nothing."""
    zeros = (weight if isinstance(weight, Tracer) else np.asarray(weight)) == 0
    cotangent = unbroadcast(times_step(g, weight, zeros), target)
    if not _some(_any(zeros)):
        return cotangent
    zeros = np.broadcast_to(zeros, np.broadcast_shapes(zeros.shape, np.shape(g)))
    return Masked(cotangent, unbroadcast_mask(zeros, np.shape(target)))


def moved_zeros(
    rules: Any, known_zero: np.ndarray, ans: Any, inputs: tuple, params: dict, sweep: list
) -> list:
    """Per input of a MOVES op (where `sweep`), (the positions whose cotangent only gathers
    structural zeros, True), None if none: its VJP (coefficients 0 or 1, no cancelling) applied
    to the indicator of the other positions is 0 there."""
    reach = np.broadcast_to(~known_zero, np.shape(ans)).astype(np.float64)
    joint = rules.joint(reach, ans, *inputs, **params) if rules.__class__ is JointRules else None
    zeros = [None] * len(sweep)
    for i, wanted in enumerate(sweep):
        if wanted and rules[i] is not None:
            gathered = rules[i](reach, ans, *inputs, **params) if joint is None else joint[i]
            gathered = concrete(gathered)
            zi = (gathered if isinstance(gathered, Tracer) else np.asarray(gathered)) == 0
            if isinstance(known_zero, Tracer):
                # under vmap, an example whose mask is all False (kept for the others') has no
                # zeros to move: alone it had no mask, so nothing here, unreached positions included
                zi = zi & _any(known_zero)
            zeros[i] = (zi if _some(_any(zi)) else None, True)
    return zeros


def _any(mask: Any) -> Any:
    """mask.any(); under vmap (a batch of masks), each example's."""
    return np.any(mask) if isinstance(mask, Tracer) else mask.any()


def _all(mask: Any) -> Any:
    """mask.all(); under vmap (a batch of masks), each example's."""
    return np.all(mask) if isinstance(mask, Tracer) else mask.all()


def _some(flag: Any) -> bool:
    """A flag of the mask (_any, _all) as one bool: under vmap (a batch of flags), whether any
    example's is set. The mask is then kept for the whole batch: an example without zeros
    carries an all-False mask, which zeroes nothing, as no mask (moved_zeros keeps it so), and
    the batch is not converted (vmap would loop over the examples)."""
    return bool(plain_numbers(flag).any()) if isinstance(flag, Tracer) else bool(flag)


# The ops whose VJP only copies, moves or adds cotangent entries (each input entry a sum of output
# entries, with weight 1, or a positive one: mean): structural zeros pass through them (moved_zeros).
MOVES = frozenset(
    {
        "reshape", "transpose", "swapaxes", "moveaxis", "rollaxis", "broadcast_to", "expand_dims",
        "squeeze", "ravel", "atleast_1d", "atleast_2d", "atleast_3d", "getitem", "scatter_add",
        "take", "take_along_axis", "concatenate", "stack", "tile", "repeat", "pad", "flip",
        "flipud", "fliplr", "rot90", "roll", "diag", "diagonal", "diagflat", "tril", "triu",
        "astype", "sum", "mean", "cumsum",
    }
)  # fmt: skip


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
    """g with the positions in `zeros` set to 0 (traced when g is, so higher orders see it too).

    g is a rule's output for a cotangent that is 0 at `zeros`, linear in it: 0 there unless the
    rule's factor is inf or nan. So a finite g is returned as it is (a select by a random mask
    costs as much as 30 products)."""
    if all_finite(g):
        return g
    if g.__class__ is np.ndarray:  # a plain cotangent: no op to record
        return np.where(zeros, 0.0, g)
    return anp.where(zeros, 0.0, g)
