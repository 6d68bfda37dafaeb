"""np.convolve and np.correlate: the discrete linear convolution of two 1-d arrays and their
cross-correlation, in NumPy's modes full, same and valid.

convolve is bilinear without conjugation (holomorphic in each input), so its rules hold for
complex values as written. correlate(a, v) is the window of convolve(a, conj(v[::-1])) that
NumPy's mode keeps: linear in a, conjugate-linear in v (non-holomorphic, its rules conjugate).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore.errors import InvalidValueError
from adcore.spec import REAL, OpSpec, Sample

MODES = ("full", "same", "valid")


def output_window(op: str, mode: str, m: int, n: int) -> slice:
    """Where the output of convolve (or correlate) of lengths m and n sits in the full one, of
    length m + n - 1: NumPy's convolve runs the longer input first, its correlate reverses the
    result when it swaps them, which centres mode same half a step further left then."""
    if mode not in MODES:
        raise InvalidValueError(f"op {op!r}: mode must be one of {MODES}, got {mode!r}")
    short, long = min(m, n), max(m, n)
    if mode == "full":
        return slice(0, m + n - 1)
    if mode == "valid":
        return slice(short - 1, long)
    start = short // 2 if op == "correlate" and m < n else (short - 1) // 2
    return slice(start, start + long)


def _pairs(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    lengths = ((5, 3), (3, 5), (4, 4), (1, 3), (6, 1), (4, 2))
    return [
        Sample((REAL.draw(rng, (m,), dtype), REAL.draw(rng, (n,), dtype)), {"mode": mode})
        for (m, n) in lengths
        for mode in MODES
    ]


def _convolve_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    zero_d = Sample((REAL.draw(rng, (), dtype), REAL.draw(rng, (3,), dtype)), {"mode": "same"})  # as (1,)
    return _pairs(rng, dtype) + [zero_d]


convolve = OpSpec(
    "convolve",
    np.convolve,
    nin=2,
    params=("mode",),
    numpy=(np.convolve,),
    samples=_convolve_samples,
    accepts_complex=True,
    doc="np.convolve(a, v, mode) of 1-d a and v (0-d ones as length 1); modes full, same, valid",
)
correlate = OpSpec(
    "correlate",
    np.correlate,
    nin=2,
    params=("mode",),
    numpy=(np.correlate,),
    samples=_pairs,
    accepts_complex=True,
    doc="np.correlate(a, v, mode) of 1-d a and v: c_k = sum_n a[n + k] conj(v[n]); modes full, same, valid",
)
