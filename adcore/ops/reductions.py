"""Reductions over axes: sum, mean, prod, max, min (params axis, keepdims)."""

from __future__ import annotations

import numpy as np

from adcore.spec import REAL, Domain, OpSpec, Sample

_SHAPE_AXES = (
    ((), (None,)),
    ((3,), (None, 0, -1)),
    ((2, 3), (None, 0, 1, (0, 1))),
    ((2, 3, 4), (None, 1, (0, 2), -1)),
)


def reduction_samples(domain: Domain, with_zeros: bool = False):
    """Every (shape, axis) above, with and without keepdims; optionally inputs holding zeros."""

    def draw(rng: np.random.Generator, dtype) -> list[Sample]:
        out = []
        for shape, axes in _SHAPE_AXES:
            for axis in axes:
                for keepdims in (False, True):
                    out.append(
                        Sample((domain.draw(rng, shape, dtype),), {"axis": axis, "keepdims": keepdims})
                    )
        if with_zeros:
            one_zero = domain.draw(rng, (2, 3), dtype)
            one_zero[0, 1] = 0
            two_zeros = domain.draw(rng, (4,), dtype)
            two_zeros[[1, 3]] = 0
            out += [Sample((one_zero,), {"axis": 1, "keepdims": False}), Sample((two_zeros,), {"axis": None})]
        return out

    return draw


def _reduction(name: str, impl, domain: Domain = REAL, with_zeros: bool = False, doc: str = "") -> OpSpec:
    return OpSpec(
        name,
        impl,
        params=("axis", "keepdims"),
        numpy=(impl,),
        samples=reduction_samples(domain, with_zeros),
        doc=doc,
    )


sum = _reduction("sum", np.sum)
mean = _reduction("mean", np.mean)
prod = _reduction("prod", np.prod, Domain(0.5, 1.5), with_zeros=True, doc="exact with zeros in the input")
DISTINCT = Domain(distinct=True)  # ties are kinks: docs/conventions.md tests them on purpose
max = _reduction("max", np.max, DISTINCT, doc="the gradient is split equally among ties")
min = _reduction("min", np.min, DISTINCT, doc="the gradient is split equally among ties")
