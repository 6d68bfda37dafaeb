"""The scipy plugin's `sparsity` rules: which output elements may depend on which input elements.

Elementwise ops need none (the sparsity backend gives an op flagged elementwise the elementwise
pattern) but xlogy and xlog1py, whose y does not reach the output where x = 0; multivariate_normal_logpdf
is traceable (its body is traced). The matrix functions (spd_inverse, expm, sqrtm, solve_sylvester)
are dense per matrix of a stack; solve_banded is the band's solve (triangular when a band is
empty, the right-hand side's columns apart); signal_convolve is exact windows in every axis;
odeint is dense in y0 and theta after its first time, in t through its first and own time only.

A structured pattern of more than LARGE entries is not built: the input is taken as dense (a
superset), so that a large constant (a banded matrix of 10^4 rows) costs nothing.

The rule form is adcore_sparsity.extend's, imported when a rule runs or the table is first read
(SPARSITY_RULES), so importing this module needs no sparsity plugin: plugin.py registers the table
where adcore-sparsity is installed.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from adcore_scipy.linalg.ops import check_bands

LARGE = 1 << 24  # entries of a structured pattern past which the input is taken as dense


def _size(shape: Any) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _rows_where(pattern: Any, keep: np.ndarray) -> Any:
    """The pattern with only the rows where `keep` (flat, one per output element) holds."""
    from scipy import sparse

    kept = (sparse.diags_array(keep.astype(np.float64)) @ pattern).tocsr()
    kept.eliminate_zeros()
    return kept


# --- elementwise with a zero factor ---------------------------------------------------------------


def _times_log(ans: Any, x: Any, y: Any) -> tuple:
    """x * log(y) (or log1p): y's entry only where x may be non-zero (d/dy = x / y, 0 where x = 0)."""
    from adcore_sparsity.extend import broadcast, known

    out = np.shape(ans)
    to_y = broadcast(np.shape(y), out)
    if known(x):
        to_y = _rows_where(to_y, np.broadcast_to(np.asarray(x) != 0, out).ravel())
    return broadcast(np.shape(x), out), to_y


# --- matrix functions -------------------------------------------------------------------------------


def _dense_per_matrix(ans: Any, *matrices: Any) -> tuple:
    from adcore_sparsity.extend import batched

    return tuple(batched(np.shape(ans), np.shape(m), 2, 2) for m in matrices)


def band_core(n: int, k: int, low: int, up: int) -> tuple[np.ndarray, np.ndarray]:
    """The cores of x = A^-1 b for A with `low` and `up` bands, stored as ab (low + up + 1, n):
    ((n*k, ab.size), (n*k, n*k)). x_i reads every entry of a band that has both bands (its inverse
    is full), A's rows p <= i when it is lower triangular (up = 0), p >= i when upper (low = 0);
    b's rows likewise; each column of x its own column of b."""
    r, j = np.indices((low + up + 1, n))
    row = r - up + j  # A[row, j] = ab[r, j]
    used = (row >= 0) & (row < n)
    i, p = np.ix_(np.arange(n), np.arange(n))
    reads_row = ((up > 0) | (p <= i)) & ((low > 0) | (p >= i))  # (i, p): x_i reads A's row p, b's row p
    ab_reads = reads_row[:, np.clip(row, 0, n - 1).ravel()] & used.ravel()[None, :]
    return np.kron(ab_reads, np.ones((k, 1))), np.kron(reads_row, np.eye(k))


def _solve_banded(ans: Any, ab: Any, b: Any, l_and_u: Any = (0, 0)) -> tuple:
    from adcore_sparsity.extend import DENSE
    from scipy import sparse

    low, up = check_bands(l_and_u, ab)
    n = np.shape(ab)[1]
    k = 1 if len(np.shape(b)) == 1 else np.shape(b)[1]
    if n * n * k * (low + up + 2) > LARGE:
        return DENSE, DENSE  # a superset: the unused corners, the triangles of a one-sided band
    core_ab, core_b = band_core(n, k, low, up)
    full = low > 0 and up > 0 and k == 1  # a full band's inverse is full: b's pattern is DENSE
    return sparse.csr_array(core_ab), DENSE if full else sparse.csr_array(core_b)


# --- convolution -----------------------------------------------------------------------------------


def convolve_window(mode: str, s1: int, s2: int) -> int:
    """The start, in the full convolution of lengths s1 and s2 along an axis, of what `mode` keeps
    (scipy.signal's: same is centred on in1, valid is the larger minus the smaller plus one)."""
    full = s1 + s2 - 1
    if mode == "full":
        return 0
    if mode == "same":
        return (full - s1) // 2
    return (full - (max(s1, s2) - min(s1, s2) + 1)) // 2


