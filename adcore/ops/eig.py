"""The general eigendecomposition: eig_packed (np.linalg.eig) and eigvals (np.linalg.eigvals).

The ops are complex, whatever a's dtype (complex64 for float32, complex128 for float64), as JAX's,
so an op's dtype does not jump with a's values; `np.linalg.eig(x)` and `np.linalg.eigvals(x)` on
a traced x return NumPy's values bit for bit, real (their real parts) where NumPy's are: a real x
whose eigenvalues are all real. eig_packed is (..., n+1, n): the eigenvalues over the
eigenvectors, which `np.linalg.eig(x)` on a traced x unpacks into NumPy's namedtuple.

The eigenvectors' gauge is LAPACK's, NumPy's values unchanged: each of unit 2-norm with its entry
of largest modulus real, of the sign LAPACK gives it (positive for a complex a). The rules hold
that entry real (its sign fixed, as LAPACK's is almost everywhere); a finite difference aligns the
signs first (eig_packed's `gauge`), and the gauge jumps where two entries tie for the largest.

At repeated eigenvalues (or an eigenvector matrix singular to working precision, a defective
a) the derivative does not exist: the rules raise a LinearAlgebraError (`refuse_degenerate`).
The rules' shared parts (the gap matrix, the gauge) are here; the rules themselves are in
adcore_reverse.vjps.eig and adcore_forward.jvps.eig (docs/conventions.md, JAX's convention).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from adcore.core import Tracer, concrete, plain_numbers
from adcore.errors import LinearAlgebraError, ValueDependentError
from adcore.ops import complex_parts, elementwise, rearrangements, reductions, shapes
from adcore.spec import OpSpec, Sample

# --- impls -----------------------------------------------------------------------------------


def _check_square(op: str, a: Any) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise LinearAlgebraError(
            f"op {op!r}: argument 'a' must be a square matrix or a stack of them, shape (..., n, n); "
            f"got shape {a.shape}"
        )
    return a


def complex_dtype(dtype: Any) -> np.dtype:
    """The complex dtype of a's results: complex64 for float32 and complex64, else complex128."""
    return np.dtype(np.complex64 if np.dtype(dtype) in (np.float32, np.complex64) else np.complex128)


def _eig(op: str, a: Any) -> tuple[np.ndarray, np.ndarray]:
    a = _check_square(op, a)
    try:
        w, v = np.linalg.eig(a)
    except np.linalg.LinAlgError as e:
        raise LinearAlgebraError(f"op {op!r}: {e}") from e
    dtype = complex_dtype(a.dtype)
    return w.astype(dtype), v.astype(dtype)


def largest_entry(v: Any) -> np.ndarray:
    """Per column (..., n, k) of the concrete v, the row of LAPACK's pivot: its real entry of largest
    modulus (LAPACK makes the largest real, so a tie in modulus within rounding cannot pick another)."""
    v = concrete(v)
    return np.argmax(np.where(np.imag(v) == 0, np.abs(v), -1.0), axis=-2)


def _eig_packed(a: Any) -> np.ndarray:
    w, v = _eig("eig_packed", a)
    return np.concatenate([w[..., None, :], v], axis=-2)


def _eigvals(a: Any) -> np.ndarray:
    # the eigenvalues of the same geev call eig_packed makes, so eigvals' rules pair them with its
    # eigenvectors column by column (np.linalg.eigvals' own order may differ where LAPACK's does)
    return _eig("eigvals", a)[0]


# --- what the rules share ----------------------------------------------------------------------


