"""Linear algebra: matmul (NumPy's batch broadcasting and 1-d promotion) and the solve family
(inv, solve, cholesky, det, logabsdet, slogdet_packed for np.linalg.slogdet, solve_triangular, cho_solve)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from adcore.core import bind, concrete, plain_numbers
from adcore.errors import (
    InvalidValueError,
    LinearAlgebraError,
    UnsupportedByBackendError,
    ValueDependentError,
)
from adcore.ops import shapes
from adcore.spec import REAL, OpSpec, Sample, SampleFn, fixed_samples

# including the seeds' matrix broadcasting case: a 2x1 matmul b 4x1x3
_MATMUL_SHAPES = (
    ((3,), (3,)),
    ((2, 3), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3, 4)),
    ((2, 1), (4, 1, 3)),
    ((5, 2, 3), (3, 4)),
    ((2, 1, 2, 3), (3, 3, 2)),
)

matmul = OpSpec(
    "matmul",
    np.matmul,
    nin=2,
    numpy=(np.matmul,),
    samples=fixed_samples(*((shapes, {}) for shapes in _MATMUL_SHAPES)),
    accepts_complex=True,
)


# --- the solve family: inv, solve, cholesky, det, slogdet, triangular solves ------------------
# Conventions at degenerate points: docs/conventions.md, "Linear algebra at degenerate points:
# solve family". A matrix argument is (..., n, n); a right-hand side b is a vector (n,) when it is
# 1-d and a stack of matrices (..., n, k) otherwise, NumPy 2's rule for np.linalg.solve.


def check_square(op: str, name: str, a: Any) -> None:
    """A typed error naming op and argument unless a is (..., n, n)."""
    shape = np.shape(a)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise LinearAlgebraError(
            f"op {op!r}: argument {name!r} must be a square matrix or a stack of them, shape (..., n, n); "
            f"got shape {shape}"
        )


def check_right_hand_side(op: str, a: Any, b: Any) -> None:
    """A typed error naming op unless b is (n,) or (..., n, k), its batch axes broadcasting with a's."""
    a_shape, b_shape = np.shape(a), np.shape(b)
    n = a_shape[-1]
    fits = len(b_shape) == 1 and b_shape[0] == n
    if len(b_shape) >= 2 and b_shape[-2] == n:
        try:
            np.broadcast_shapes(a_shape[:-2], b_shape[:-2])
            fits = True
        except ValueError:
            fits = False
    if not fits:
        raise LinearAlgebraError(
            f"op {op!r}: argument 'b' of shape {b_shape} does not fit 'a' of shape {a_shape}: b must be "
            f"a vector ({n},) or a stack of matrices (..., {n}, k) whose batch axes broadcast with a's"
        )


def _numpy_linalg(op: str, function: Any, *args: Any, advice: str = "", **kwargs: Any) -> Any:
    """function(*args, **kwargs), NumPy's LinAlgError (a singular matrix, ...) named for op."""
    try:
        return function(*args, **kwargs)
    except np.linalg.LinAlgError as e:
        raise LinearAlgebraError(f"op {op!r}: {e}. {advice}".rstrip()) from e


_SINGULAR = "The matrix has no inverse; check it is well conditioned (np.linalg.cond)."


def _inv(a):
    a = np.asarray(a)
    check_square("inv", "a", a)
    return _numpy_linalg("inv", np.linalg.inv, a, advice=_SINGULAR)


def _solve(a, b):
    a, b = np.asarray(a), np.asarray(b)
    check_square("solve", "a", a)
    check_right_hand_side("solve", a, b)
    return _numpy_linalg("solve", np.linalg.solve, a, b, advice=_SINGULAR)


def _cholesky(a, upper=False):
    a = np.asarray(a)
    check_square("cholesky", "a", a)
    advice = (
        "np.linalg.cholesky reads only the lower triangle (the upper one with upper=True) of a "
        "symmetric positive definite matrix; add a small multiple of the identity (jitter) if a "
        "is only positive semidefinite."
    )
    if upper and np.lib.NumpyVersion(np.__version__) >= "2.0.0":  # NumPy's upper factor, its bits
        return _numpy_linalg("cholesky", np.linalg.cholesky, a, upper=True, advice=advice)
    lower = _numpy_linalg("cholesky", np.linalg.cholesky, swap_last(a) if upper else a, advice=advice)
    return swap_last(lower) if upper else lower


def _det(a):
    a = np.asarray(a)
    check_square("det", "a", a)
    return np.linalg.det(a)


def _logabsdet(a):
    a = np.asarray(a)
    check_square("logabsdet", "a", a)
    return np.linalg.slogdet(a).logabsdet