def _signal_convolve(ans: Any, in1: Any, in2: Any, mode: str = "full", method: str = "auto") -> tuple:
    """out[t] = sum in1[i] in2[t - i] over every axis: the pair (i, j) is an entry of in1's pattern
    (kept where in2[j] may be non-zero) and of in2's (kept where in1[i] may be), at t = i + j
    shifted into the mode's window."""
    from adcore_sparsity.extend import known

    shape1, shape2, out = np.shape(in1), np.shape(in2), np.shape(ans)
    starts = [convolve_window(mode, a, b) for a, b in zip(shape1, shape2)]
    i = np.indices(shape1).reshape(len(shape1), _size(shape1))[:, :, None]
    j = np.indices(shape2).reshape(len(shape2), _size(shape2))[:, None, :]
    t = [i[d] + j[d] - starts[d] for d in range(len(out))]
    inside = np.ones(np.broadcast_shapes(i.shape[1:], j.shape[1:]), dtype=bool)
    for d, n in enumerate(out):
        inside &= (t[d] >= 0) & (t[d] < n)
    rows = (
        np.ravel_multi_index(tuple(np.where(inside, td, 0) for td in t), out)
        if out
        else np.zeros_like(inside, int)
    )
    first, second = np.broadcast_arrays(np.arange(_size(shape1))[:, None], np.arange(_size(shape2))[None, :])
    nonzero1 = (np.asarray(in1) != 0).ravel() if known(in1) else np.ones(_size(shape1), dtype=bool)
    nonzero2 = (np.asarray(in2) != 0).ravel() if known(in2) else np.ones(_size(shape2), dtype=bool)

    def pattern(keep: np.ndarray, column: np.ndarray, size: int) -> Any:
        from scipy import sparse

        keep = keep & inside
        ones = np.ones(int(keep.sum()))
        matrix = sparse.coo_array((ones, (rows[keep], column[keep])), shape=(_size(out), size)).tocsr()
        matrix.sum_duplicates()
        return matrix

    return (
        pattern(nonzero2[None, :] & np.ones_like(inside), first, _size(shape1)),
        pattern(nonzero1[:, None] & np.ones_like(inside), second, _size(shape2)),
    )


# --- odeint ----------------------------------------------------------------------------------------


def _odeint(ans: Any, y0: Any, t: Any, theta: Any, **params: Any) -> tuple:
    """ys (len(t), n): ys[0] = y0; a later ys[k] reads all of y0 and theta (the dynamics may couple
    every component), and t[0] and t[k] only (the flow from t[0] to t[k])."""
    from adcore_sparsity.extend import DENSE
    from scipy import sparse

    steps, n = np.shape(ans)
    n_theta = _size(np.shape(theta))
    later = sparse.csr_array(np.repeat(np.arange(steps) > 0, n)[:, None].astype(np.float64))
    to_y0 = DENSE
    if steps * n * n <= LARGE:
        to_y0 = sparse.vstack(
            [sparse.eye_array(n), sparse.csr_array(np.ones(((steps - 1) * n, n)))], format="csr"
        )
    to_theta = (
        DENSE if steps * n * n_theta > LARGE else (later @ sparse.csr_array(np.ones((1, n_theta)))).tocsr()
    )
    k = np.repeat(np.arange(1, steps), n)  # the time of each row after the first
    rows = np.arange(n, steps * n)
    to_t = sparse.coo_array(
        (np.ones(2 * rows.size), (np.concatenate([rows, rows]), np.concatenate([np.zeros_like(k), k]))),
        shape=(steps * n, steps),
    ).tocsr()
    return to_y0, to_t, to_theta


@functools.cache
def _table() -> dict[str, Any]:
    from adcore_sparsity.extend import DENSE, SparsityRule

    return {
        "xlogy": SparsityRule(_times_log, "nonlinear", exact=True),
        "xlog1py": SparsityRule(_times_log, "nonlinear", exact=True),
        "spd_inverse": SparsityRule(lambda ans, a: (DENSE,), "nonlinear", exact=True),
        "expm": SparsityRule(_dense_per_matrix, "nonlinear", exact=True),
        "sqrtm": SparsityRule(_dense_per_matrix, "nonlinear", exact=True),
        "solve_sylvester": SparsityRule(_dense_per_matrix, "nonlinear", exact=True),
        "solve_banded": SparsityRule(_solve_banded, "nonlinear", exact=True),
        "signal_convolve": SparsityRule(_signal_convolve, "multilinear", exact=True),
        # not exact: dynamics that leave components apart (or ignore theta) give zeros in a dense block
        "odeint": SparsityRule(_odeint, "nonlinear", exact=False),
    }


def __getattr__(name: str) -> Any:
    # SPARSITY_RULES, the op name -> SparsityRule table, is built on first read (see the docstring)
    if name == "SPARSITY_RULES":
        return _table()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
