"""Step sizes: where the two errors of seed 001 (数值微分) balance.

A difference quotient has two errors. Truncation shrinks with the step h: O(h) for a
one-sided difference, O(h²) for a central one. Round-off grows as h shrinks: f is known
to about ε·|f|, and the quotient divides that by h. Their sum is smallest near

    h ≈ √ε        for forward and backward differences,
    h ≈ ε^(1/3)   for central differences,

with ε the machine epsilon of x's dtype. Variables live on different scales (the seed's
second problem), so each step is multiplied by max(|x|, 1): relative to x when |x| is
large, absolute near zero, where a relative step would vanish. The constant in front is
measured, not guessed (benchmarks/sweep_steps.py: 13 smooth functions at 200 points each,
errors against mpmath). The mean log-error of central differences is flat between a
third and 0.4 of the classic step (0.006 decades apart) and 0.35 decades worse at the
classic step itself; for one-sided differences it is lowest at half the classic step:

    central   ε^(1/3)·max(|x|, 1) / 3    median error 1.7e-11, against 3.5e-11 at the classic step
    forward   √ε·max(|x|, 1) / 2         median error 1.3e-8, against 1.7e-8

Richardson extrapolation cancels the truncation error instead of balancing it, so it
starts from a large step, 2⁻⁴·max(|x|, 1), and halves it, level by level, down to about
the central step (on the same functions, starting at 2⁻³ costs 7% more evaluations for
0.18 more digits, 2⁻⁵ saves 12% and loses 0.12 digits). Beyond |x| = 2 the first step grows
with log |x| only, as 2⁻⁴·2(1 + ln(|x|/2)): a step of |x|/16 is far outside the region where
f is its Taylor series for any f that varies on a scale of its own (sin at x = 1e5 moved by
6250), and there every level agrees on a wrong value and the estimate looks settled. It is
never so small that its last level moves x by fewer than 4 ulps (RICHARDSON_ULPS), so at any
|x| x + h lands at every level; the complex step has no
subtraction, hence no round-off to balance, and uses a step of ε·max(|x|, 1), where the
O(h²) truncation is far below ε.

Each real step is made exactly representable, h = (|x| + h) − |x| in x's dtype, so that
the points x ± h are exactly the points the quotient divides by. A user's `step` (a number, or one
per element of x) replaces the default, or, for richardson, its first level.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore.errors import InvalidInputError

METHODS = ("central", "forward", "backward", "richardson", "complex")

RICHARDSON_FIRST = 2.0**-4  # richardson's first step, times max(|x|, 1)
RICHARDSON_RATIO = 2.0  # each level halves the step
RICHARDSON_KNEE = 2.0  # beyond this |x|, richardson's first step grows with log |x|, not |x|
RICHARDSON_ULPS = 4.0  # richardson's last level moves x by at least this many units in the last place


def relative_step(method: str, eps: float) -> float:
    """The default step for `method`, relative to max(|x|, 1)."""
    if method in ("forward", "backward"):
        return eps ** (1 / 2) / 2
    if method == "central":
        return eps ** (1 / 3) / 3
    if method == "richardson":
        return RICHARDSON_FIRST
    return eps  # complex


def richardson_levels(eps: float) -> int:
    """How many steps richardson may try, halving from 2⁻⁴ down to ε^(1/3) (15 in float64,
    5 in float32); smaller steps only add round-off (and at large |x|, where the first step is
    smaller relative to |x|, the last ones are cut short where x + h no longer moves)."""
    return int(np.ceil(np.log2(RICHARDSON_FIRST / eps ** (1 / 3)))) + 1


def first_step(x: np.ndarray, method: str, step: Any = None) -> np.ndarray:
    """The step for every element of x (richardson: its first, largest step), shape x.shape."""
    eps = float(np.finfo(x.dtype).eps)
    size = np.abs(x.astype(np.float64))
    if step is None and method == "richardson":
        # the last level (halved richardson_levels - 1 times) still moves x by RICHARDSON_ULPS ulps
        lands = RICHARDSON_ULPS * eps * size * RICHARDSON_RATIO ** (richardson_levels(eps) - 1)
        knee = RICHARDSON_KNEE
        scale = np.where(
            size <= knee, np.maximum(size, 1.0), knee * (1 + np.log(np.maximum(size, knee) / knee))
        )
        h = np.maximum(RICHARDSON_FIRST * scale, lands)
    elif step is None:
        h = relative_step(method, eps) * np.maximum(size, 1.0)
    else:
        h = user_step(step, x)
    return h if method == "complex" else representable(x, h)


def representable(x: np.ndarray, h: np.ndarray) -> np.ndarray:
    """(|x| + h) − |x| in x's dtype: the step as it actually lands. It is a multiple of the
    spacing of floats at |x|, no larger than |x| + h, so both x + h and x − h are exact."""
    size = np.abs(x)
    with np.errstate(over="ignore", invalid="ignore"):
        landed = (size + h.astype(x.dtype)) - size
    if np.any(landed == 0):
        j = int(np.flatnonzero(np.asarray(landed == 0).ravel())[0])
        raise InvalidInputError(
            f"backend 'numeric': the step at element {tuple(int(i) for i in np.unravel_index(j, x.shape))} "
            f"(x = {x.ravel()[j].item()!r}) is below the spacing of {x.dtype} numbers there, so x + h == x; "
            "pass a larger step= or leave step out to get the default"
        )
    return landed


def user_step(step: Any, x: np.ndarray) -> np.ndarray:
    """A user step: a positive finite number, or an array of them broadcastable to x.shape."""
    try:
        h = np.broadcast_to(np.asarray(step, dtype=np.float64), x.shape)
    except (TypeError, ValueError) as e:
        raise InvalidInputError(
            f"backend 'numeric': step must be a positive number or an array of them broadcastable to "
            f"the argument's shape {x.shape}, got {step!r}"
        ) from e
    if not np.all(np.isfinite(h) & (h > 0)):
        raise InvalidInputError(f"backend 'numeric': every step must be positive and finite, got {step!r}")
    return h
