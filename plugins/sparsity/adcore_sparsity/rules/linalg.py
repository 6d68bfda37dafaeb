"""Sparsity rules of adcore/ops/linalg.py (the solve family) and of matrix_power.

A matrix argument is a stack (..., n, n): an output element in batch b depends only on batch b's
matrix (`batched`). Within a matrix the patterns are dense except where the op reads a triangle
(cholesky, solve_triangular, cho_solve) or keeps columns apart (a right-hand side's column j
reaches only the solution's column j), where they are the exact structure the recurrences give.
A structured core of more than LARGE entries is not built: the input is taken as dense (a
superset), so that a large constant matrix (solve_triangular(L, x) with L 1000 x 1000) costs nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore.ops.linalg import is_transposed
from adcore_sparsity.extend import SparsityRule, batched, known
from adcore_sparsity.rules.table import defsparsity

LARGE = 1 << 24  # entries of a structured core past which the input is taken as dense

# --- matrices of core patterns ------------------------------------------------------------------


def columns_apart(n: int, k: int) -> Any:
    """(n*k, n*k): x[i, j] depends on b[p, j] for every p, the same column only (None: dense, k = 1
    or too large to build)."""
    from scipy import sparse

    if k == 1 or n * n * k > LARGE:
        return None
    return sparse.kron(sparse.csr_array(np.ones((n, n))), sparse.eye_array(k), format="csr")


def per_column(rows: Any, k: int) -> Any:
    """`rows` (n, m), the pattern of row i of a solution, repeated for each of its k columns: (n*k, m)."""
    from scipy import sparse

    return sparse.kron(sparse.csr_array(rows), np.ones((k, 1)), format="csr")


def right_hand_side(x: Any, b: Any) -> tuple[int, int, int]:
    """(n, k, core axes) of a right-hand side b (a vector (n,) or a stack (..., n, k)) and its solution x."""
    shape = np.shape(b)
    return (shape[0], 1, 1) if len(shape) == 1 else (shape[-2], shape[-1], 2)


def triangle(n: int, lower: bool, diagonal: bool = True) -> np.ndarray:
    """(n, n) bool: the entries of a triangle."""
    mask = np.tri(n, k=0 if diagonal else -1, dtype=bool)
    return mask if lower else mask.T


def transpose_entries(n: int) -> np.ndarray:
    """The permutation of flat (n, n) positions that transposes a matrix."""
    return np.arange(n * n).reshape(n, n).T.ravel()


# --- the rules ----------------------------------------------------------------------------------


def _dense_per_matrix(ans: Any, a: Any, out_core: int = 2) -> tuple:
    return (batched(np.shape(ans), np.shape(a), out_core, 2),)


def _solve(ans: Any, a: Any, b: Any) -> tuple:
    n, k, core = right_hand_side(ans, b)
    return (
        batched(np.shape(ans), np.shape(a), core, 2),
        batched(np.shape(ans), np.shape(b), core, core, columns_apart(n, k)),
    )


def _det(ans: Any, a: Any) -> tuple:
    """Dense per matrix; at a point, none from a matrix of rank n - 2 or less (its cofactors are 0)."""
    pattern = batched(np.shape(ans), np.shape(a), 0, 2)
    if known(a) and np.shape(a)[-1] > 1:
        a = np.asarray(a)
        low_rank = (np.linalg.matrix_rank(a) <= a.shape[-1] - 2).ravel()
        if low_rank.all():
            return (None,)
        if low_rank.any():  # a stack: some of its matrices
            pattern = pattern.multiply(~low_rank[:, None]).tocsr()
            pattern.eliminate_zeros()
    return (pattern,)


def _slogdet_packed(ans: Any, a: Any) -> tuple:
    n = np.shape(a)[-1]
    core = np.zeros((2, n * n))
    core[1] = 1  # the sign's derivative is 0
    return (batched(np.shape(ans), np.shape(a), 1, 2, core),)


def cholesky_core(n: int, upper: bool = False) -> np.ndarray | None:
    """(n*n, n*n): L[i, j] (i >= j) depends on a[p, q] (q <= p, lower triangle) with q <= j and
    p <= j or p = i, by the recurrence L_ij = (a_ij - sum_{k<j} L_ik L_jk) / L_jj; upper=True: the
    transposed factor of the upper triangle."""
    if n**4 > LARGE:
        return None
    i, j, p, q = np.ix_(*(np.arange(n),) * 4)
    core = (i >= j) & (q <= p) & (q <= j) & ((p <= j) | (p == i))
    core = core.reshape(n * n, n * n)
    if upper:
        t = transpose_entries(n)
        core = core[t][:, t]
    return core


def _cholesky(ans: Any, a: Any, upper: bool = False) -> tuple:
    return (batched(np.shape(ans), np.shape(a), 2, 2, cholesky_core(np.shape(a)[-1], upper)),)


def triangular_cores(
    n: int, k: int, trans: Any = 0, lower: bool = False, unit_diagonal: bool = False
) -> tuple[Any, Any]:
    """The cores of x = M^-1 b, M = T or T^T for the triangle T of a: (n*k, n*n) for a, (n*k, n*k)
    for b. M lower: x_i depends on M[p, q] with q <= p <= i and on b_p with p <= i (upper: the
    mirror image); each of its columns on the same column of b only."""
    from scipy import sparse

    transposed = is_transposed(trans)
    solves_lower = lower != transposed
    if n**3 > LARGE:
        rhs = np.tri(n, dtype=bool) if solves_lower else np.tri(n, dtype=bool).T
        return None, None if n * n * k > LARGE else sparse.kron(
            sparse.csr_array(rhs), sparse.eye_array(k), format="csr"
        )
    i, p, q = np.ix_(*(np.arange(n),) * 3)
    if solves_lower:
        reads = (q <= p) & (p <= i)
        rhs = np.tri(n, dtype=bool)
    else:
        reads = (i <= p) & (p <= q)
        rhs = np.tri(n, dtype=bool).T
    if unit_diagonal:
        reads = reads & (p != q)
    rows = reads.reshape(n, n * n)  # in M's entries
    if transposed:
        rows = rows[:, transpose_entries(n)]
    return per_column(rows, k), sparse.kron(sparse.csr_array(rhs), sparse.eye_array(k), format="csr")


def _solve_triangular(
    ans: Any, a: Any, b: Any, trans: Any = 0, lower: bool = False, unit_diagonal=False
) -> tuple:
    n, k, core = right_hand_side(ans, b)
    core_a, core_b = triangular_cores(n, k, trans, lower, unit_diagonal)
    return (
        batched(np.shape(ans), np.shape(a), core, 2, core_a),
        batched(np.shape(ans), np.shape(b), core, core, core_b),
    )


def _cho_solve(ans: Any, c: Any, b: Any, lower: bool = True) -> tuple:
    """x = (L L^T)^-1 b: every entry of the factor's triangle, the same column of b."""
    n, k, core = right_hand_side(ans, b)
    reads = None if n**3 * k > LARGE else per_column(np.tile(triangle(n, lower).ravel(), (n, 1)), k)
    return (
        batched(np.shape(ans), np.shape(c), core, 2, reads),
        batched(np.shape(ans), np.shape(b), core, core, columns_apart(n, k)),
    )


