"""The kink-point conventions of docs/conventions.md as data: (op, inputs, params, expected Jacobians).

Every rule-based backend must give exactly these values; numeric is not asked, since a
finite difference across a kink is an average by construction (it gives relu'(0) = 0.5).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Kink:
    """op(*inputs, **params) at a kink, and d op / d input for each input, in order."""

    op: str
    inputs: tuple
    jacobians: tuple
    params: dict = field(default_factory=dict)
    why: str = ""


def _diag(*values: float) -> np.ndarray:
    return np.diag(np.array(values, dtype=np.float64))


KINKS: tuple[Kink, ...] = (
    Kink("abs", ([-1.0, 0.0, 2.0],), (_diag(-1, 0, 1),), why="abs'(0) = 0"),
    Kink("sign", ([-2.0, 0.0, 3.0],), (_diag(0, 0, 0),), why="sign' = 0, also at 0"),
    Kink("relu", ([-1.0, 0.0, 1.0],), (_diag(0, 0, 1),), why="relu'(0) = 0"),
    Kink("floor", ([-1.5, 0.0, 1.0, 2.7],), (_diag(0, 0, 0, 0),), why="floor' = 0, also at the jumps"),
    Kink("round", ([-1.5, 0.5, 2.5, 2.7],), (_diag(0, 0, 0, 0),), why="round' = 0, also at the jumps"),
    Kink("maximum", (1.5, 1.5), (np.array(0.5), np.array(0.5)), why="ties split 0.5/0.5"),
    Kink("minimum", (1.5, 1.5), (np.array(0.5), np.array(0.5)), why="ties split 0.5/0.5"),
    Kink("max", ([1.0, 3.0, 3.0],), (np.array([0.0, 0.5, 0.5]),), why="k tied maxima get 1/k each"),
    Kink("min", ([2.0, 1.0, 1.0, 1.0],), (np.array([0.0, 1, 1, 1]) / 3,), why="k tied minima get 1/k each"),
    Kink(
        "max_pool2d",
        ([[1.0, 3.0, 0.0, 0.0], [3.0, 2.0, 0.0, 0.0]],),
        (np.array([[[[0.0, 0.5, 0, 0], [0.5, 0.0, 0, 0]], [[0, 0, 0.25, 0.25], [0, 0, 0.25, 0.25]]]]),),
        {"kernel_size": 2},
        why="a pooling window's k tied maxima get 1/k each (plugin kernels)",
    ),
    Kink(
        "clip",
        ([-1.0, 0.0, 1.0, 2.0],),
        (_diag(1, 1, 1, 0),),
        {"a_min": -1.0, "a_max": 1.0},
        why="clip' = 1 on the closed interval",
    ),
    # points where a rule divides by the input (issue 15, class 4): exact where the limit exists
    Kink(
        "power",
        ([0.0, 0.0, 0.0, 0.0, 2.0], [1.0, 2.0, 3.0, 2.5, 0.0]),
        (_diag(1, 0, 0, 0, 0), _diag(0, 0, 0, 0, np.log(2.0))),
        why="x**y at x = 0 < y: d/dx = y x**(y-1), d/dy = 0 (0**y is 0 near y); at y = 0, d/dx = 0",
    ),
)
