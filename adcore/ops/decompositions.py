"""Decompositions: eigh, eigvalsh, svd, svdvals, qr, pinv, lstsq (np.linalg; norm is adcore/ops/norms.py).

An op has one output, so the decompositions with several are ops with a packed output that
`np.linalg.eigh/svd/qr(x)` on a traced value unpacks into NumPy's namedtuple (one decomposition
per call, and one rule that sees every output's cotangent): eigh_packed is (..., n+1, n), the
eigenvalues over the eigenvectors; svd_packed is (..., m+1+n, k), U over s over V (Vh is its
transpose); qr_packed is (..., m+k, n), k = min(m, n), Q over R (a wide a's m x m Q padded with
zeros to n columns).

Every value is NumPy's, bit for bit: eigen- and singular vectors, and Q's columns with R's rows,
keep the signs LAPACK gives them (as JAX and torch do), so `f(x)` and the value adcore traces
agree. Those signs are a choice LAPACK makes, constant in a almost everywhere: the derivatives are
those of NumPy's function, the usual formulas holding wherever the choice is locally constant. A
finite difference must hold it fixed too: each op's `gauge` (OpSpec.gauge) flips a nearby value's
vectors to the signs of a centre's, which the conformance engine and the random programs apply.
Behaviour at degenerate points (repeated or zero eigen/singular values, x = 0 for norm):
docs/conventions.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore.errors import InvalidValueError, LinearAlgebraError, UnsupportedFunctionError
from adcore.ops import complex_parts, elementwise, rearrangements, reductions, shapes
from adcore.spec import Kink, OpSpec, Sample

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


# --- impls -------------------------------------------------------------------------


def _eigh_packed(a: np.ndarray, UPLO: str = "L") -> np.ndarray:
    a = _check_matrix("eigh_packed", a, square=True)
    w, v = _numpy_linalg("eigh_packed", np.linalg.eigh, a, UPLO=_check_uplo("eigh_packed", UPLO))
    return np.concatenate([w[..., None, :], v], axis=-2)


def _eigvalsh(a: np.ndarray, UPLO: str = "L") -> np.ndarray:
    a = _check_matrix("eigvalsh", a, square=True)
    return _numpy_linalg("eigvalsh", np.linalg.eigvalsh, a, UPLO=_check_uplo("eigvalsh", UPLO))


def _svd_packed(a: np.ndarray) -> np.ndarray:
    a = _check_matrix("svd_packed", a)
    u, s, vh = _numpy_linalg("svd_packed", np.linalg.svd, a, full_matrices=False)
    return np.concatenate([u, s[..., None, :], np.swapaxes(vh, -1, -2)], axis=-2)


def _svdvals(a: np.ndarray) -> np.ndarray:
    return _numpy_linalg("svdvals", np.linalg.svd, _check_matrix("svdvals", a), compute_uv=False)


def _qr_packed(a: np.ndarray) -> np.ndarray:
    a = _check_matrix("qr_packed", a)
    q, r = np.linalg.qr(a, mode="reduced")
    m, n = a.shape[-2:]
    if m < n:  # Q is m x m: padded with zeros to R's n columns
        q = np.concatenate([q, np.zeros(q.shape[:-1] + (n - m,), q.dtype)], axis=-1)
    return np.concatenate([q, r], axis=-2)


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


def _lstsq_solution(a: Any, b: Any, rcond: Any = None) -> Any:
    """np.linalg.lstsq(a, b, rcond)'s x, bit for bit: pinv(a, rcond) @ b, the least-squares solution
    of least norm."""
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim != 2 or b.ndim not in (1, 2) or b.shape[0] != a.shape[0]:
        raise LinearAlgebraError(
            f"op 'lstsq_solution': a must be (m, n) and b (m,) or (m, k), got {a.shape} and {b.shape}"
        )
    return _numpy_linalg("lstsq_solution", np.linalg.lstsq, a, b, rcond=rcond)[0]


def _lstsq_residuals(a: Any, b: Any, rcond: Any = None) -> Any:
    """np.linalg.lstsq(a, b, rcond)'s residuals, bit for bit (LAPACK sums the squares of Q^T b past
    row n): |a x - b|^2 of each column of b, (1,) for a b of shape (m,); empty unless a has full
    column rank n < m."""
    _lstsq_shapes("lstsq_residuals", a, b)
    return _numpy_linalg("lstsq_residuals", np.linalg.lstsq, a, b, rcond=rcond)[1]


def _lstsq_singular_values(a: Any) -> Any:
    """np.linalg.lstsq's s, bit for bit: a's singular values as LAPACK's gelsd computes them (they
    differ from np.linalg.svd's in the last bits); its derivative is svdvals'."""
    a = _check_matrix("lstsq_singular_values", a)
    if a.ndim != 2:
        raise LinearAlgebraError(f"op 'lstsq_singular_values': a must be (m, n), got {a.shape}")
    b = np.zeros(a.shape[:1], a.dtype)
    return _numpy_linalg("lstsq_singular_values", np.linalg.lstsq, a, b, rcond=None)[3]


def _lstsq_shapes(op: str, a: Any, b: Any) -> None:
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim != 2 or b.ndim not in (1, 2) or b.shape[0] != a.shape[0]:
        raise LinearAlgebraError(
            f"op {op!r}: a must be (m, n) and b (m,) or (m, k), got {a.shape} and {b.shape}"
        )


def lstsq_rcond(a: Any, rcond: Any) -> Any:
    """The relative cut NumPy's lstsq applies: max(m, n) eps by default; LAPACK's machine precision
    for a negative rcond."""
    eps = np.finfo(np.result_type(a.dtype, np.float32)).eps
    if rcond is None:
        return max(a.shape[-2:]) * eps
    return eps if rcond < 0 else rcond


# --- gauges: LAPACK's signs, aligned to a nearby value's (OpSpec.gauge) --------------------------


def column_signs(dots: Any) -> Any:
    """-1 where a column's product with its counterpart nearby is negative (LAPACK flipped it), else
    1, in dots' dtype: by a comparison and `where`, so a traced value keeps its derivative (the
    signs are constants) and a pattern trace needs no numbers."""
    one = np.ones((), np.dtype(dots.dtype))
    return elementwise.where(dots < 0, -one, one)


def _aligned_columns(vectors: Any, centre: np.ndarray) -> Any:
    """The signs (..., 1, k) that align each column of vectors (..., n, k) with centre's."""
    return column_signs(reductions.sum(vectors * centre, axis=-2, keepdims=True))


