"""The scipy.signal ops: what each computes and where the conformance checks draw its inputs.

scipy.signal.convolve is not a ufunc and does not dispatch to traced values, so it has no
`numpy=` mapping: code calls adcore_scipy.signal.convolve, SciPy's name and signature. SciPy is
imported by the first call (LazyModule), not when the ops are defined.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore.errors import InvalidValueError
from adcore.extend import LazyModule
from adcore.spec import REAL, Case, OpSpec, Sample

signal = LazyModule("scipy.signal")

MODES = ("full", "same", "valid")
METHODS = ("auto", "direct", "fft")


def output_window(mode: str, shape1: tuple[int, ...], shape2: tuple[int, ...]) -> tuple[slice, ...]:
    """Where convolve(in1, in2, mode)'s output sits in the full one (shape1 + shape2 - 1 per axis):
    same is centred on in1's shape, valid is where in2 (or in1, if larger) fits whole."""
    if mode not in MODES:
        raise InvalidValueError(f"op 'signal_convolve': mode must be one of {MODES}, got {mode!r}")
    window = []
    for m, n in zip(shape1, shape2):
        full = m + n - 1
        if mode == "full":
            window.append(slice(0, full))
        elif mode == "same":
            window.append(slice((full - m) // 2, (full - m) // 2 + m))
        else:
            window.append(slice(min(m, n) - 1, max(m, n)))
    return tuple(window)


def _convolve(in1: Any, in2: Any, mode: str = "full", method: str = "auto") -> Any:
    if method not in METHODS:
        raise InvalidValueError(f"op 'signal_convolve': method must be one of {METHODS}, got {method!r}")
    shape1, shape2 = np.shape(in1), np.shape(in2)
    fits = all(m >= n for m, n in zip(shape1, shape2)) or all(n >= m for m, n in zip(shape1, shape2))
    if mode == "valid" and not fits:
        raise InvalidValueError(
            f"op 'signal_convolve': mode 'valid' needs one input at least as large as the other along "
            f"every axis, got shapes {shape1} and {shape2}; use mode 'full' or 'same', or swap in a "
            "larger input"
        )
    return signal.convolve(in1, in2, mode=mode, method=method)


def _samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    pairs = (
        ((5,), (3,), MODES),
        ((2,), (4,), MODES),  # in2 larger: valid swaps them
        ((3, 4), (2, 2), MODES),
        ((2, 2), (3, 3), ("same", "valid")),
        ((2, 3, 2), (2, 1, 2), ("full", "same")),
        ((), (), ("full",)),  # 0-d: the product
    )
    return [
        Sample((REAL.draw(rng, s1, dtype), REAL.draw(rng, s2, dtype)), {"mode": mode, "method": method})
        for s1, s2, modes in pairs
        for mode in modes
        for method in ("direct", "fft")
    ]


signal_convolve = OpSpec(
    "signal_convolve",
    _convolve,
    nin=2,
    params=("mode", "method"),
    samples=_samples,
    accepts_complex=True,
    doc="scipy.signal.convolve(in1, in2, mode, method): n-d, modes full, same, valid; every method "
    "has the same derivative",
)

OPS: tuple[OpSpec, ...] = (signal_convolve,)
CASES: tuple[Case, ...] = ()