def refuse_degenerate(op: str, w: Any, v: Any) -> None:
    """A LinearAlgebraError naming op unless the eigenvalues are distinct and the eigenvectors
    independent: at a repeated eigenvalue (a defective a, or a multiple one) the eigenvalues and
    eigenvectors are not differentiable functions of a."""
    w, v = concrete(w), concrete(v)
    n = w.shape[-1]
    if n < 2:
        return
    eps = np.finfo(w.dtype).eps
    scale = np.max(np.abs(w), axis=-1, initial=0.0)[..., None, None]
    gaps = np.where(np.eye(n, dtype=bool), np.inf, np.abs(w[..., :, None] - w[..., None, :]))
    repeated = gaps <= 32 * n * eps * np.maximum(scale, np.finfo(w.dtype).tiny)
    s = np.linalg.svd(v, compute_uv=False)  # np.linalg.cond(v), which has no op (so no batched form)
    with np.errstate(divide="ignore", invalid="ignore"):
        ill = ~(s[..., 0] / s[..., -1] < 1 / np.sqrt(eps))  # (an infinite or nan ratio: singular)
    # (under vmap every example's at once: a refusal where any example's would refuse, as the loop's)
    if plain_numbers(repeated).any() or plain_numbers(ill).any():
        s = plain_numbers(s)
        with np.errstate(divide="ignore", invalid="ignore"):
            condition = np.max(s[..., 0] / s[..., -1])
        raise LinearAlgebraError(
            f"op {op!r}: no derivative at repeated eigenvalues ({np.array2string(plain_numbers(w), precision=4)}; "
            f"the eigenvector matrix's condition number is {condition:.3g}): where two "
            "eigenvalues meet, they and their eigenvectors are not differentiable functions of a. "
            "Differentiate where the eigenvalues are distinct; for a symmetric a use np.linalg.eigh, "
            "and for a symmetric function of the eigenvalues (their sum, the trace; their product, the "
            "determinant) use that function of a directly"
        )


def gap_inverse(w: Any) -> Any:
    """F[..., i, j] = 1 / (w_j - w_i), 0 on the diagonal (the eigenvalues checked distinct): written
    with ops, so a second derivative sees F change with w."""
    n = w.shape[-1]
    eye = np.eye(n, dtype=concrete(w).real.dtype)
    gap = shapes.expand_dims(w, axis=-2) - shapes.expand_dims(w, axis=-1) + eye
    return (1 - eye) / gap


def gauge_mask(v: Any) -> np.ndarray:
    """E[..., i, k] = 1 where i is column k's entry of largest modulus (LAPACK's real one), else 0."""
    v_ = concrete(v)
    if isinstance(v_, Tracer):  # a vmap's batch: the first largest per column, in every example at once
        modulus = np.where(np.imag(v_) == 0, np.abs(v_), -1.0)  # (largest_entry's argmax has no batched form)
        top = modulus == np.max(modulus, axis=-2, keepdims=True)
        return (top & (np.cumsum(top, axis=-2) == 1)).astype(v_.real.dtype)
    return (np.arange(v_.shape[-2])[:, None] == largest_entry(v_)[..., None, :]).astype(v_.real.dtype)


def diagonal_of(x: Any) -> Any:
    """The diagonal of each square matrix (..., n, n) as (..., n)."""
    return reductions.sum(x * np.eye(x.shape[-1], dtype=concrete(x).real.dtype), axis=-2)


def swap_last(x: Any) -> Any:
    """x with its last two axes swapped (the transpose of each matrix of a stack)."""
    return rearrangements.swapaxes(x, -1, -2)


class EigResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


def linalg_eig(a: Any) -> EigResult:
    """np.linalg.eig on a traced value: one eig_packed, unpacked, real where NumPy's is."""
    packed = eig_packed(a)
    return EigResult(*_as_numpy_returns(a, packed[..., 0, :], packed[..., 1:, :]))


def linalg_eigvals(a: Any) -> Any:
    """np.linalg.eigvals on a traced value: eigvals, real where NumPy's is."""
    return _as_numpy_returns(a, eigvals(a))[0]


def _as_numpy_returns(a: Any, w: Any, *more: Any) -> tuple:
    """(w, *more), each as its real part where NumPy returns real arrays: a real a whose eigenvalues
    are all real. A global sparsity pattern, which reads no numbers, keeps them complex."""
    if np.dtype(a.dtype).kind == "c":
        return (w, *more)
    try:
        real = bool(np.all(np.imag(concrete(w)) == 0))
    except ValueDependentError:
        return (w, *more)
    return tuple(complex_parts.real(x) for x in (w, *more)) if real else (w, *more)


def _eig_gauge(value: Any, centre: np.ndarray, a: Any = None) -> Any:
    """The eigenvectors flipped to the signs of centre's (LAPACK's real pivot is +-1 times a phase
    that is a function of a): by Re(c^H v) of each column."""
    w, v = value[..., :1, :], value[..., 1:, :]
    dots = complex_parts.real(reductions.sum(v * np.conj(centre[..., 1:, :]), axis=-2, keepdims=True))
    one = np.ones((), dots.dtype)
    return shapes.concatenate([w, v * elementwise.where(dots < 0, -one, one)], axis=-2)


