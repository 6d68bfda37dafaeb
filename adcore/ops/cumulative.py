"""Cumulative and ordering ops along an axis: cumsum, cumprod, diff, sort.

argsort, argmax and argmin are not ops: an index has no derivative, so on a traced value
they answer with the plain integer array (adcore.core, like comparisons).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from adcore.core import concrete
from adcore.ops import elementwise, reductions
from adcore.ops.reductions import DISTINCT, closest_pair, float_dtype
from adcore.spec import REAL, Domain, Kink, OpSpec, Sample, fixed_samples


def _cumsum(x, axis=None, dtype=None):
    return np.cumsum(x, axis=axis, dtype=float_dtype("cumsum", dtype, x))


def _cumprod(x, axis=None, dtype=None):
    return np.cumprod(x, axis=axis, dtype=float_dtype("cumprod", dtype, x))


def _diff(x, n=1, axis=-1, prepend=None, append=None):
    # the ends as given, so the value's dtype is NumPy's (a float64 prepend makes float32 x float64)
    ends = {k: v for k, v in (("prepend", prepend), ("append", append)) if v is not None}
    return np.diff(x, n=n, axis=axis, **ends)


def _sort(x, axis=-1, kind=None, stable=None):
    return np.sort(x, axis=axis, kind="stable")  # the values are the same for every kind


_AXES = (
    (((),), {"axis": None}),
    (((4,),), {"axis": None}),
    (((4,),), {"axis": 0}),
    (((2, 3),), {"axis": None}),
    (((2, 3),), {"axis": 1}),
    (((3, 2, 2),), {"axis": 0}),
    (((3, 2, 2),), {"axis": -1}),
)


def _cumprod_samples(rng: np.random.Generator, dtype) -> list[Sample]:
    out = fixed_samples(*_AXES, domain=Domain(0.5, 1.5))(rng, dtype)
    one_zero = Domain(0.5, 1.5).draw(rng, (2, 4), dtype)
    one_zero[0, 1] = 0
    two_zeros = Domain(-1.5, 1.5).draw(rng, (5,), dtype)
    two_zeros[[1, 3]] = 0
    return out + [Sample((one_zero,), {"axis": 1}), Sample((two_zeros,), {"axis": 0})]


def _diff_samples(rng: np.random.Generator, dtype) -> list[Sample]:
    calls = (
        ((5,), {}),
        ((5,), {"n": 2}),
        ((3, 4), {"axis": 0}),
        ((3, 4), {"n": 3, "axis": 1}),
        ((3, 4), {"prepend": 0.5}),
        ((3, 4), {"axis": 0, "append": np.array([[1.0, 2.0, 3.0, 4.0]])}),
        ((4,), {"n": 2, "prepend": np.array([1.0, -1.0]), "append": 2.0}),
        ((4,), {"n": 0}),
        ((2, 1), {"axis": 1}),  # n at least the length: an empty output, a zero derivative
        ((3,), {"n": 4, "prepend": 0.5}),
    )
    typed = [
        {k: np.asarray(v, dtype) if isinstance(v, np.ndarray) else v for k, v in p.items()} for _, p in calls
    ]
    return [Sample((REAL.draw(rng, shape, dtype),), p) for (shape, _), p in zip(calls, typed)]


cumsum = OpSpec(
    "cumsum",
    _cumsum,
    params=("axis", "dtype"),
    numpy=(np.cumsum,),
    samples=fixed_samples(*_AXES),
    doc="axis None runs over the flattened input; dtype: float or complex",
    accepts_complex=True,
)
cumprod = OpSpec(
    "cumprod",
    _cumprod,
    params=("axis", "dtype"),
    numpy=(np.cumprod,),
    samples=_cumprod_samples,
    doc="exact with zeros in the input (products of the other factors, no division by x)",
    accepts_complex=True,
)
diff = OpSpec(
    "diff",
    _diff,
    params=("n", "axis", "prepend", "append"),
    numpy=(np.diff,),
    samples=_diff_samples,
    doc="prepend and append are constants (no derivative); the value's dtype is NumPy's (float64 ends make float32 x float64)",
    accepts_complex=True,
)
sort = OpSpec(
    "sort",
    _sort,
    params=("axis", "kind", "stable"),
    numpy=(np.sort,),
    samples=fixed_samples(*_AXES[1:], domain=DISTINCT),
    doc="the derivative permutes; ties follow the stable sort: equal values get the cotangent of "
    "their own sorted slot",
    kinks=(
        Kink(([2.0, 1.0, 2.0],), (np.eye(3)[[1, 0, 2]],), why="equal values keep their order: a slot each"),
    ),
    kink_distance=lambda x, axis=-1, kind=None, stable=None: closest_pair(x, axis),
)


@dataclass(frozen=True)
class ZeroSplit:
    """cumprod(x) along an axis split at each slice's first zero z (z = n: no zero), for exact
    derivatives without dividing by a zero. d out_k / d x_i is out_k / x_i for i <= k < z;
    `before_zero * after_zero[k]` for i = z <= k; and x_z times the same derivative of `rest`
    (x with x_z set to 1, so one zero fewer) for the other pairs with k >= z, whose value is 0
    but whose derivative by x_z is not (second derivatives). O(n) per slice and zero; written
    with ops, so a rule built on it can be differentiated again."""

    before: np.ndarray  # i < z
    at: np.ndarray  # i == z
    past: np.ndarray  # i > z
    from_zero: np.ndarray  # k >= z
    x_before: object  # x where i < z, else 1: nonzero, to divide by
    zero: object  # x_z (0, traced), kept shape
    before_zero: object  # prod(x[:z]), kept shape
    after_zero: object  # [k]: prod(x[z+1 : k+1]), 1 for k <= z
    rest: object  # x with x_z set to 1


def zero_split(x, axis: int) -> ZeroSplit:
    """The pieces of cumprod(x, axis)'s derivative at its first zeros (x has one somewhere)."""
    zero = concrete(x) == 0
    # zeros up to each position (by counts, not argmax's index, so a vmap's batch stays one)
    seen = np.cumsum(zero, axis=axis)
    at = zero & (seen == 1)
    before = seen == 0
    x_before = elementwise.where(before, x, 1.0)
    return ZeroSplit(
        before=before,
        at=at,
        past=(seen > 0) & ~at,
        from_zero=seen > 0,
        x_before=x_before,
        zero=reductions.sum(elementwise.where(at, x, 0.0), axis=axis, keepdims=True),
        before_zero=reductions.prod(x_before, axis=axis, keepdims=True),
        after_zero=cumprod(elementwise.where(before | at, 1.0, x), axis=axis),
        rest=elementwise.where(at, 1.0, x),
    )
