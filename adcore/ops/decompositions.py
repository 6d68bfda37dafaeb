"""Decompositions and norms: eigh, eigvalsh, svd, svdvals, qr, norm, pinv, lstsq (np.linalg).

An op has one output, so the decompositions with several are ops with a packed output that
`np.linalg.eigh/svd/qr(x)` on a traced value unpacks into NumPy's namedtuple (one decomposition
per call, and one rule that sees every output's cotangent): eigh_packed is (..., n+1, n), the
eigenvalues over the eigenvectors; svd_packed is (..., m+1+n, k), U over s over V (Vh is its
transpose); qr_packed is (..., m+n, n), Q over R. Eigen- and singular vectors are only defined up
to sign: each vector's largest entry is made positive (R's diagonal positive for qr), so the
outputs are functions of the input a finite difference can follow. Behaviour at degenerate
points (repeated or zero eigen/singular values, x = 0 for norm): docs/conventions.md.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from adcore import core
from adcore.core import concrete
from adcore.errors import InvalidValueError, LinearAlgebraError, UnsupportedFunctionError
from adcore.spec import Domain, Kink, OpSpec, Sample

# --- input checks ------------------------------------------------------------------


def _check_matrix(op: str, a: np.ndarray, square: bool = False) -> np.ndarray:
    """a as an array, or a LinearAlgebraError naming op and argument unless it is (..., m, n)."""
    a = np.asarray(a)
    if a.ndim < 2:
        raise LinearAlgebraError(
            f"op {op!r}: argument 'a' must be a matrix or a stack of them, shape (..., m, n); got shape {a.shape}"
        )
    if square and a.shape[-1] != a.shape[-2]:
        raise LinearAlgebraError(
            f"op {op!r}: argument 'a' must be a square matrix or a stack of them, shape (..., n, n); "
            f"got shape {a.shape}"
        )
    return a


def _check_uplo(op: str, uplo: Any) -> str:
    if uplo not in ("L", "U"):
        raise InvalidValueError(f"op {op!r}: UPLO must be 'L' or 'U', got {uplo!r}")
    return uplo


def _numpy_linalg(op: str, function: Any, *args: Any, **kwargs: Any) -> Any:
    """function(*args, **kwargs), NumPy's LinAlgError (no convergence) named for op."""
    try:
        return function(*args, **kwargs)
    except np.linalg.LinAlgError as e:
        raise LinearAlgebraError(f"op {op!r}: {e}") from e


def _fix_signs(vectors: np.ndarray) -> np.ndarray:
    """The sign of each column (..., n, k) that makes its largest-magnitude entry positive."""
    index = np.argmax(np.abs(vectors), axis=-2)[..., None, :]
    signs = np.sign(np.take_along_axis(vectors, index, axis=-2))
    return np.where(signs == 0, 1, signs).astype(vectors.dtype)


# --- impls -------------------------------------------------------------------------


def _eigh_packed(a: np.ndarray, UPLO: str = "L") -> np.ndarray:
    a = _check_matrix("eigh_packed", a, square=True)
    w, v = _numpy_linalg("eigh_packed", np.linalg.eigh, a, UPLO=_check_uplo("eigh_packed", UPLO))
    v = v * _fix_signs(v)
    return np.concatenate([w[..., None, :], v], axis=-2)


def _eigvalsh(a: np.ndarray, UPLO: str = "L") -> np.ndarray:
    a = _check_matrix("eigvalsh", a, square=True)
    return _numpy_linalg("eigvalsh", np.linalg.eigvalsh, a, UPLO=_check_uplo("eigvalsh", UPLO))


def _svd_packed(a: np.ndarray) -> np.ndarray:
    a = _check_matrix("svd_packed", a)
    u, s, vh = _numpy_linalg("svd_packed", np.linalg.svd, a, full_matrices=False)
    signs = _fix_signs(u)
    v = np.swapaxes(vh, -1, -2) * signs
    return np.concatenate([u * signs, s[..., None, :], v], axis=-2)


def _svdvals(a: np.ndarray) -> np.ndarray:
    return _numpy_linalg("svdvals", np.linalg.svd, _check_matrix("svdvals", a), compute_uv=False)


