"""GradBench's llsq eval: a polynomial least-squares objective in its coefficients x, and its gradient."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.polynomial import polynomial

import adcore
from adcore_tool.backends import options

UNSUPPORTED: dict[str, str] = {}


def llsq(x: np.ndarray, n: int) -> Any:
    """1/2 sum_i (s_i - sum_j x_j t_i^j)^2 at the n points t_i = -1 + 2i/(n - 1), s_i = sign(t_i)."""
    t = -1.0 + np.arange(n) * 2.0 / (n - 1.0)
    powers = polynomial.polyvander(t, len(x) - 1)  # powers[i, j] = t_i ** j
    residuals = np.sign(t) - powers @ x
    return np.sum(residuals * residuals) / 2.0


Prepared = tuple[np.ndarray, int, Callable[[np.ndarray, int], np.ndarray]]


def prepare(input: dict[str, Any], backend: str) -> Prepared:
    return np.asarray(input["x"], dtype=np.float64), int(input["n"]), adcore.grad(llsq, **options(backend))


def primal(prepared: Prepared) -> float:
    x, n, _ = prepared
    return float(llsq(x, n))


def gradient(prepared: Prepared) -> np.ndarray:
    x, n, grad_llsq = prepared
    return grad_llsq(x, n)
