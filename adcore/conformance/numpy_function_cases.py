"""Composite cases for the NumPy functions written over ops (adcore/ops/numpy_functions.py) and the
container habits autograd users write (issue 32): trapezoid, interp, gradient, linspace with traced
endpoints, partition, unwrap, real_if_close, einsum's sublist form, a stack of a single array,
anp.full, and lists of traced values in mean, append and linalg.norm. Each is written with plain
`np.` calls, as a user writes it, and checked on every backend like an op; a backend with no number
(symbolic) refuses the functions that pick by value (interp, partition, unwrap) by a typed error.

Samples keep away from the kinks these functions have: interp's x inside an interval (never at a
knot), partition's values distinct, unwrap's steps away from +-pi (mod 2 pi).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore.spec import POSITIVE, REAL, Case, Domain, Sample

KNOTS = np.array([0.0, 1.0, 2.5, 4.0])  # interp's xp: a constant, outside the argnums
INSIDE_INTERVAL = Domain(0.2, 0.8)  # where in its interval interp's x falls: no knot near


def np_trapezoid(y: Any, x: Any) -> Any:
    """np.trapezoid(y, x) with both y and the sample points x traced."""
    return np.trapezoid(y, x)


def _trapezoid_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    x = np.cumsum(POSITIVE.draw(rng, (5,), dtype)).astype(dtype)
    return [Sample((REAL.draw(rng, (5,), dtype), x)), Sample((REAL.draw(rng, (2, 4), dtype), x[:4]))]


def np_interp(x: Any, fp: Any, xp: Any) -> Any:
    """np.interp(x, xp, fp) in x and fp (xp constant), x inside intervals, never at a knot."""
    return np.interp(x, xp, fp)


def _interp_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    interval = rng.integers(0, KNOTS.size - 1, size=3)
    x = KNOTS[interval] + INSIDE_INTERVAL.draw(rng, (3,), np.float64) * np.diff(KNOTS)[interval]
    return [Sample((x.astype(dtype), REAL.draw(rng, (4,), dtype), KNOTS.astype(dtype)))]


def np_gradient(f: Any) -> Any:
    """np.gradient of a 2-d f along both axes (spacing 0.5 and 1), edge_order 2, stacked."""
    return np.stack(np.gradient(f, 0.5, 1.0, edge_order=2))


def np_linspace(start: Any, stop: Any) -> Any:
    """np.linspace with traced endpoints (and the step, retstep=True, times the points)."""
    points, step = np.linspace(start, stop, 5, retstep=True)
    return points * step


def np_partition(a: Any) -> Any:
    """np.partition(a, 2) along the last axis: the elements moved, values distinct."""
    return np.partition(a, 2)


def np_unwrap(p: Any) -> Any:
    """np.unwrap of phases whose steps are small moves plus whole turns (never near +-pi)."""
    return np.unwrap(p)


def _unwrap_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    moves = Domain(-1.0, 1.0).draw(rng, (6,), np.float64)
    turns = 2 * np.pi * rng.integers(-2, 3, size=6)
    return [Sample(((np.cumsum(moves) + turns).astype(dtype),))]


def np_real_if_close(x: Any) -> Any:
    """np.real_if_close of a real value: the value itself."""
    return np.real_if_close(x * x)


def np_einsum_sublists(a: Any, b: Any) -> Any:
    """np.einsum in its sublist form: einsum(a, [0, 1], b, [1, 2], [0, 2])."""
    return np.einsum(a, [0, 1], b, [1, 2], [0, 2])


def stack_of_one(x: Any) -> Any:
    """Stacks of a single array: np.stack([x]), np.vstack([x]), np.concatenate([x])."""
    return np.stack([x]) + np.vstack([x]) + np.concatenate([x])[None]


def anp_full(x: Any) -> Any:
    """anp.full with a traced fill value, times x."""
    return anp.full((2, 3), x[0]) * x


def lists_of_traced(x: Any) -> Any:
    """Lists of traced values: anp.mean([...]), np.append([...], x), anp.linalg.norm([...])."""
    listed = [x[0], x[1] * x[2]]
    return np.append([anp.mean(listed)], x) * anp.linalg.norm(listed)


def _case(fn: Any, samples: Any, argnums: tuple[int, ...] = (0,)) -> Case:
    return Case(fn.__name__, fn, samples, argnums, fn.__doc__ or "")


def _drawn(domain: Domain, *calls: tuple[tuple[int, ...], ...]) -> Any:
    """One sample per call, each a tuple of argument shapes, values from `domain`."""

    def draw(rng: np.random.Generator, dtype: Any) -> list[Sample]:
        return [Sample(tuple(domain.draw(rng, shape, dtype) for shape in shapes)) for shapes in calls]

    return draw


DISTINCT = Domain(-2.0, 2.0, distinct=True)  # partition: no ties, where the arrangement jumps

NUMPY_FUNCTION_CASES: tuple[Case, ...] = (
    _case(np_trapezoid, _trapezoid_samples, (0, 1)),
    _case(np_interp, _interp_samples, (0, 1)),
    _case(np_gradient, _drawn(REAL, ((3, 4),))),
    _case(np_linspace, _drawn(REAL, ((), ()), ((2,), (2,))), (0, 1)),
    _case(np_partition, _drawn(DISTINCT, ((5,),), ((2, 4),))),
    _case(np_unwrap, _unwrap_samples),
    _case(np_real_if_close, _drawn(REAL, ((3,),))),
    _case(np_einsum_sublists, _drawn(REAL, ((2, 3), (3, 2))), (0, 1)),
    _case(stack_of_one, _drawn(REAL, ((3,),))),
    _case(anp_full, _drawn(REAL, ((3,),))),
    _case(lists_of_traced, _drawn(REAL, ((3,),))),
)
