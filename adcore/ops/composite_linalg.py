"""np.linalg's functions on traced values whose result is not one op's output: eigh, svd and qr
(NumPy's namedtuples of slices of one packed op), lstsq ((x, residuals, rank, s)), matrix_rank
(a plain int), vector_norm and matrix_norm (NumPy 2, through the norm op). Each takes NumPy's
arguments; `NUMPY_FUNCTIONS` maps the NumPy function to it (docs/conventions.md,
"decompositions").
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from adcore.core import concrete
from adcore.errors import UnsupportedFunctionError
from adcore.ops import complex_parts, shapes
from adcore.ops.decompositions import (
    eigh_packed,
    lstsq_residuals,
    lstsq_singular_values,
    lstsq_solution,
    qr_packed,
    svd_packed,
    svdvals,
)
from adcore.ops.norms import norm


class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


class QRResult(NamedTuple):
    Q: Any
    R: Any


class LstsqResult(NamedTuple):
    x: Any
    residuals: Any
    rank: int
    s: Any


def _swap_last(x: Any) -> Any:
    return shapes.transpose(x, axes=tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2))


def _values_row(row: Any) -> Any:
    """The eigen- or singular values of a packed output: real, as NumPy's, when the vectors are
    complex (their real part: the packed row holds them exactly, with imaginary part 0)."""
    return complex_parts.real(row) if np.dtype(row.dtype).kind == "c" else row


def linalg_eigh(a: Any, UPLO: str = "L") -> EighResult:
    """np.linalg.eigh on a traced value: one eigh_packed, unpacked."""
    packed = eigh_packed(a, UPLO=UPLO)
    return EighResult(_values_row(packed[..., 0, :]), packed[..., 1:, :])


def linalg_svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False) -> Any:
    """np.linalg.svd on a traced value: svdvals, or one svd_packed unpacked (thin, or square)."""
    if hermitian:
        raise UnsupportedFunctionError(
            "np.linalg.svd(x, hermitian=True) on a traced value: leave hermitian out"
        )
    if not compute_uv:
        return svdvals(a)
    m, n = a.shape[-2:]
    if full_matrices and m != n:
        raise UnsupportedFunctionError(
            f"np.linalg.svd(x) of a traced {m}x{n} x with full_matrices=True (NumPy's default): the "
            "columns of U or V beyond min(m, n) are not determined by x, so they have no derivative. "
            "Pass full_matrices=False."
        )
    packed = svd_packed(a)
    return SVDResult(packed[..., :m, :], _values_row(packed[..., m, :]), _swap_last(packed[..., m + 1 :, :]))


def linalg_qr(a: Any, mode: str = "reduced") -> Any:
    """np.linalg.qr on a traced value: Q and R of qr_packed (a wide a's Q without its padding)."""
    if mode not in ("reduced", "r"):
        raise UnsupportedFunctionError(
            f"np.linalg.qr(x, mode={mode!r}) on a traced value: only mode='reduced' (and 'r') are supported"
        )
    m, n = a.shape[-2:]
    packed = qr_packed(a)
    q, r = packed[..., :m, : min(m, n)], packed[..., m:, :]
    return r if mode == "r" else QRResult(q, r)


def linalg_lstsq(a: Any, b: Any, rcond: Any = None) -> LstsqResult:
    """np.linalg.lstsq on traced values, NumPy's bit for bit: x, residuals and s traced (ops whose
    impls are NumPy's lstsq), rank NumPy's own (a plain numpy integer, no derivative)."""
    rank = np.linalg.lstsq(concrete(a), concrete(b), rcond=rcond)[2]
    return LstsqResult(
        lstsq_solution(a, b, rcond=rcond),
        lstsq_residuals(a, b, rcond=rcond),
        rank,
        lstsq_singular_values(a),
    )


def linalg_matrix_rank(A: Any, tol: Any = None, hermitian: bool = False, **kwargs: Any) -> Any:
    """np.linalg.matrix_rank on a traced value: a plain integer from its concrete value (no derivative)."""
    return np.linalg.matrix_rank(concrete(A), tol=tol, hermitian=hermitian, **kwargs)


def linalg_vector_norm(x: Any, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    """np.linalg.vector_norm on a traced value, arranged as NumPy arranges it (its bits depend on
    the order of the sum): a tuple of axes moved first, in the order given, and flattened."""
    ndim = x.ndim
    if axis is None:
        out = norm(shapes.reshape(x, shape=(-1,)), ord=ord)
    elif isinstance(axis, tuple):
        axes = tuple(int(a) % ndim for a in axis)
        rest = tuple(i for i in range(ndim) if i not in axes)
        moved = shapes.transpose(x, axes=axes + rest)
        size = int(np.prod([x.shape[i] for i in axes], dtype=int))
        out = norm(shapes.reshape(moved, shape=(size, *(x.shape[i] for i in rest))), ord=ord, axis=0)
    else:
        out = norm(x, ord=ord, axis=axis)
    if keepdims:
        reduced = range(ndim) if axis is None else [int(a) % ndim for a in np.atleast_1d(axis)]
        out = shapes.reshape(out, shape=tuple(1 if i in reduced else n for i, n in enumerate(x.shape)))
    return out


def linalg_matrix_norm(x: Any, keepdims: bool = False, ord: Any = "fro") -> Any:
    """np.linalg.matrix_norm on a traced value: norm over the last two axes."""
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


NUMPY_FUNCTIONS = {
    np.linalg.vector_norm: linalg_vector_norm,
    np.linalg.matrix_norm: linalg_matrix_norm,
    np.linalg.eigh: linalg_eigh,
    np.linalg.svd: linalg_svd,
    np.linalg.qr: linalg_qr,
    np.linalg.lstsq: linalg_lstsq,
    np.linalg.matrix_rank: linalg_matrix_rank,
}