def _qr_packed(a: np.ndarray) -> np.ndarray:
    a = _check_matrix("qr_packed", a)
    if a.shape[-2] < a.shape[-1]:
        raise LinearAlgebraError(
            f"op 'qr_packed': argument 'a' must be square or tall (..., m, n) with m >= n, got shape "
            f"{a.shape}; np.linalg.qr(x) on a traced wide x factors its first m columns with it"
        )
    q, r = np.linalg.qr(a, mode="reduced")
    signs = np.sign(np.diagonal(r, axis1=-2, axis2=-1))
    signs = np.where(signs == 0, 1, signs).astype(a.dtype)
    return np.concatenate([q * signs[..., None, :], r * signs[..., :, None]], axis=-2)


def _pinv(a: np.ndarray, rcond: Any = None, hermitian: bool = False, rtol: Any = None) -> np.ndarray:
    a = _check_matrix("pinv", a)
    if hermitian:
        raise UnsupportedFunctionError(
            "op 'pinv': hermitian=True is not supported (its result reads one triangle of a); "
            "leave it out: the general pseudo-inverse of a symmetric matrix is the same"
        )
    return _numpy_linalg("pinv", np.linalg.pinv, a, rtol=pinv_rtol(a, rcond, rtol))


def pinv_rtol(a: Any, rcond: Any, rtol: Any) -> Any:
    """The relative cutoff under which singular values count as 0 (NumPy's default: max(m, n) eps)."""
    if rcond is not None and rtol is not None:
        raise InvalidValueError("op 'pinv': give rcond or rtol, not both")
    cut = rcond if rcond is not None else rtol
    if cut is None:
        return max(a.shape[-2:]) * np.finfo(np.result_type(a.dtype, np.float32)).eps
    return cut


_VECTOR_ORDS = (None, 1, 2, np.inf, -np.inf, 0)
_MATRIX_ORDS = (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf)


def norm_axes(x: Any, ord: Any, axis: Any) -> tuple[tuple[int, ...], bool]:
    """The axes `norm` reduces (non-negative) and whether it is a matrix norm over two of them."""
    ndim = len(x.shape)
    if axis is None:
        if ord is None:
            return tuple(range(ndim)), False  # the 2-norm of all entries, any ndim
        if ndim not in (1, 2):
            raise InvalidValueError(f"op 'norm': ord={ord!r} needs axis for an input of {ndim} axes")
        axes = tuple(range(ndim))
    else:
        axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
        if len(axes) not in (1, 2) or any(not -ndim <= a < ndim for a in axes):
            raise InvalidValueError(f"op 'norm': axis {axis!r} does not name 1 or 2 axes of shape {x.shape}")
        axes = tuple(int(a) % ndim for a in axes)
        if len(set(axes)) != len(axes):
            raise InvalidValueError(f"op 'norm': axis {axis!r} names the same axis twice")
    matrix = len(axes) == 2
    if matrix and ord not in _MATRIX_ORDS:
        raise InvalidValueError(f"op 'norm': matrix ord must be one of {_MATRIX_ORDS}, got {ord!r}")
    if not matrix and (isinstance(ord, str) or not np.isscalar(ord) and ord is not None):
        raise InvalidValueError(f"op 'norm': vector ord must be a number or None, got {ord!r}")
    return axes, matrix and ord not in (None, "fro")


def _norm(x: np.ndarray, ord: Any = None, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    x = np.asarray(x)
    norm_axes(x, ord, axis)
    out = np.asarray(np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims))
    return out.astype(x.dtype) if np.issubdtype(x.dtype, np.floating) else out


def _lstsq_solution(a: Any, b: Any, rcond: Any = None) -> Any:
    """pinv(a, rcond) @ b, the least-squares solution of least norm (NumPy's lstsq's x)."""
    from adcore.ops.linalg import matmul

    if len(a.shape) != 2 or len(b.shape) not in (1, 2) or b.shape[0] != a.shape[0]:
        raise LinearAlgebraError(
            f"op 'lstsq_solution': a must be (m, n) and b (m,) or (m, k), got {a.shape} and {b.shape}"
        )
    return matmul(pinv(a, rcond=lstsq_rcond(a, rcond)), b)


def lstsq_rcond(a: Any, rcond: Any) -> Any:
    """NumPy's lstsq default: singular values under max(m, n) eps of the largest count as 0."""
    return max(a.shape[-2:]) * np.finfo(np.result_type(a.dtype, np.float32)).eps if rcond is None else rcond


