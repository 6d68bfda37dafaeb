"""Sparsity rules of adcore/ops/decompositions.py and norms.py: eigh, eigvalsh, svd, svdvals, qr, norm, pinv, lstsq.

Each output's batch b depends on batch b's matrix only (`batched`); within a matrix, on the
triangle eigh reads, on the columns a QR has seen so far (Gram-Schmidt's order), and nothing where
a factor is a constant sign (the vectors of a 1 x 1 matrix). norm is a reduction over its axes;
its max-like ords (inf, -inf; a matrix's 1, -1, inf, -inf) depend at a point on the extreme entry
or line only. A structured core of more than LARGE entries is not built: the input is taken as
dense (a superset).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore.ops.norms import norm_axes
from adcore_sparsity.extend import DENSE, SparsityRule, batched, fibres, known, scatter
from adcore_sparsity.rules.linalg import LARGE
from adcore_sparsity.rules.table import defsparsity


def _triangle_columns(rows: int, n: int, uplo: str) -> Any:
    """(rows, n*n): every row reads the triangle UPLO names, diagonal included (None past LARGE)."""
    if rows * n * n > LARGE:
        return None
    mask = np.tri(n, dtype=bool) if uplo == "L" else np.tri(n, dtype=bool).T
    return np.tile(mask.ravel(), (rows, 1)).astype(np.float64)


def _eigh_packed(ans: Any, a: Any, UPLO: str = "L") -> tuple:
    """Eigenvalues and eigenvectors over the triangle; a 1 x 1 matrix's eigenvector is the constant 1."""
    n = np.shape(a)[-1]
    core = _triangle_columns((n + 1) * n, n, UPLO)
    if n == 1 and core is not None:
        core[1:] = 0
    return (batched(np.shape(ans), np.shape(a), 2, 2, core),)


def _eigvalsh(ans: Any, a: Any, UPLO: str = "L") -> tuple:
    n = np.shape(a)[-1]
    return (batched(np.shape(ans), np.shape(a), 1, 2, _triangle_columns(n, n, UPLO)),)


def _svd_packed(ans: Any, a: Any) -> tuple:
    """U over s over V, dense per matrix but where U (m = 1) or V (n = 1) is a constant sign; for a
    complex a, LAPACK puts the phase of a vector (n = 1, and 1 x 1) in U and of a row in V."""
    m, n = np.shape(a)[-2:]
    k = min(m, n)
    if m > 1 and n > 1:
        return (batched(np.shape(ans), np.shape(a), 2, 2),)
    complex_ = np.dtype(a.dtype).kind == "c"
    core = np.ones(((m + 1 + n) * k, m * n))
    if m == 1 and not (complex_ and n == 1):
        core[: m * k] = 0
    if n == 1:
        core[(m + 1) * k :] = 0
    return (batched(np.shape(ans), np.shape(a), 2, 2, core),)


def qr_core(m: int, n: int) -> np.ndarray | None:
    """((m + k) * n, m * n), k = min(m, n), for Q over R by Gram-Schmidt: Q's column j reads a's
    columns 0..j (the last of a square block: 0..k-2, its direction is fixed by the others'; a wide
    a's padding columns nothing); R[i, j] = q_i . a_j reads q_i's columns and column j, from the
    diagonal on (below it: none)."""
    k = min(m, n)
    if (m + k) * n * m * n > LARGE:
        return None
    col = np.arange(n)
    q_reads = (col[None, :] <= np.arange(k)[:, None]) & (col[None, :] < k)  # (j < k, column)
    if m <= n:
        q_reads[k - 1] = col < k - 1
    i, j, c = np.ix_(np.arange(k), col, col)
    r_reads = (i <= j) & (q_reads[i, c] | (c == j) | ((j < k) & (c == i)))  # (i, j, column)
    q_core = np.zeros((m, n, m, n), dtype=bool)  # (row, j) <- (any row, column)
    q_core[:, :k] = q_reads[None, :, None, :]
    r_core = np.broadcast_to(r_reads[:, :, None, :], (k, n, m, n))
    return np.concatenate([q_core.reshape(m * n, m * n), r_core.reshape(k * n, m * n)]).astype(np.float64)


