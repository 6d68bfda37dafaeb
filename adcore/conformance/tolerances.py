"""Every tolerance of the conformance suite, in one place (docs/conformance.md explains them).

A derivative `a` passes against the reference `r` when, element by element,

    |a - r| <= rtol * |r| + atol * max(1, max |r|) + SAFETY * error

where `error` is the estimated error of an estimate: numeric's own error estimate when
`a` comes from numeric, the reference's when the reference itself had to be numeric
(0 otherwise). The `atol` term is scaled by the largest finite reference entry, so an entry
that cancels to nearly 0 is judged against the size of the Jacobian it sits in.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float


# A rule-based backend in float64 is exact up to rounding: the reference (exact symbolic,
# or forward and reverse agreeing) is too, so 1e-9 leaves several orders of margin for
# rounding through ill-conditioned ops yet catches any wrong rule. In float32 the rounding
# of the inputs' evaluation (eps ~1.2e-7) times the op's conditioning: 1e-3 ("float32
# loose", DESIGN.md), against a reference computed in float64 at the same points.
EXACT: dict[str, Tolerance] = {
    "float64": Tolerance(rtol=1e-9, atol=1e-9),
    "float32": Tolerance(rtol=1e-3, atol=1e-3),
}

# numeric (Richardson extrapolation, method="richardson") is judged within its own error
# estimate times SAFETY, plus this floor: the estimate is itself estimated.
ESTIMATE: dict[str, Tolerance] = {
    "float64": Tolerance(rtol=1e-8, atol=1e-8),
    "float32": Tolerance(rtol=1e-3, atol=1e-3),
}
SAFETY: float = 10.0

# Forward and reverse make a consensus reference when they agree within this (float64).
CONSENSUS: Tolerance = Tolerance(rtol=1e-9, atol=1e-9)

# Second derivatives (float64 only) against numeric's nested Richardson estimate.
SECOND: Tolerance = Tolerance(rtol=1e-6, atol=1e-6)


# vmap against a loop over the batch (adcore.conformance.batching), where not bit for bit: the same
# rules on the same numbers, only NumPy's summation order may change when a batch axis joins
# (matmul as one larger product, a reduction's pairwise sums), so a few thousand units in the last
# place of float64 (~100 of float32) relative to the result's largest entry; a wrong batch rule
# (the wrong axis, examples mixed up) is off by the size of the values
VMAP: dict[str, Tolerance] = {
    "float64": Tolerance(rtol=1e-12, atol=1e-12),
    "float32": Tolerance(rtol=1e-5, atol=1e-5),
}


def judged_as(dtype: str) -> str:
    """The real dtype whose tolerances a dtype's checks use: a complex dtype is checked on its
    real and imaginary parts (calls.split_function), so complex128 like float64, complex64 like
    float32."""
    return np.finfo(np.dtype(dtype)).dtype.name


def allowed(reference: np.ndarray, tolerance: Tolerance, error: np.ndarray | float = 0.0) -> np.ndarray:
    """The largest |a - reference| each entry may have. The atol term's scale is the largest
    finite entry: an infinite one (log' at 0) must not allow every other entry anything."""
    scale = max(1.0, largest_finite(reference))
    return tolerance.rtol * np.abs(reference) + tolerance.atol * scale + SAFETY * np.asarray(error)


def largest_finite(reference: np.ndarray) -> float:
    """The largest finite |entry| of `reference` (0 if it has none)."""
    return float(np.max(np.abs(reference[np.isfinite(reference)]), initial=0.0))