# --- samples -----------------------------------------------------------------------


def _orthogonal(rng: np.random.Generator, n: int, batch: tuple[int, ...]) -> np.ndarray:
    q, r = np.linalg.qr(rng.standard_normal(batch + (n, n)))
    return q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


def _separated(rng: np.random.Generator, k: int, batch: tuple[int, ...], low: float) -> np.ndarray:
    """k values per batch entry, at least 0.5 apart, from `low` up, in random order."""
    steps = rng.uniform(0.5, 1.0, batch + (k,))
    return rng.permuted(low + np.cumsum(steps, axis=-1), axis=-1)


def _symmetric_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    out = []
    for batch, n, uplo in (((), 1, "L"), ((), 2, "L"), ((), 3, "L"), ((), 3, "U"), ((2,), 3, "L")):
        q = _orthogonal(rng, n, batch)
        a = (q * _separated(rng, n, batch, -2.0)[..., None, :]) @ np.swapaxes(q, -1, -2)
        out.append(Sample((a.astype(dtype),), {"UPLO": uplo}))
    # the triangle eigh does not read holds anything: its derivative there is 0
    a = out[2].args[0].copy()
    a[np.triu_indices(3, 1)] = rng.uniform(-2, 2, 3)
    out.append(Sample((a,), {"UPLO": "L"}))
    return out


def _with_singular_values(rng: np.random.Generator, batch: tuple[int, ...], m: int, n: int) -> np.ndarray:
    k = min(m, n)
    u = _orthogonal(rng, m, batch)[..., :k]
    v = _orthogonal(rng, n, batch)[..., :k]
    return (u * _separated(rng, k, batch, 0.5)[..., None, :]) @ np.swapaxes(v, -1, -2)


_MATRIX_SHAPES = (((), 1, 1), ((), 2, 2), ((), 3, 3), ((), 4, 2), ((), 2, 4), ((2,), 3, 2))


def _matrix_samples(shapes=_MATRIX_SHAPES, params=({},)):
    def draw(rng: np.random.Generator, dtype: Any) -> list[Sample]:
        return [
            Sample((_with_singular_values(rng, batch, m, n).astype(dtype),), dict(p))
            for batch, m, n in shapes
            for p in params
        ]

    return draw


_VECTOR_LAYOUTS = (((4,), None), ((2, 3), 1), ((2, 3), (0,)), ((2, 3, 2), -1))
_MATRIX_LAYOUTS = (((), 3, 3, None), ((), 4, 2, None), ((2,), 3, 2, (1, 2)), ((2,), 2, 3, (2, 0)))


