"""The scipy.linalg ops: what each computes and where the conformance checks draw its inputs.

solve_triangular, cho_factor and cho_solve are the core's ops (solve_triangular, cholesky,
cho_solve; adcore/ops/linalg.py): adcore_scipy.linalg calls them with SciPy's signatures. The ops
here are SciPy's matrix functions and structured solves, scipy.linalg imported when one first runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore import ops
from adcore.core import Tracer, plain_numbers
from adcore.errors import InvalidValueError, LinearAlgebraError
from adcore.extend import LazyModule
from adcore.spec import REAL, Case, OpSpec, Sample

scipy_linalg = LazyModule("scipy.linalg")


# --- input checks ----------------------------------------------------------------------------


def _square(op: str, name: str, a: Any) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise LinearAlgebraError(
            f"op {op!r}: argument {name!r} must be a square matrix or a stack of them, shape (..., n, n); "
            f"got shape {a.shape}"
        )
    return a


def _result_dtype(*arrays: Any) -> np.dtype:
    """NumPy's promotion, at least float32 (an integer matrix computes in float64)."""
    return np.result_type(*arrays, np.float32)


# --- impls -----------------------------------------------------------------------------------


def _expm(a: Any) -> np.ndarray:
    a = _square("expm", "a", a)
    return np.asarray(scipy_linalg.expm(a.astype(_result_dtype(a))))


def _sqrtm(a: Any) -> np.ndarray:
    a = _square("sqrtm", "a", a)
    return np.asarray(scipy_linalg.sqrtm(a.astype(_result_dtype(a))))


def sylvester_gaps(a: Any, b: Any) -> np.ndarray:
    """min |lambda_i(a) + mu_j(b)| per matrix pair: 0 where AX + XB = Q has no unique solution."""
    la, mb = _eigenvalues(a), _eigenvalues(b)
    return np.min(np.abs(la[..., :, None] + mb[..., None, :]), axis=(-2, -1))


def _eigenvalues(a: Any) -> Any:
    """np.linalg.eigvals(a); of a vmap's batch (a rule's concrete value), the eigvals op's, every
    example's at once (np.linalg.eigvals' real-or-complex result depends on the values)."""
    return ops.eigvals(a) if isinstance(a, Tracer) else np.linalg.eigvals(a)


def refuse_singular_sylvester(op: str, a: Any, b: Any, what: str) -> None:
    """A LinearAlgebraError naming op where some eigenvalue of a plus one of b is 0 (to rounding);
    under vmap (a and b a batch), where it is in any example, as the loop's example refuses."""
    a, b = (x if isinstance(x, Tracer) else np.asarray(x) for x in (a, b))
    # each equation of a stack by its own scale: a matrix is refused as when it comes alone
    # (vmap's batch rule stacks the examples)
    scale = np.maximum(
        np.maximum(
            np.max(np.abs(a), axis=(-2, -1), initial=0.0), np.max(np.abs(b), axis=(-2, -1), initial=0.0)
        ),
        np.finfo(np.float64).tiny,
    )
    eps = np.finfo(_result_dtype(a.dtype, b.dtype)).eps
    gaps = sylvester_gaps(a, b)
    if plain_numbers(gaps <= 64 * max(a.shape[-1], b.shape[-1]) * eps * scale).any():
        raise LinearAlgebraError(
            f"op {op!r}: {what}: an eigenvalue of a plus one of b is 0 (min |lambda_i(a) + mu_j(b)| = "
            f"{np.min(plain_numbers(gaps)):.3g}), so AX + XB = Q has no unique solution"
        )


def _solve_sylvester(a: Any, b: Any, q: Any) -> np.ndarray:
    """AX + XB = Q for each matrix of the broadcast stacks a (..., n, n), b (..., m, m), q (..., n, m)."""
    a, b, q = _square("solve_sylvester", "a", a), _square("solve_sylvester", "b", b), np.asarray(q)
    n, m = a.shape[-1], b.shape[-1]
    if q.ndim < 2 or q.shape[-2:] != (n, m):
        raise LinearAlgebraError(
            f"op 'solve_sylvester': q must be (..., {n}, {m}) for a {a.shape} and b {b.shape}; got {q.shape}"
        )
    refuse_singular_sylvester("solve_sylvester", a, b, "a singular equation")
    dtype = _result_dtype(a, b, q)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2], q.shape[:-2])
    a, b, q = (np.broadcast_to(x, batch + x.shape[-2:]).astype(dtype) for x in (a, b, q))
    out = np.empty(batch + (n, m), dtype=dtype)
    for index in np.ndindex(batch):
        out[index] = scipy_linalg.solve_sylvester(a[index], b[index], q[index])
    return out


def check_bands(l_and_u: Any, ab: Any) -> tuple[int, int]:
    """(l, u) checked against ab (l + u + 1, n): non-negative integers whose bands fit ab's rows."""
    try:
        low, up = (int(k) for k in l_and_u)
    except (TypeError, ValueError):
        raise InvalidValueError(
            f"op 'solve_banded': l_and_u must be a pair of integers, got {l_and_u!r}"
        ) from None
    shape = np.shape(ab)
    if low < 0 or up < 0 or len(shape) != 2 or shape[0] != low + up + 1:
        raise LinearAlgebraError(
            f"op 'solve_banded': ab must be (l + u + 1, n) = ({low + up + 1}, n) for (l, u) = ({low}, {up}); "
            f"got shape {shape}"
        )
    return low, up