# --- samples: non-symmetric matrices with well-separated eigenvalues -----------------------------


def _separated_spectrum(rng: np.random.Generator, n: int, complex_: bool) -> np.ndarray:
    """n eigenvalues at least 0.5 apart: real ones with (n >= 2, real a) a conjugate pair, or complex."""
    if complex_:
        angles = 2 * np.pi * (np.arange(n) + rng.uniform(0.2, 0.4)) / max(n, 1)
        return rng.uniform(1.0, 2.0, n) * np.exp(1j * angles)
    values = rng.permuted(-2.0 + np.cumsum(rng.uniform(0.5, 1.0, n))).astype(complex)
    if n >= 2:
        values[:2] = values[0] + np.array([1j, -1j]) * rng.uniform(0.5, 1.0)
    return values


def _nonsymmetric(rng: np.random.Generator, batch: tuple[int, ...], n: int, dtype: Any) -> np.ndarray:
    """S D S^-1, S = I + a random matrix (well conditioned), D the spectrum (a real block for a
    conjugate pair of a real a), redrawn until each eigenvector's two largest entries are 0.1 apart
    in modulus (the gauge's jump) and its eigenvalues 0.5 apart."""
    complex_ = np.dtype(dtype).kind == "c"
    out = np.empty(batch + (n, n), dtype=complex if complex_ else float)
    for index in np.ndindex(batch):
        for _ in range(200):
            s = np.eye(n) + rng.uniform(-0.4, 0.4, (n, n))
            if complex_:
                s = s + 1j * rng.uniform(-0.4, 0.4, (n, n))
            spectrum = _separated_spectrum(rng, n, complex_)
            d = np.diag(spectrum if complex_ else spectrum.real)
            if not complex_ and n >= 2:
                re, im = spectrum[0].real, spectrum[0].imag
                d = np.diag(spectrum.real)
                d[:2, :2] = [[re, im], [-im, re]]
            a = s @ d @ np.linalg.inv(s)
            if np.min(_eig_distance(a)) >= 0.1:
                break
        out[index] = a
    return out.astype(dtype)


_SHAPES = (((), 1), ((), 2), ((), 3), ((2,), 3), ((), 4))


def _samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    return [Sample((_nonsymmetric(rng, batch, n, dtype),)) for batch, n in _SHAPES]


def _eigenvalue_gaps(a: Any) -> np.ndarray:
    w = np.linalg.eigvals(np.asarray(a))
    n = w.shape[-1]
    gaps = np.where(np.eye(n, dtype=bool), np.inf, np.abs(w[..., :, None] - w[..., None, :]))
    return np.min(gaps, axis=(-2, -1), initial=np.inf)


def _eig_distance(a: Any) -> np.ndarray:
    """How far a is from repeated eigenvalues and from a tie between an eigenvector's two largest
    entries (where the gauge jumps)."""
    a = np.asarray(a)
    _, v = np.linalg.eig(a)
    if v.shape[-2] < 2:
        return _eigenvalue_gaps(a)
    magnitudes = np.sort(np.abs(v), axis=-2)
    margin = np.min(magnitudes[..., -1, :] - magnitudes[..., -2, :], axis=-1)
    return np.minimum(_eigenvalue_gaps(a), margin)


# --- the ops ---------------------------------------------------------------------------------

eig_packed = OpSpec(
    "eig_packed",
    _eig_packed,
    samples=_samples,
    kink_distance=_eig_distance,
    accepts_complex=True,
    gauge=_eig_gauge,
    doc="eigenvalues over eigenvectors, (..., n+1, n), complex (np.linalg.eig unpacks it, real where "
    "NumPy's is); NumPy's eigenvectors: unit 2-norm, the entry of largest modulus real, LAPACK's sign; "
    "at repeated eigenvalues a LinearAlgebraError",
)
eigvals = OpSpec(
    "eigvals",
    _eigvals,
    samples=_samples,
    kink_distance=_eigenvalue_gaps,
    accepts_complex=True,
    doc="the eigenvalues of a general square a, complex (those of np.linalg.eig; np.linalg.eigvals "
    "on a traced value gives them real where NumPy does); at repeated eigenvalues a LinearAlgebraError",
)

NUMPY_FUNCTIONS = {np.linalg.eig: linalg_eig, np.linalg.eigvals: linalg_eigvals}