def column_phases(dots: Any) -> Any:
    """conj(dots) / |dots|: the unit factors that turn each column's product with its counterpart
    nearby real and positive (a complex vector is LAPACK's up to a phase e^{i phi}, not a sign).
    Aligned so, a finite difference holds the phase fixed as the complex rules do (docs/complex.md)."""
    return complex_parts.conj(dots) / elementwise.abs(dots)


def _eigh_gauge(value: Any, centre: np.ndarray, a: Any = None, UPLO: str = "L") -> Any:
    w, v = value[..., :1, :], value[..., 1:, :]
    if np.iscomplexobj(centre):
        phases = column_phases(reductions.sum(np.conj(centre[..., 1:, :]) * v, axis=-2, keepdims=True))
        return shapes.concatenate([w, v * phases], axis=-2)
    return shapes.concatenate([w, v * _aligned_columns(v, centre[..., 1:, :])], axis=-2)


def _svd_gauge(value: Any, centre: np.ndarray, a: Any) -> Any:
    """u_k and v_k flip together (u_k s_k v_k^T is what a determines)."""
    m = a.shape[-2]
    u, s, v = value[..., :m, :], value[..., m : m + 1, :], value[..., m + 1 :, :]
    if np.iscomplexobj(centre):  # the block below s is conj(V) (Vh transposed): its phase is e^{-i phi}
        dots = reductions.sum(np.conj(centre[..., :m, :]) * u, axis=-2, keepdims=True)
        dots = dots + reductions.sum(centre[..., m + 1 :, :] * complex_parts.conj(v), axis=-2, keepdims=True)
        phases = column_phases(dots)
        return shapes.concatenate([u * phases, s, v * complex_parts.conj(phases)], axis=-2)
    dots = reductions.sum(u * centre[..., :m, :], axis=-2, keepdims=True)
    dots = dots + reductions.sum(v * centre[..., m + 1 :, :], axis=-2, keepdims=True)
    signs = column_signs(dots)
    return shapes.concatenate([u * signs, s, v * signs], axis=-2)