def _solve_banded(ab: Any, b: Any, l_and_u: Any = (0, 0)) -> np.ndarray:
    ab, b = np.asarray(ab), np.asarray(b)
    check_bands(l_and_u, ab)
    if b.ndim not in (1, 2) or b.shape[0] != ab.shape[1]:
        raise LinearAlgebraError(
            f"op 'solve_banded': b must be ({ab.shape[1]},) or ({ab.shape[1]}, k) for ab {ab.shape}; got {b.shape}"
        )
    dtype = _result_dtype(ab, b)
    try:
        return np.asarray(scipy_linalg.solve_banded(tuple(l_and_u), ab.astype(dtype), b.astype(dtype)))
    except np.linalg.LinAlgError as e:
        raise LinearAlgebraError(f"op 'solve_banded': {e}: the banded matrix is singular") from e


# --- samples ---------------------------------------------------------------------------------

_SQUARE_SHAPES = ((1, 1), (2, 2), (3, 3), (2, 3, 3))


def _well_conditioned(rng: np.random.Generator, shape: tuple, dtype: Any) -> np.ndarray:
    """Noise of modulus under 0.75 (complex for a complex dtype) over (n + 1) times the identity:
    its eigenvalues have real parts above 1 (Gershgorin)."""
    n = shape[-1]
    return np.asarray(REAL.draw(rng, shape, dtype) / 2 + (n + 1) * np.eye(n), dtype=dtype)


def _expm_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    # entries of size 1: exp's Taylor and Pade steps both run (scaling and squaring past |A| ~ 1)
    return [Sample((REAL.draw(rng, s, dtype),)) for s in _SQUARE_SHAPES] + [
        Sample((2 * REAL.draw(rng, (4, 4), dtype),))
    ]


def _sqrtm_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    """Eigenvalues off the negative real axis and away from 0 (the principal root is analytic there)."""
    return [Sample((_well_conditioned(rng, s, dtype),)) for s in _SQUARE_SHAPES]


def _sylvester_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    out = []
    for a, b, q in (
        ((1, 1), (1, 1), (1, 1)),
        ((2, 2), (3, 3), (2, 3)),
        ((3, 3), (2, 2), (3, 2)),
        ((2, 3, 3), (2, 2), (3, 2)),
        ((3, 3), (3, 3), (2, 3, 3)),
    ):
        # a's and b's spectra to the right of 0: lambda + mu stays clear of 0
        out.append(
            Sample(
                (
                    _well_conditioned(rng, a, dtype),
                    _well_conditioned(rng, b, dtype),
                    REAL.draw(rng, q, dtype),
                )
            )
        )
    return out


def _banded_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    """Diagonally dominant banded matrices: the main diagonal (row u of ab) is l + u + 2 plus noise."""
    out = []
    for (low, up), n, b_shape in (
        ((0, 0), 3, (3,)),
        ((1, 1), 4, (4,)),
        ((1, 2), 5, (5, 2)),
        ((2, 0), 4, (4, 3)),
    ):
        ab = REAL.draw(rng, (low + up + 1, n), dtype)
        ab[up] += low + up + 2
        out.append(Sample((ab, REAL.draw(rng, b_shape, dtype)), {"l_and_u": (low, up)}))
    return out


# --- the ops ---------------------------------------------------------------------------------

expm = OpSpec(
    "expm",
    _expm,
    samples=_expm_samples,
    accepts_complex=True,
    doc="scipy.linalg.expm, batched over leading axes; its derivative is the Frechet derivative, the "
    "top right block of expm([[A, E], [0, A]]) (the VJP: the same at A^T)",
)
sqrtm = OpSpec(
    "sqrtm",
    _sqrtm,
    samples=_sqrtm_samples,
    accepts_complex=True,
    doc="scipy.linalg.sqrtm, the principal square root X (complex for a real a with a negative "
    "eigenvalue, as SciPy's); dX solves X dX + dX X = dA; no derivative where X has eigenvalues "
    "mu_i + mu_j = 0 (a singular a): LinearAlgebraError",
)
solve_sylvester = OpSpec(
    "solve_sylvester",
    _solve_sylvester,
    nin=3,
    samples=_sylvester_samples,
    accepts_complex=True,
    doc="scipy.linalg.solve_sylvester(a, b, q): X with AX + XB = Q, batched over broadcast leading "
    "axes; where an eigenvalue of a plus one of b is 0 a LinearAlgebraError",
)
solve_banded = OpSpec(
    "solve_banded",
    _solve_banded,
    nin=2,
    params=("l_and_u",),
    samples=_banded_samples,
    accepts_complex=True,
    doc="scipy.linalg.solve_banded((l, u), ab, b) as solve_banded(ab, b, l_and_u=(l, u)): A[i, j] = "
    "ab[u + i - j, j]; the gradient lives on the entries of ab that are A's (ab's unused corners get 0)",
)

OPS: tuple[OpSpec, ...] = (expm, sqrtm, solve_sylvester, solve_banded)
CASES: tuple[Case, ...] = ()
