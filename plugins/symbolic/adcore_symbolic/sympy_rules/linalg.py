"""Sympy rules of adcore/ops/linalg.py: matmul."""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore_symbolic.sympy_rules.table import defsympy, reduce_with, sp


def _matmul(a: Any, b: Any) -> np.ndarray:
    """a @ b with each entry one sympy Add of its products (NumPy's object matmul adds them
    one at a time, and each sympy Add then copies the terms so far: quadratic)."""
    a, b = np.asarray(a, dtype=object), np.asarray(b, dtype=object)
    row, column = a.ndim == 1, b.ndim == 1
    a = a[None, :] if row else a
    b = b[:, None] if column else b
    out = reduce_with(sp.Add, a[..., :, :, None] * b[..., None, :, :], axis=-2)
    out = out[..., 0, :] if row else out
    return out[..., 0] if column else out


# fmt: off
defsympy("matmul",     _matmul)
# fmt: on