def _qr_packed(ans: Any, a: Any) -> tuple:
    m, n = np.shape(a)[-2:]
    return (batched(np.shape(ans), np.shape(a), 2, 2, qr_core(m, n)),)


def _extremes(values: np.ndarray, axes: tuple[int, ...], largest: bool) -> np.ndarray:
    """Where values reach their max (min) over `axes` (every tie), shaped like values."""
    extreme = (
        np.max(values, axis=axes, keepdims=True) if largest else np.min(values, axis=axes, keepdims=True)
    )
    return values == extreme


def norm_selection(x: np.ndarray, ord: Any, axes: tuple[int, ...], matrix: bool) -> np.ndarray | None:
    """For a max-like ord at a point, the entries the norm depends on (True), else None (every entry):
    the extreme |x| of a vector, the extreme line of a matrix (column sums for ord 1, -1; row sums for
    inf, -inf)."""
    if ord not in (np.inf, -np.inf, 1, -1) or (not matrix and ord in (1, -1)):
        return None
    size = np.abs(x)
    if not matrix:
        return _extremes(size, axes, ord > 0)
    along = axes[0] if ord in (1, -1) else axes[1]
    other = axes[1] if along == axes[0] else axes[0]
    sums = np.sum(size, axis=along, keepdims=True)
    return np.broadcast_to(_extremes(sums, (other,), ord > 0), x.shape)


def _norm(ans: Any, x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> tuple:
    axes, _ = norm_axes(x, ord, axis)
    matrix = len(axes) == 2 and not (axis is None and ord is None)
    if ord == 0 and not matrix:
        return (None,)  # the count of non-zeros: derivative 0
    fibre = fibres(np.shape(x), axes)
    if known(x):
        chosen = norm_selection(np.asarray(x), ord, axes, matrix)
        if chosen is not None:
            fibre = np.where(chosen, fibre, -1)
    return (scatter(fibre, int(np.prod(np.shape(ans), dtype=np.int64))),)


def _pinv(ans: Any, a: Any, rcond: Any = None, hermitian: bool = False, rtol: Any = None) -> tuple:
    return (batched(np.shape(ans), np.shape(a), 2, 2),)


def _lstsq_solution(ans: Any, a: Any, b: Any, rcond: Any = None) -> tuple:
    """x = pinv(a) b: every entry of a; column j of x reads column j of b only."""
    m, n = np.shape(a)
    k = 1 if len(np.shape(b)) == 1 else np.shape(b)[1]
    from scipy import sparse

    if k == 1 or n * m * k > LARGE:
        return (DENSE, DENSE)
    return (DENSE, sparse.kron(sparse.csr_array(np.ones((n, m))), sparse.eye_array(k), format="csr"))


def _lstsq_residuals(ans: Any, a: Any, b: Any, rcond: Any = None) -> tuple:
    """|a x_k - b_k|^2: every entry of a; residual k reads column k of b only (none: no residuals)."""
    if np.size(ans) == 0:
        return (None, None)
    m, k = np.shape(a)[0], (1 if len(np.shape(b)) == 1 else np.shape(b)[1])
    from scipy import sparse

    return (DENSE, sparse.kron(sparse.csr_array(np.ones((1, m))), sparse.eye_array(k), format="csr"))


defsparsity("eigh_packed", SparsityRule(_eigh_packed, "nonlinear", exact=True))
defsparsity("eigvalsh", SparsityRule(_eigvalsh, "nonlinear", exact=True))
defsparsity("svd_packed", SparsityRule(_svd_packed, "nonlinear", exact=True))
defsparsity("svdvals", SparsityRule(lambda ans, a: (batched(np.shape(ans), np.shape(a), 1, 2),), "nonlinear"))
defsparsity("qr_packed", SparsityRule(_qr_packed, "nonlinear", exact=True))
defsparsity("norm", SparsityRule(_norm, "nonlinear", exact=True))
defsparsity("pinv", SparsityRule(_pinv, "nonlinear", exact=True))
defsparsity("lstsq_solution", SparsityRule(_lstsq_solution, "nonlinear", exact=True))
defsparsity("lstsq_residuals", SparsityRule(_lstsq_residuals, "nonlinear", exact=True))
defsparsity(
    "lstsq_singular_values",
    SparsityRule(lambda ans, a: (batched(np.shape(ans), np.shape(a), 1, 2),), "nonlinear"),
)