def _matrix_power(ans: Any, a: Any, n: int = 1) -> tuple:
    """n = 0: the identity, no dependency; 1: each entry itself; 2: (a a)_ij reads row i and
    column j; otherwise (n >= 3, or an inverse's power) every entry."""
    size = np.shape(a)[-1]
    if n == 0:
        return (None,)
    if n == 1:
        from scipy import sparse

        return (batched(np.shape(ans), np.shape(a), 2, 2, sparse.eye_array(size * size, format="csr")),)
    if n == 2 and size**4 <= LARGE:
        i, j, p, q = np.ix_(*(np.arange(size),) * 4)
        return (batched(np.shape(ans), np.shape(a), 2, 2, ((p == i) | (q == j)).reshape(size * size, -1)),)
    return _dense_per_matrix(ans, a)


# --- the table ----------------------------------------------------------------------------------

defsparsity("inv", SparsityRule(_dense_per_matrix, "nonlinear", exact=True))
defsparsity("solve", SparsityRule(_solve, "nonlinear", exact=True))
defsparsity("cholesky", SparsityRule(_cholesky, "nonlinear", exact=True))
defsparsity("det", SparsityRule(_det, "nonlinear", exact=True))
defsparsity("logabsdet", SparsityRule(lambda ans, a: _dense_per_matrix(ans, a, 0), "nonlinear", exact=True))
defsparsity("slogdet_packed", SparsityRule(_slogdet_packed, "nonlinear", exact=True))
defsparsity("solve_triangular", SparsityRule(_solve_triangular, "nonlinear", exact=True))
# not exact: a factor with zeros inside its triangle (the op's samples with lower=False pass a lower
# factor, whose upper triangle is its diagonal) cuts dependencies the triangle's pattern keeps
defsparsity("cho_solve", SparsityRule(_cho_solve, "nonlinear", exact=False))
# matrix_power's order depends on n (linear for n <= 1): "nonlinear" is the safe superset
defsparsity("matrix_power", SparsityRule(_matrix_power, "nonlinear", exact=True))
