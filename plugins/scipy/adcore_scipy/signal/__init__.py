"""`scipy.signal`'s functions, differentiable: the same names and signatures as SciPy's."""

from __future__ import annotations

from typing import Any

from adcore_scipy.signal.ops import signal_convolve


def convolve(in1: Any, in2: Any, mode: str = "full", method: str = "auto") -> Any:
    """scipy.signal.convolve: the n-d convolution of in1 and in2, modes full, same and valid; its
    derivative is the same whichever method (direct, fft, auto) computes it."""
    return signal_convolve(in1, in2, mode=mode, method=method)


__all__ = ["convolve"]
