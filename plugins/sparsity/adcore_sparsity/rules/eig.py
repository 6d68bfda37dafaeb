"""Sparsity rules of adcore/ops/eig.py: the general eigendecomposition, dense per matrix of a stack
(an eigenvalue of a general matrix moves with every entry), but for the eigenvector of a 1 x 1
matrix, the constant 1."""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore_sparsity.extend import SparsityRule, batched
from adcore_sparsity.rules.table import defsparsity


def _eig_packed(ans: Any, a: Any) -> tuple:
    """Eigenvalues over eigenvectors, (..., n + 1, n)."""
    n = np.shape(a)[-1]
    core = None
    if n == 1:  # the eigenvalue a itself over the constant eigenvector 1
        core = np.array([[1.0], [0.0]])
    return (batched(np.shape(ans), np.shape(a), 2, 2, core),)


def _eigvals(ans: Any, a: Any) -> tuple:
    return (batched(np.shape(ans), np.shape(a), 1, 2),)


defsparsity("eig_packed", SparsityRule(_eig_packed, "nonlinear", exact=True))
defsparsity("eigvals", SparsityRule(_eigvals, "nonlinear", exact=True))