def _qr_gauge(value: Any, centre: np.ndarray, a: Any) -> Any:
    """Q's column k and R's row k flip together (Q R is a); a wide a's padding stays 0."""
    m, n = a.shape[-2:]
    k = min(m, n)
    q, r = value[..., :m, :], value[..., m:, :]
    signs = _aligned_columns(q, centre[..., :m, :])  # the padding's columns: 0 . 0, sign 1
    return shapes.concatenate([q * signs, r * rearrangements.swapaxes(signs[..., :k], -1, -2)], axis=-2)


# --- distances from kinks (for random programs: OpSpec.kink_distance) ----------------------------


def _gaps(values: np.ndarray) -> np.ndarray:
    """The least distance between two of the values along the last axis (inf for one value)."""
    values = np.sort(values, axis=-1)
    return np.min(np.diff(values, axis=-1), axis=-1, initial=np.inf)


def _symmetric_distance(a: Any, UPLO: str = "L") -> np.ndarray:
    return _gaps(np.linalg.eigvalsh(np.asarray(a), UPLO=UPLO))


def singular_distance(a: Any, *rest: Any, **params: Any) -> np.ndarray:
    s = np.linalg.svd(np.asarray(a), compute_uv=False)
    return np.minimum(_gaps(s), np.min(s, axis=-1))


def _qr_distance(a: Any) -> np.ndarray:
    """|R's diagonal|: 0 at a rank-deficient a (of its first min(m, n) columns)."""
    return np.abs(np.diagonal(np.linalg.qr(np.asarray(a))[1], axis1=-2, axis2=-1))


# --- samples -----------------------------------------------------------------------


def _orthogonal(
    rng: np.random.Generator, n: int, batch: tuple[int, ...], unitary: bool = False
) -> np.ndarray:
    """A random orthogonal matrix (Haar: Q of a Gaussian matrix, R's diagonal made positive), or
    with `unitary` a random unitary one (of a complex Gaussian matrix)."""
    g = rng.standard_normal(batch + (n, n))
    if unitary:
        g = g + 1j * rng.standard_normal(batch + (n, n))
    q, r = np.linalg.qr(g)
    return q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


def is_complex(dtype: Any) -> bool:
    return np.dtype(dtype).kind == "c"


def _separated(rng: np.random.Generator, k: int, batch: tuple[int, ...], low: float) -> np.ndarray:
    """k values per batch entry, at least 0.5 apart, from `low` up, in random order."""
    steps = rng.uniform(0.5, 1.0, batch + (k,))
    return rng.permuted(low + np.cumsum(steps, axis=-1), axis=-1)


def _symmetric_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    out = []
    unitary = is_complex(dtype)  # Hermitian: a unitary Q, Q w Q^H
    for batch, n, uplo in (((), 1, "L"), ((), 2, "L"), ((), 3, "L"), ((), 3, "U"), ((2,), 3, "L")):
        q = _orthogonal(rng, n, batch, unitary)
        a = (q * _separated(rng, n, batch, -2.0)[..., None, :]) @ np.conj(np.swapaxes(q, -1, -2))
        out.append(Sample((a.astype(dtype),), {"UPLO": uplo}))
    # the triangle eigh does not read holds anything: its derivative there is 0
    a = out[2].args[0].copy()
    a[np.triu_indices(3, 1)] = rng.uniform(-2, 2, 3) + (1j * rng.uniform(-2, 2, 3) if unitary else 0)
    out.append(Sample((a,), {"UPLO": "L"}))
    return out


def with_singular_values(
    rng: np.random.Generator, batch: tuple[int, ...], m: int, n: int, unitary: bool = False
) -> np.ndarray:
    k = min(m, n)
    u = _orthogonal(rng, m, batch, unitary)[..., :k]
    v = _orthogonal(rng, n, batch, unitary)[..., :k]
    return (u * _separated(rng, k, batch, 0.5)[..., None, :]) @ np.conj(np.swapaxes(v, -1, -2))


