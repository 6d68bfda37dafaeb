"""The remainders: mod, fmod and floor_divide, elementwise ops with jumps where x is a multiple of y
(docs/conventions.md); their samples keep x / y clear of the jumps."""

from __future__ import annotations

import numpy as np

from adcore.ops.elementwise import distance_to_integer, elementwise_op, jacobian_diag
from adcore.spec import NONZERO, REAL, Domain, Kink, Sample


def _quotient_distance(x, y):
    """How far x is from a jump of mod, fmod and floor_divide (a multiple of y), and y from 0."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        across = np.abs(y) * distance_to_integer(x / y)
    return np.minimum(np.nan_to_num(across, nan=0.0), np.abs(y))


# Pairs away from the jumps: x / y = k + f, k an integer in [-2, 2] and |f| in [0.2, 0.8]; one input
# broadcasts over the other, which has the full shape.
_QUOTIENT_SHAPES = (
    ((), ()),
    ((3,), (3,)),
    ((2, 2), (2, 1)),
    ((2, 3), ()),
    ((2, 3), (3,)),
    ((2, 1), (2, 2)),
    ((0,), ()),
)


def _quotient_samples(rng: np.random.Generator, dtype) -> list[Sample]:
    samples = []
    for sx, sy in _QUOTIENT_SHAPES:
        full = np.broadcast_shapes(sx, sy)
        q = rng.integers(-2, 3, size=full) + rng.choice([-1, 1], size=full) * rng.uniform(0.2, 0.8, size=full)
        if sx == full:  # y drawn, x placed at y * q
            y = NONZERO.draw(rng, sy, np.float64)
            x = y * q
        else:  # x drawn, y placed at x / q
            x = Domain(-2.0, 2.0, away_from_zero=0.5).draw(rng, sx, np.float64)
            y = x / q
        samples.append(Sample((np.asarray(x, dtype=dtype), np.asarray(y, dtype=dtype))))
    return samples


mod = elementwise_op(
    "mod",
    np.mod,
    REAL,
    NONZERO,
    samples=_quotient_samples,
    aliases=("remainder",),  # np.remainder is np.mod; x % y on a traced value
    kinks=(
        Kink(
            ([2.0, -3.0, 1.0], [1.0, 2.0, -0.5]),
            (jacobian_diag(1, 1, 1), jacobian_diag(-2, 2, 2)),
            why="at a jump: d/dx = 1, d/dy = -floor_divide(x, y), on the side NumPy's value is",
        ),
    ),
    kink_distance=_quotient_distance,
    doc="x - y floor(x / y): d/dx = 1, d/dy = -floor(x / y); jumps where x / y is an integer",
)


fmod = elementwise_op(
    "fmod",
    np.fmod,
    REAL,
    NONZERO,
    samples=_quotient_samples,
    kinks=(
        Kink(
            ([2.0, -3.0, 1.0], [1.0, 2.0, -0.5]),
            (jacobian_diag(1, 1, 1), jacobian_diag(-2, 1, 2)),
            why="at a jump: d/dx = 1, d/dy = -trunc(x / y), on the side NumPy's value is",
        ),
    ),
    kink_distance=_quotient_distance,
    doc="x - y trunc(x / y): d/dx = 1, d/dy = -trunc(x / y); jumps where x / y is a nonzero integer",
)


floor_divide = elementwise_op(
    "floor_divide",
    np.floor_divide,
    REAL,
    NONZERO,
    samples=_quotient_samples,
    kinks=(
        Kink(
            ([2.0, -3.0], [1.0, 2.0]),
            (jacobian_diag(0, 0), jacobian_diag(0, 0)),
            why="a step: 0, also at the jumps",
        ),
    ),
    kink_distance=_quotient_distance,
    doc="x // y: zero derivative (a step), also at the jumps, as floor",
)