def _norm_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    """Each ord in two of the layouts (axis None, int, 1-tuple, negative; matrices transposed and
    batched); entries away from 0 and from |x| ties, matrices with separated singular values."""
    away = Domain(-2.0, 2.0, away_from_zero=0.3, distinct=True)
    out = []
    for k, ord in enumerate((None, 2, 1, np.inf, -np.inf, 0, 3, 0.5, -1.5)):
        for shape, axis in (_VECTOR_LAYOUTS[k % 4], _VECTOR_LAYOUTS[(k + 1) % 4]):
            out.append(Sample((away.draw(rng, shape, dtype),), {"ord": ord, "axis": axis}))
    out.append(Sample((away.draw(rng, (2, 3), dtype),), {"ord": 2, "axis": 0, "keepdims": True}))
    out.append(Sample((away.draw(rng, (2, 3, 2), dtype),), {}))  # all entries, any ndim
    for k, ord in enumerate((None, "fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf)):
        for batch, rows, cols, axis in (_MATRIX_LAYOUTS[k % 4], _MATRIX_LAYOUTS[(k + 2) % 4]):
            a = np.moveaxis(_with_singular_values(rng, batch, rows, cols), (-2, -1), axis or (0, 1))
            a = a + rng.choice([-0.05, 0.05], a.shape)  # no zero entries
            out.append(Sample((a.astype(dtype),), {"ord": ord, "axis": axis}))
    out.append(Sample((out[-1].args[0],), {"ord": "nuc", "axis": (2, 0), "keepdims": True}))
    return out


def _lstsq_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    out = []
    for (m, n), bshape in ((((4, 2)), (4,)), (((4, 2)), (4, 3)), (((3, 3)), (3,)), (((2, 3)), (2,))):
        a = _with_singular_values(rng, (), m, n).astype(dtype)
        out.append(Sample((a, rng.uniform(-2, 2, bshape).astype(dtype))))
    return out


# --- the ops ------------------------------------------------------------------------

eigh_packed = OpSpec(
    "eigh_packed",
    _eigh_packed,
    params=("UPLO",),
    samples=_symmetric_samples,
    doc="eigenvalues over eigenvectors, (..., n+1, n), of the triangle UPLO names (np.linalg.eigh "
    "unpacks it); degenerate eigenvalues: docs/conventions.md",
)
eigvalsh = OpSpec(
    "eigvalsh",
    _eigvalsh,
    params=("UPLO",),
    numpy=(np.linalg.eigvalsh,),
    samples=_symmetric_samples,
    doc="exact at repeated eigenvalues (I at A = I for sum(eigvalsh(A)))",
)
svd_packed = OpSpec(
    "svd_packed",
    _svd_packed,
    samples=_matrix_samples(),
    doc="U over s over V, (..., m+1+n, min(m, n)) (np.linalg.svd unpacks it, full_matrices=False); "
    "repeated or zero singular values: docs/conventions.md",
)
svdvals = OpSpec(
    "svdvals",
    _svdvals,
    numpy=(np.linalg.svdvals,),
    samples=_matrix_samples(),
    kinks=(
        Kink(
            ([[1.0, 2.0], [2.0, 4.0]],),
            (np.array([[[0.2, 0.4], [0.4, 0.8]], [[0.0, 0.0], [0.0, 0.0]]]),),
            why="a zero singular value has derivative 0 (abs'(0) = 0); the other u v^T",
        ),
    ),
    doc="singular values (np.linalg.svd(x, compute_uv=False)); exact at repeated ones",
)
qr_packed = OpSpec(
    "qr_packed",
    _qr_packed,
    samples=_matrix_samples((((), 1, 1), ((), 3, 3), ((), 4, 2), ((2,), 3, 2))),
    doc="Q over R, (..., m+n, n), m >= n, R's diagonal positive (np.linalg.qr unpacks it)",
)
norm = OpSpec(
    "norm",
    _norm,
    params=("ord", "axis", "keepdims"),
    numpy=(np.linalg.norm,),
    samples=_norm_samples,
    kinks=(
        Kink((np.zeros(3),), (np.zeros(3),), why="the 2-norm's gradient at 0 is 0, a subgradient"),
        Kink((np.zeros((2, 2)),), (np.zeros((2, 2)),), {"ord": "fro"}, why="'fro' at 0: gradient 0"),
        Kink(([-1.0, 0.0, 2.0],), (np.array([-1.0, 0.0, 1.0]),), {"ord": 1}, why="ord 1: abs'(0) = 0"),
        Kink(([3.0, -3.0, 1.0],), (np.array([0.5, -0.5, 0.0]),), {"ord": np.inf}, why="ord inf: ties split"),
    ),
    doc="vector ords and 'fro', 'nuc', ±1, ±2, ±inf; the gradient at x = 0 is 0 (a subgradient); "
    "'nuc' at rank-deficient x: U V^T on the nonzero singular values",
)
pinv = OpSpec(
    "pinv",
    _pinv,
    params=("rcond", "hermitian", "rtol"),
    numpy=(np.linalg.pinv,),
    samples=_matrix_samples(),
    doc="the derivative holds the rank fixed (Golub & Pereyra): singular values under the cutoff stay 0",
)
lstsq_solution = OpSpec(
    "lstsq_solution",
    _lstsq_solution,
    nin=2,
    params=("rcond",),
    samples=_lstsq_samples,
    doc="np.linalg.lstsq's x, pinv(a) @ b (the least-norm solution); its derivative holds a's rank fixed",
)


# --- NumPy's functions with several outputs, on traced values -------------------------


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
    return core.OPS.transpose(x, axes=tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2))


def linalg_eigh(a: Any, UPLO: str = "L") -> EighResult:
    """np.linalg.eigh on a traced value: one eigh_packed, unpacked."""
    packed = eigh_packed(a, UPLO=UPLO)
    return EighResult(packed[..., 0, :], packed[..., 1:, :])


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
    return SVDResult(packed[..., :m, :], packed[..., m, :], _swap_last(packed[..., m + 1 :, :]))


def linalg_qr(a: Any, mode: str = "reduced") -> Any:
    """np.linalg.qr on a traced value: Q and R of qr_packed; a wide a as Q [R1, Q^T a2]."""
    if mode not in ("reduced", "r"):
        raise UnsupportedFunctionError(
            f"np.linalg.qr(x, mode={mode!r}) on a traced value: only mode='reduced' (and 'r') are supported"
        )
    m, n = a.shape[-2:]
    if m < n:
        q, r1 = linalg_qr(a[..., :, :m])
        r = core.OPS.concatenate([r1, core.OPS.matmul(_swap_last(q), a[..., :, m:])], axis=-1)
        return r if mode == "r" else QRResult(q, r)
    packed = qr_packed(a)
    q, r = packed[..., :m, :], packed[..., m:, :]
    return r if mode == "r" else QRResult(q, r)


def linalg_lstsq(a: Any, b: Any, rcond: Any = None) -> LstsqResult:
    """np.linalg.lstsq on traced values: x, residuals and s traced, rank a plain int."""
    x = lstsq_solution(a, b, rcond=rcond)
    cut = lstsq_rcond(a, rcond)
    rank = int(np.linalg.matrix_rank(concrete(a), rtol=cut))
    m, n = a.shape
    s = svdvals(a)
    if rank == n and m > n:
        r = core.OPS.matmul(a, x) - b
        residuals = core.OPS.sum(r * r, axis=0)
        if residuals.ndim == 0:
            residuals = core.OPS.reshape(residuals, shape=(1,))
    else:
        residuals = np.zeros((0,), dtype=np.result_type(concrete(a), concrete(b)))
    return LstsqResult(x, residuals, rank, s)


def linalg_matrix_rank(A: Any, tol: Any = None, hermitian: bool = False, **kwargs: Any) -> Any:
    """np.linalg.matrix_rank on a traced value: a plain integer from its concrete value (no derivative)."""
    return np.linalg.matrix_rank(concrete(A), tol=tol, hermitian=hermitian, **kwargs)


def linalg_vector_norm(x: Any, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    """np.linalg.vector_norm on a traced value: norm over `axis`, every axis of any ndim for None."""
    if axis is None:
        out = norm(core.OPS.reshape(x, shape=(-1,)), ord=ord)
        return core.OPS.reshape(out, shape=(1,) * x.ndim) if keepdims else out
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    if len(axes) == 1:
        return norm(x, ord=ord, axis=axes[0], keepdims=keepdims)
    ndim = x.ndim
    axes = tuple(int(a) % ndim for a in axes)
    rest = tuple(i for i in range(ndim) if i not in axes)
    moved = core.OPS.transpose(x, axes=rest + axes)
    flat = core.OPS.reshape(moved, shape=tuple(x.shape[i] for i in rest) + (-1,))
    out = norm(flat, ord=ord, axis=-1)
    if keepdims:
        out = core.OPS.reshape(out, shape=tuple(1 if i in axes else n for i, n in enumerate(x.shape)))
    return out


def linalg_matrix_norm(x: Any, keepdims: bool = False, ord: Any = "fro") -> Any:
    """np.linalg.matrix_norm on a traced value: norm over the last two axes."""
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


core.NUMPY_FUNCTIONS.update(
    {
        np.linalg.vector_norm: linalg_vector_norm,
        np.linalg.matrix_norm: linalg_matrix_norm,
        np.linalg.eigh: linalg_eigh,
        np.linalg.svd: linalg_svd,
        np.linalg.qr: linalg_qr,
        np.linalg.lstsq: linalg_lstsq,
        np.linalg.matrix_rank: linalg_matrix_rank,
    }
)


# --- what the rule packages share (adcore ops, looked up at call time, so rules nest) ---------


def degenerate_tolerance(values: Any, n: int) -> np.ndarray:
    """The gap under which two eigen- or singular values count as equal: 32 n eps of the largest
    (per matrix of a batch, kept as a trailing axis), from the concrete values."""
    values = concrete(values)
    eps = np.finfo(values.dtype).eps
    return 32 * max(n, 1) * eps * np.max(np.abs(values), axis=-1, initial=0.0, keepdims=True)


def nonzero_singular_values(s: Any, tol: np.ndarray) -> np.ndarray:
    """1 where a singular value is above tol, 0 where it counts as 0: a zero singular value is
    |.| at 0 of the input (s = |u^T a v|), whose derivative is abs'(0) = 0 (docs/conventions.md)."""
    return (concrete(s) > tol).astype(concrete(s).dtype)


def qr_r_inverse(r: Any) -> Any:
    """R^-1 for qr's rules, or a LinearAlgebraError where R's diagonal has a 0 (a rank-deficient a:
    Q's columns past the rank are not determined by a, so they have no derivative)."""
    diagonal = np.abs(np.diagonal(concrete(r), axis1=-2, axis2=-1))
    if np.any(diagonal <= degenerate_tolerance(diagonal, r.shape[-1])):
        raise LinearAlgebraError(
            "op 'qr_packed': no derivative at a rank-deficient a (R has a zero on its diagonal, "
            f"{np.array2string(diagonal, precision=3)}): Q's columns past the rank are not determined "
            "by a. Differentiate at a full-rank a, or use svd/pinv, whose derivatives hold the rank fixed"
        )
    return core.OPS.inv(r)


def refuse_second_order(op: str, values: Any, tol: np.ndarray, *inputs: Any, zeros: bool = False) -> None:
    """Refuse a rule run under an outer derivative (a traced input: second order) at a point where
    two values coincide (or, with `zeros`, one is 0): the first derivative there is a convention
    (docs/conventions.md), so differentiating it again would give a plausible wrong number."""
    if not any(isinstance(x, core.Tracer) for x in inputs):
        return
    v = concrete(values)
    n = v.shape[-1]
    pairs = (np.abs(v[..., None, :] - v[..., :, None]) <= tol[..., None]) & ~np.eye(n, dtype=bool)
    if np.any(pairs) or (zeros and np.any(np.abs(v) <= tol)):
        raise InvalidValueError(
            f"op {op!r}: no second derivative at repeated{' or zero' if zeros else ''} "
            f"{'singular ' if zeros else 'eigen'}values ({np.array2string(v, precision=4)}): the "
            "first derivative there is a convention, exact for functions invariant in the degenerate "
            "subspace (docs/conventions.md), and not differentiable again; take second derivatives "
            "where the values are distinct"
        )


def gap_inverse(values: Any, tol: np.ndarray, sign: int = -1) -> Any:
    """F[..., i, j] = 1 / (v_j - v_i) (sign -1) or 1 / (v_j + v_i) (sign +1), 0 where that is at
    most tol (degenerate pairs, the diagonal): the rules' masked F matrix."""
    ops = core.OPS
    row = ops.expand_dims(values, axis=-2)  # v_j along the last axis
    column = ops.expand_dims(values, axis=-1)  # v_i
    gap = row - column if sign < 0 else row + column
    n = concrete(values).shape[-1]
    masked = (np.abs(concrete(gap)) <= tol[..., None]) | np.eye(n, dtype=bool)
    safe = ops.where(masked, np.ones((), concrete(values).dtype), gap)
    return ops.where(masked, np.zeros((), concrete(values).dtype), 1.0 / safe)


def swap_last(x: Any) -> Any:
    """x with its last two axes swapped (the transpose of each matrix of a batch)."""
    return core.OPS.transpose(x, axes=tuple(range(len(x.shape) - 2)) + (len(x.shape) - 1, len(x.shape) - 2))


def diagonal_of(x: Any) -> Any:
    """The diagonal of each square matrix (..., n, n) as (..., n)."""
    n = x.shape[-1]
    return core.OPS.sum(x * np.eye(n, dtype=concrete(x).dtype), axis=-2)


def diagonal_matrix(d: Any) -> Any:
    """(..., n) as diagonal matrices (..., n, n)."""
    n = d.shape[-1]
    return core.OPS.expand_dims(d, axis=-2) * np.eye(n, dtype=concrete(d).dtype)


def read_triangle(a: Any, uplo: str) -> np.ndarray:
    """The weights w with <G, dM> = <w G, dA> for the symmetric M eigh reads from the triangle
    `uplo` of A (G symmetric): 2 off the diagonal on that triangle, 1 on it, 0 on the other."""
    n = a.shape[-1]
    ones = np.ones((n, n), dtype=concrete(a).dtype)
    return (np.tril(ones) + np.tril(ones, -1)) if uplo == "L" else (np.triu(ones) + np.triu(ones, 1))


def symmetric_read(t: Any, uplo: str) -> Any:
    """The symmetric matrix eigh reads from the triangle `uplo` of t (a tangent, batched or not)."""
    n = t.shape[-1]
    dtype = concrete(t).dtype
    triangle = np.tril(np.ones((n, n), dtype)) if uplo == "L" else np.triu(np.ones((n, n), dtype))
    part = t * triangle
    return part + swap_last(part) - t * np.eye(n, dtype=dtype)


def norm_direction(x: Any, ans: Any, ord: Any = None, axis: Any = None) -> Any:
    """D with d norm = sum over the reduced axes of D * dx: norm's (sub)gradient, shaped as x.

    0 where the norm is 0 (2-norm, 'fro'), sign(x) on the ties of inf/1 norms split equally, U V^T
    over the nonzero singular values ('nuc'), u v^T of the extreme singular value (±2, ties split).
    """
    ops = core.OPS
    axes, matrix = norm_axes(x, ord, axis)
    value = concrete(x)
    kept = tuple(1 if i in axes else n for i, n in enumerate(x.shape))
    n_kept = ops.reshape(ans, shape=kept)
    if matrix:
        return _matrix_norm_direction(x, ord, axes)
    if ord in (None, 2, "fro"):
        zero = concrete(n_kept) == 0
        safe = ops.where(zero, np.ones((), value.dtype), n_kept)
        return x * ops.where(zero, np.zeros((), value.dtype), 1.0 / safe)
    signs = np.sign(value)
    if ord == 0:
        return np.zeros_like(value)
    if ord == 1:
        return signs
    if ord in (np.inf, -np.inf):
        hit = np.abs(value) == concrete(n_kept)
        return signs * (hit / np.sum(hit, axis=axes, keepdims=True)).astype(value.dtype)
    if ord < 1 and np.any(value == 0):
        raise InvalidValueError(
            f"op 'norm': ord={ord!r} has no derivative at an x with zero entries (|x|**{ord} has an "
            "infinite slope at 0); differentiate where every entry is nonzero"
        )
    zero = concrete(n_kept) == 0
    safe = ops.where(zero, np.ones((), value.dtype), n_kept)
    scale = ops.where(zero, np.zeros((), value.dtype), safe ** (1.0 - ord))
    return signs * ops.abs(x) ** (ord - 1.0) * scale


def _matrix_norm_direction(x: Any, ord: Any, axes: tuple[int, ...]) -> Any:
    """norm_direction for 'nuc', ±1, ±2, ±inf over the two axes `axes` (rows, columns)."""
    ops = core.OPS
    others = [i for i in range(len(x.shape)) if i not in axes]
    order = (*others, *axes)
    inverse = tuple(int(i) for i in np.argsort(order))
    x2 = ops.transpose(x, axes=order)
    value = concrete(x2)
    if ord in ("nuc", 2, -2):
        m, n = value.shape[-2:]
        packed = svd_packed(x2)
        u, s, v = packed[..., :m, :], concrete(packed[..., m, :]), packed[..., m + 1 :, :]
        tol = degenerate_tolerance(s, max(m, n))
        refuse_second_order("norm", s, tol, x, zeros=True)
        if ord == "nuc":
            weights = s > tol
        else:
            extreme = np.max(s, axis=-1, keepdims=True) if ord == 2 else np.min(s, axis=-1, keepdims=True)
            weights = np.abs(s - extreme) <= tol
            weights = weights / np.sum(weights, axis=-1, keepdims=True)
        d2 = ops.matmul(u * weights.astype(value.dtype)[..., None, :], swap_last(v))
    else:
        along = -2 if ord in (1, -1) else -1  # column sums for ±1, row sums for ±inf
        sums = np.sum(np.abs(value), axis=along, keepdims=True)
        extreme = (
            np.max(sums, axis=(-2, -1), keepdims=True)
            if ord > 0
            else np.min(sums, axis=(-2, -1), keepdims=True)
        )
        hit = sums == extreme
        d2 = np.sign(value) * (hit / np.sum(hit, axis=(-2, -1), keepdims=True)).astype(value.dtype)
    return ops.transpose(d2, axes=inverse)