_MATRIX_SHAPES = (((), 1, 1), ((), 2, 2), ((), 3, 3), ((), 4, 2), ((), 2, 4), ((2,), 3, 2))


def _matrix_samples(shapes=_MATRIX_SHAPES, params=({},)):
    def draw(rng: np.random.Generator, dtype: Any) -> list[Sample]:
        return [
            Sample((with_singular_values(rng, batch, m, n, is_complex(dtype)).astype(dtype),), dict(p))
            for batch, m, n in shapes
            for p in params
        ]

    return draw


def _truncating_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    """Matrices with singular values 2, 1, 0.3 (2, 0.3 for two) and a cut at 0.6 that drops the
    nonzero 0.3: the derivative of the truncated pseudo-inverse, not of a fixed rank."""
    out = []
    for batch, m, n in (((), 3, 3), ((), 4, 2), ((), 2, 4), ((2,), 3, 2)):
        k = min(m, n)
        u, v = _orthogonal(rng, m, batch)[..., :k], _orthogonal(rng, n, batch)[..., :k]
        a = (u * np.array({1: [2.0], 2: [2.0, 0.3], 3: [2.0, 1.0, 0.3]}[k])) @ np.swapaxes(v, -1, -2)
        out.append(Sample((a.astype(dtype),), {"rcond": 0.3} if m >= n else {"rtol": 0.3}))
    return out


def _pinv_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    return _matrix_samples()(rng, dtype) + _truncating_samples(rng, dtype)


def _lstsq_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    out = []
    for (m, n), bshape in ((((4, 2)), (4,)), (((4, 2)), (4, 3)), (((3, 3)), (3,)), (((2, 3)), (2,))):
        a = with_singular_values(rng, (), m, n).astype(dtype)
        out.append(Sample((a, rng.uniform(-2, 2, bshape).astype(dtype))))
    for sample in _truncating_samples(rng, dtype)[:3]:
        a = sample.args[0]
        out.append(Sample((a, rng.uniform(-2, 2, a.shape[:1]).astype(dtype)), {"rcond": 0.3}))
    return out


def _pinv_distance(a: Any, rcond: Any = None, hermitian: bool = False, rtol: Any = None) -> np.ndarray:
    """Zero singular values at NumPy's default cut (the rank jumps), else how far one is from the cut."""
    cut = rcond if rcond is not None else rtol
    if cut is None:
        return singular_distance(a)
    s = np.linalg.svd(np.asarray(a), compute_uv=False)
    return np.min(np.abs(s - np.asarray(cut)[..., None] * np.max(s, axis=-1, keepdims=True)), axis=-1)


def _lstsq_distance(a: Any, b: Any, rcond: Any = None) -> np.ndarray:
    return _pinv_distance(a, rcond)


# --- the ops ------------------------------------------------------------------------