def _slogdet_packed(a):
    a = np.asarray(a)
    check_square("slogdet_packed", "a", a)
    sign, log = np.linalg.slogdet(a)
    return np.stack((sign, log), axis=-1)


def is_transposed(trans: Any) -> bool:
    """Whether scipy's `trans` (0, 1, 2, 'N', 'T', 'C') asks to solve with the triangle's transpose."""
    if isinstance(trans, str) or isinstance(trans, (int, np.integer)):
        if trans in (0, "N"):
            return False
        if trans in (1, 2, "T", "C"):  # 'C', conjugate transpose, is the transpose of a real matrix
            return True
    raise InvalidValueError(f"op 'solve_triangular': trans must be 0, 1, 2, 'N', 'T' or 'C'; got {trans!r}")


def triangle_mask(n: int, lower: bool, unit_diagonal: bool = False, dtype: Any = np.float64) -> np.ndarray:
    """1 on the entries of an n x n matrix a triangular solve reads, 0 elsewhere (in `dtype`, so that a
    float32 value stays float32 when masked)."""
    mask = np.tri(n, k=-1 if unit_diagonal else 0, dtype=dtype)
    return mask if lower else mask.T


def swap_last(x: Any) -> Any:
    """x with its last two axes swapped (the transpose of each matrix of a stack): NumPy arrays only."""
    return np.swapaxes(x, -1, -2)


def _triangle(a: np.ndarray, lower: bool, unit_diagonal: bool) -> np.ndarray:
    t = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        eye = np.eye(a.shape[-1], dtype=a.dtype)
        t = t * (1 - eye) + eye
    return t


def _solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False):
    a, b = np.asarray(a), np.asarray(b)
    check_square("solve_triangular", "a", a)
    check_right_hand_side("solve_triangular", a, b)
    if trans in (2, "C") and a.dtype.kind == "c":
        raise InvalidValueError(
            "op 'solve_triangular': trans='C' (the conjugate transpose) of a complex a is not supported: its "
            "derivative is not holomorphic in a; pass np.conj(a) (anp.conj) with trans='T'"
        )
    t = _triangle(a, lower, unit_diagonal)
    if is_transposed(trans):
        t, lower = swap_last(t), not lower
    if not lower:  # reversing rows and columns makes an upper triangle lower
        t, b = t[..., ::-1, ::-1], b[::-1] if b.ndim == 1 else b[..., ::-1, :]
    rhs = b[:, None] if b.ndim == 1 else b
    advice = "A zero on the triangle's diagonal makes it singular."
    x = _numpy_linalg("solve_triangular", _solve_lower, t, rhs, advice=advice)
    x = x[..., 0] if b.ndim == 1 else x
    if not lower:
        x = x[..., ::-1] if b.ndim == 1 else x[..., ::-1, :]
    return np.ascontiguousarray(x)


_BLOCK = 64


def _solve_lower(t: np.ndarray, b: np.ndarray) -> np.ndarray:
    """t^-1 b for lower triangular t (..., n, n), b (..., n, k), by blocks: the two diagonal blocks
    recursively, the block below by one matrix product (NumPy has no triangular solve and scipy is
    not a dependency of the core; LU of the whole triangle would cost 2n^3/3 even for one column)."""
    n = t.shape[-1]
    if n <= _BLOCK:
        return np.linalg.solve(t, b)
    h = n // 2
    top = _solve_lower(t[..., :h, :h], b[..., :h, :])
    bottom = _solve_lower(t[..., h:, h:], b[..., h:, :] - t[..., h:, :h] @ top)
    return np.concatenate((top, bottom), axis=-2)  # both batched as t and b broadcast


def _cho_solve(c, b, lower=True):
    c, b = np.asarray(c), np.asarray(b)
    check_square("cho_solve", "c", c)
    check_right_hand_side("cho_solve", c, b)
    # a = L L^T (lower) or U^T U (upper): solve with the factor, then with its transpose; a vector b
    # as a column, so that the first solution, batched like c, is still read as a right-hand side
    rhs = b[..., None] if b.ndim == 1 else b
    first = _solve_triangular(c, rhs, trans=0 if lower else 1, lower=lower)
    x = _solve_triangular(c, first, trans=1 if lower else 0, lower=lower)
    return x[..., 0] if b.ndim == 1 else x


# --- samples: well-conditioned matrices ------------------------------------------------------

_SQUARE_SHAPES = ((1, 1), (2, 2), (3, 3), (2, 3, 3))


def _general(rng: np.random.Generator, shape: tuple, dtype: Any) -> np.ndarray:
    """Uniform in [-1, 1] (real and imaginary parts, for a complex dtype) over 2, plus n + 1 times the
    identity: strictly diagonally dominant, well conditioned."""
    n = shape[-1]
    wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
    return np.asarray(REAL.draw(rng, shape, wide) / 2 + (n + 1) * np.eye(n), dtype=dtype)


