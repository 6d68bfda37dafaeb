"""GradBench's det eval: the determinant of an ell x ell matrix, and its gradient (the cofactor matrix)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import adcore
from adcore_tool.backends import options

UNSUPPORTED: dict[str, str] = {}

Prepared = tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]


def prepare(input: dict[str, Any], backend: str) -> Prepared:
    ell = int(input["ell"])
    a = np.asarray(input["A"], dtype=np.float64).reshape(ell, ell)  # row-major, as the eval sends it
    return a, adcore.grad(np.linalg.det, **options(backend))


def primal(prepared: Prepared) -> float:
    a, _ = prepared
    return float(np.linalg.det(a))


def gradient(prepared: Prepared) -> np.ndarray:
    a, grad_det = prepared
    return grad_det(a).ravel()  # row-major, as the eval expects it