eigh_packed = OpSpec(
    "eigh_packed",
    _eigh_packed,
    params=("UPLO",),
    samples=_symmetric_samples,
    kink_distance=_symmetric_distance,
    gauge=_eigh_gauge,
    accepts_complex=True,
    doc="eigenvalues over eigenvectors, (..., n+1, n), of the triangle UPLO names (np.linalg.eigh "
    "unpacks it); at repeated eigenvalues an InvalidValueError where the cotangent (tangent, on "
    "forward) reaches inside the repeated eigenspace: docs/conventions.md",
)
eigvalsh = OpSpec(
    "eigvalsh",
    _eigvalsh,
    params=("UPLO",),
    numpy=(np.linalg.eigvalsh,),
    samples=_symmetric_samples,
    accepts_complex=True,
    kink_distance=_symmetric_distance,
    kinks=(
        Kink(
            (np.eye(2),),
            (np.array([np.diag([0.5, 0.5]), np.diag([0.5, 0.5])]),),
            why="a repeated eigenvalue: ties split equally (the eigenspace's projector over its size)",
        ),
        Kink(
            (np.diag([3.0, 1.0, 1.0]),),
            (np.array([np.diag([0.0, 0.5, 0.5]), np.diag([0.0, 0.5, 0.5]), np.diag([1.0, 0.0, 0.0])]),),
            why="ties split within the repeated eigenvalue 1, v v^T for the simple 3",
        ),
    ),
    doc="of the triangle UPLO names; symmetric functions of them are exact at repeated eigenvalues "
    "(sum(eigvalsh(A)) has gradient I at A = I), a single one of a repeated eigenvalue gets the tie "
    "split equally (as max); no second derivative there",
)
svd_packed = OpSpec(
    "svd_packed",
    _svd_packed,
    samples=_matrix_samples(),
    kink_distance=singular_distance,
    gauge=_svd_gauge,
    accepts_complex=True,
    doc="U over s over V, (..., m+1+n, min(m, n)) (np.linalg.svd unpacks it, full_matrices=False); "
    "at repeated or zero singular values an InvalidValueError where the cotangent (tangent, on "
    "forward) reaches inside them: docs/conventions.md",
)
svdvals = OpSpec(
    "svdvals",
    _svdvals,
    numpy=(np.linalg.svdvals,),
    samples=_matrix_samples(),
    accepts_complex=True,
    kink_distance=singular_distance,
    kinks=(
        Kink(
            ([[1.0, 2.0], [2.0, 4.0]],),
            (np.array([[[0.2, 0.4], [0.4, 0.8]], [[0.0, 0.0], [0.0, 0.0]]]),),
            why="a zero singular value has derivative 0 (abs'(0) = 0); the other u v^T",
        ),
        Kink(
            (2 * np.eye(2),),
            (np.array([np.eye(2) / 2, np.eye(2) / 2]),),
            why="a repeated singular value: ties split equally (U V^T of the block over its size)",
        ),
    ),
    doc="singular values (np.linalg.svd(x, compute_uv=False)); symmetric functions of them are exact at "
    "repeated ones, a single one of a repeated value gets the tie split equally; a zero one has "
    "derivative 0; no second derivative at either",
)
qr_packed = OpSpec(
    "qr_packed",
    _qr_packed,
    samples=_matrix_samples((((), 1, 1), ((), 3, 3), ((), 4, 2), ((2,), 3, 2), ((), 2, 4), ((), 1, 3))),
    kink_distance=_qr_distance,
    gauge=_qr_gauge,
    doc="Q over R, (..., m+min(m, n), n), as np.linalg.qr returns them (LAPACK's signs; a wide a's Q "
    "padded with zeros to n columns; np.linalg.qr unpacks it)",
)
pinv = OpSpec(
    "pinv",
    _pinv,
    params=("rcond", "hermitian", "rtol"),
    numpy=(np.linalg.pinv,),
    samples=_pinv_samples,
    kink_distance=_pinv_distance,
    doc="singular values at most rcond (rtol) times the largest are cut: the derivative is the truncated "
    "pseudo-inverse's (it divides by the gaps between kept and cut ones), an InvalidValueError where "
    "one is at the cut within rounding; NumPy's default cut drops rounding only, and at a "
    "rank-deficient a the derivative holds the rank fixed (Golub & Pereyra)",
)
lstsq_solution = OpSpec(
    "lstsq_solution",
    _lstsq_solution,
    nin=2,
    params=("rcond",),
    samples=_lstsq_samples,
    kink_distance=_lstsq_distance,
    doc="np.linalg.lstsq's x, pinv(a, rcond) @ b (the least-norm solution); its derivative is pinv's "
    "(the truncated pseudo-inverse's where rcond cuts a nonzero singular value)",
)

lstsq_residuals = OpSpec(
    "lstsq_residuals",
    _lstsq_residuals,
    nin=2,
    params=("rcond",),
    samples=_lstsq_samples,
    kink_distance=_lstsq_distance,
    doc="np.linalg.lstsq's residuals, bit for bit: |a x - b|^2 per column of b where a has full column "
    "rank n < m, else empty; its derivative 2 r^T (da x - db), r = a x - b (a^T r = 0 there)",
)
lstsq_singular_values = OpSpec(
    "lstsq_singular_values",
    _lstsq_singular_values,
    samples=_matrix_samples(tuple(shape for shape in _MATRIX_SHAPES if shape[0] == ())),  # lstsq: no stacks
    kink_distance=singular_distance,
    doc="np.linalg.lstsq's s, bit for bit (LAPACK's gelsd); the derivative is svdvals'",
)
