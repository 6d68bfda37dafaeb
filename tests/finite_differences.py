"""The tests' independent oracle for a Jacobian: central differences of a plain NumPy function."""

from __future__ import annotations

import numpy as np


def central_jacobian(f, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """d f / d x, f(x).shape + x.shape, by central differences."""
    columns = []
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[index] = h
        columns.append((np.asarray(f(x + step)) - np.asarray(f(x - step))) / (2 * h))
    return np.stack(columns, axis=-1).reshape(np.shape(f(x)) + x.shape)
