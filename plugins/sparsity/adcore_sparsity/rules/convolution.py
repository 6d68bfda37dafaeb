"""Sparsity rules of adcore/ops/convolution.py: np.convolve and np.correlate of 1-d a (m) and v (n).

The full convolution's element t is sum_i a[i] v[t - i]: it reads a[i] through v[t - i] and v[j]
through a[t - j], so each pair (i, j) is one entry of each input's pattern, at t = i + j (correlate:
t = i + n - 1 - j, the convolution with v reversed), kept where the other factor may be non-zero
(a known zero, a constant's or at a point, reads nothing) and inside the window the mode keeps."""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore.ops.convolution import output_window
from adcore_sparsity.extend import SparsityRule, known
from adcore_sparsity.rules.table import defsparsity


def _may_be_nonzero(x: Any, size: int) -> np.ndarray:
    return (np.asarray(x) != 0).ravel() if known(x) else np.ones(size, dtype=bool)


def windows(op: str) -> SparsityRule:
    """The rule of `op` (convolve or correlate)."""

    def dependencies(ans: Any, a: Any, v: Any, mode: str = "full") -> tuple:
        from scipy import sparse

        m, n = (int(np.prod(np.shape(x), dtype=np.int64)) for x in (a, v))  # 0-d: length 1
        i, j = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
        t = i + (n - 1 - j if op == "correlate" else j)
        window = output_window(op, mode, m, n)
        row = t - window.start
        inside = (row >= 0) & (row < window.stop - window.start)
        out_size = window.stop - window.start
        nonzero_a, nonzero_v = _may_be_nonzero(a, m)[i], _may_be_nonzero(v, n)[j]

        def pattern(keep: np.ndarray, column: np.ndarray, size: int) -> Any:
            keep = keep & inside
            ones = np.ones(int(keep.sum()))
            return sparse.coo_array((ones, (row[keep], column[keep])), shape=(out_size, size)).tocsr()

        return pattern(nonzero_v, i, m), pattern(nonzero_a, j, n)

    return SparsityRule(dependencies, "multilinear", exact=True)


defsparsity("convolve", windows("convolve"))
defsparsity("correlate", windows("correlate"))
