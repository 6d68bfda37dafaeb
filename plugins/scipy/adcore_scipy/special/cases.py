"""The composites of scipy.special's non-ufuncs, checked by conformance like ops: logsumexp with
weights and its sign, softmax and log_softmax over all of x (SciPy's default), multigammaln."""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore.spec import REAL, Case, Domain, Sample, fixed_samples
from adcore_scipy.special import functions


def weighted_logsumexp(a: Any, b: Any, axis: Any = None) -> Any:
    """logsumexp(a, b=b, axis) with positive and negative weights, as log|sum| (return_sign)."""
    return functions.logsumexp(a, axis=axis, b=b, return_sign=True)[0]


def _weighted_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    shapes = (((3,), (3,), {}), ((2, 4), (2, 4), {"axis": 1}), ((2, 3), (3,), {"axis": 0}))
    samples = []
    for sa, sb, params in shapes:
        b = REAL.draw(rng, sb, dtype)
        b = np.where(np.abs(b) < 0.3, 0.3, b).astype(dtype)  # no sum near 0, where log|sum| has its pole
        b = np.abs(b) if params.get("axis") == 0 else b  # (2, 3) summed over 2 rows: keep it positive
        samples.append(Sample((REAL.draw(rng, sa, dtype), b), params))
    return samples


def multigammaln3(a: Any) -> Any:
    """multigammaln(a, 3): gammaln at a, a - 1/2, a - 1."""
    return functions.multigammaln(a, 3)


def softmax(x: Any, axis: Any = None) -> Any:
    """scipy.special.softmax, over all of x by default."""
    return functions.softmax(x, axis=axis)


def log_softmax(x: Any, axis: Any = None) -> Any:
    """scipy.special.log_softmax, over all of x by default."""
    return functions.log_softmax(x, axis=axis)


_AXES = fixed_samples((((4,),), {}), (((2, 3),), {}), (((2, 3),), {"axis": 0}))

CASES: tuple[Case, ...] = (
    Case(
        "scipy_logsumexp_weighted",
        weighted_logsumexp,
        _weighted_samples,
        argnums=(0, 1),
        doc=weighted_logsumexp.__doc__ or "",
    ),
    Case("scipy_softmax", softmax, _AXES, doc=softmax.__doc__ or ""),
    Case("scipy_log_softmax", log_softmax, _AXES, doc=log_softmax.__doc__ or ""),
    Case(
        "scipy_multigammaln",
        multigammaln3,
        fixed_samples((((),), {}), (((3,),), {}), domain=Domain(1.2, 4.0)),
        doc=multigammaln3.__doc__ or "",
    ),
)