def _positive_definite(rng: np.random.Generator, shape: tuple, dtype: Any) -> np.ndarray:
    """B B^T + n I, B uniform in [-2, 2]."""
    n = shape[-1]
    b = REAL.draw(rng, shape, np.float64)
    return np.asarray(b @ np.swapaxes(b, -1, -2) + n * np.eye(n), dtype=dtype)


def _square_samples(matrix: Any, params: tuple[dict, ...] = ({},)) -> SampleFn:
    def draw(rng: np.random.Generator, dtype: Any) -> list[Sample]:
        return [Sample((matrix(rng, s, dtype),), dict(p)) for s in _SQUARE_SHAPES for p in params]

    return draw


_SOLVE_SHAPES = (
    ((1, 1), (1,)),
    ((2, 2), (2,)),
    ((3, 3), (3,)),
    ((3, 3), (3, 2)),
    ((2, 3, 3), (3,)),  # a vector b against a stack of matrices: x is (2, 3)
    ((2, 3, 3), (2, 3, 1)),
    ((2, 3, 3), (3, 2)),  # b broadcast over a's batch
    ((3, 3), (2, 3, 2)),  # a broadcast over b's batch
)


def _solve_samples(matrix: Any, params: tuple[dict, ...] = ({},), per_shape: int = 1) -> SampleFn:
    """Each pair of shapes with `per_shape` of the params, taken in turn, so that every param set
    meets vector and matrix right-hand sides without the whole product (conformance's time)."""
    step = max(len(params) // per_shape, 1)

    def draw(rng: np.random.Generator, dtype: Any) -> list[Sample]:
        return [
            Sample(
                (matrix(rng, a, dtype), REAL.draw(rng, b, dtype)), dict(params[(k + j * step) % len(params)])
            )
            for k, (a, b) in enumerate(_SOLVE_SHAPES)
            for j in range(min(per_shape, len(params)))
        ]

    return draw


def _det_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    out = _square_samples(_general)(rng, dtype)
    u = REAL.draw(rng, (3, 2), np.float64)
    rank_two = u @ REAL.draw(rng, (2, 3), np.float64)  # singular: the gradient is the adjugate, rank 1
    # adjugate 0: powers of two, so that its minors and LU are exact (a random one's exact cofactors are
    # rounding-sized, and no two ways of computing them agree to the numeric backend's estimate)
    rank_one = np.outer([1.0, -2.0, 4.0], [0.5, 1.0, -2.0])
    mixed = np.stack([rank_two, _general(rng, (3, 3), np.float64)])  # one singular, one not
    singular = (rank_two, rank_one, np.zeros((2, 2)), mixed)
    return out + [Sample((np.asarray(a, dtype=dtype),)) for a in singular]


def _logabsdet_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    out = _square_samples(_general)(rng, dtype)
    flipped = np.diag([-1.0, 1.0, 1.0]) @ _general(rng, (3, 3), np.float64)  # a negative determinant
    return out + [Sample((np.asarray(flipped, dtype=dtype),))]


def _cho_factor(rng: np.random.Generator, shape: tuple, dtype: Any) -> np.ndarray:
    """A Cholesky factor's worth of values: only c's triangle is read."""
    return np.asarray(np.linalg.cholesky(_positive_definite(rng, shape, np.float64)), dtype=dtype)


_TRIANGULAR_PARAMS = (
    {},
    {"lower": True},
    {"lower": True, "trans": 1},
    {"lower": False, "trans": "T"},
    {"lower": True, "unit_diagonal": True},
    {"lower": False, "trans": "N", "unit_diagonal": True},
)


class SlogdetResult(NamedTuple):
    """np.linalg.slogdet's result on a traced value: `sign` a plain array (derivative 0),
    `logabsdet` the differentiable part of op `slogdet_packed`'s output."""

    sign: Any
    logabsdet: Any


def slogdet(a: Any) -> SlogdetResult:
    """np.linalg.slogdet for traced values: (sign, logabsdet), so `sign, logdet = slogdet(a)`
    and `slogdet(a).logabsdet` both work. One LU: both come from one slogdet_packed."""
    packed = bind(slogdet_packed, a)
    log = bind(shapes.getitem, packed, index=(Ellipsis, 1))
    try:
        sign = concrete(packed)[..., 0]
    except (UnsupportedByBackendError, ValueDependentError):
        # symbolic traces no numbers, a global sparsity pattern reads none: sign(det), derivative 0
        sign = bind(shapes.getitem, packed, index=(Ellipsis, 0))
    return SlogdetResult(sign, log)


def cofactor(a: Any, det_a: Any) -> Any:
    """The cofactor matrix of a (..., n, n), d det(a) / d a, given det_a = det(a): det(a) inv(a)^T
    where every matrix of a is well conditioned, else each entry's signed minor, which is finite
    and exact at a singular a (n^2 determinants of size n - 1, one batched det). Written with ops: it nests."""
    n = a.shape[-1]
    if n == 1:
        return np.ones(a.shape, dtype=a.dtype)
    well_conditioned = True
    try:
        inverse = inv(a)
    except LinearAlgebraError:  # exactly singular
        well_conditioned = False
    if well_conditioned:
        values, inverse_values = concrete(a), concrete(inverse)
        size = np.linalg.norm(values, 1, axis=(-2, -1)) * np.linalg.norm(inverse_values, 1, axis=(-2, -1))
        # det(a) inv(a) loses cond(a) eps of its relative accuracy: keep it to sqrt(eps)
        well_conditioned = bool(plain_numbers(size < 1 / np.sqrt(np.finfo(values.dtype).eps)).all())
    if well_conditioned:
        return shapes.reshape(det_a, shape=det_a.shape + (1, 1)) * shapes.transpose(
            inverse, axes=tuple(range(a.ndim - 2)) + (a.ndim - 1, a.ndim - 2)
        )
    # every minor at once, (..., n, n, n - 1, n - 1): minor (i, j) drops row i and column j
    keep = np.array([[k for k in range(n) if k != i] for i in range(n)])
    minors = shapes.getitem(a, index=(Ellipsis, keep[:, None, :, None], keep[None, :, None, :]))
    signs = (-1.0) ** np.add.outer(np.arange(n), np.arange(n))
    return det(minors) * signs.astype(a.dtype)


# --- the ops ---------------------------------------------------------------------------------

inv = OpSpec(
    "inv",
    _inv,
    numpy=(np.linalg.inv,),
    samples=_square_samples(_general),
    doc="a singular a: LinearAlgebraError (also numpy.linalg.LinAlgError), as NumPy raises",
    accepts_complex=True,
)
solve = OpSpec(
    "solve",
    _solve,
    nin=2,
    numpy=(np.linalg.solve,),
    samples=_solve_samples(_general),
    doc="NumPy 2's b: a vector when 1-d, else a stack of matrices; a singular a: LinearAlgebraError",
    accepts_complex=True,
)
cholesky = OpSpec(
    "cholesky",
    _cholesky,
    params=("upper",),
    numpy=(np.linalg.cholesky,),
    samples=_square_samples(_positive_definite, ({}, {"upper": True})),
    doc="reads a's lower triangle (upper with upper=True), as NumPy: the gradient lives on that "
    "triangle; not positive definite: LinearAlgebraError",
)
det = OpSpec(
    "det",
    _det,
    numpy=(np.linalg.det,),
    samples=_det_samples,
    doc="the gradient is the cofactor matrix, finite and exact at a singular a too",
    accepts_complex=True,
)
logabsdet = OpSpec(
    "logabsdet",
    _logabsdet,
    samples=_logabsdet_samples,
    doc="log|det a| (np.linalg.slogdet(x) on a traced x reads sign and log|det x| off one slogdet_packed); "
    "at a singular a (-inf) the derivative does not exist: LinearAlgebraError",
)
slogdet_packed = OpSpec(
    "slogdet_packed",
    _slogdet_packed,
    samples=_logabsdet_samples,
    doc="sign and log|det a| stacked on a last axis of 2, one LU (np.linalg.slogdet unpacks it); the "
    "sign's derivative is 0; at a singular a (-inf) the derivative does not exist: LinearAlgebraError",
)
solve_triangular = OpSpec(
    "solve_triangular",
    _solve_triangular,
    nin=2,
    params=("trans", "lower", "unit_diagonal"),
    samples=_solve_samples(_general, _TRIANGULAR_PARAMS, per_shape=2),
    doc="scipy.linalg.solve_triangular's signature, NumPy only; reads a's triangle (without its "
    "diagonal if unit_diagonal): the gradient lives there",
    accepts_complex=True,
)
cho_solve = OpSpec(
    "cho_solve",
    _cho_solve,
    nin=2,
    params=("lower",),
    samples=_solve_samples(_cho_factor, ({"lower": True}, {"lower": False})),
    doc="scipy's cho_solve((c, lower), b) as cho_solve(c, b, lower=True): a = L L^T from c's lower "
    "triangle (U^T U from its upper one), two triangular solves; the gradient lives on that triangle",
)

NUMPY_FUNCTIONS = {np.linalg.slogdet: slogdet}
