"""What the decompositions' rule packages share (adcore/ops/decompositions.py): the masked
1 / gap matrices, the degenerate tolerance, the second-order refusal at degenerate points, the
triangle eigh reads, norm's (sub)gradient. Written with adcore ops looked up at call time
(the ops modules themselves), so the rules built from them nest.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from adcore import core
from adcore.core import concrete, plain_numbers
from adcore.errors import InvalidValueError, LinearAlgebraError
from adcore.ops import complex_parts, decompositions, elementwise, linalg, reductions, shapes
from adcore.ops.decompositions import svd_packed
from adcore.ops.norms import norm_axes


def degenerate_tolerance(values: Any, n: int) -> np.ndarray:
    """The gap under which two eigen- or singular values count as equal: 32 n eps of the largest
    (per matrix of a batch, kept as a trailing axis), from the concrete values."""
    values = concrete(values)
    eps = np.finfo(values.dtype).eps
    return 32 * max(n, 1) * eps * np.max(np.abs(values), axis=-1, initial=0.0, keepdims=True)


def inverse_singular_values(s: Any, tol: np.ndarray) -> Any:
    """1 / s, 0 where s is at most tol (a pseudo-inverse's)."""
    small = concrete(s) <= tol
    safe = elementwise.where(small, np.ones((), concrete(s).dtype), s)
    return elementwise.where(small, np.zeros((), concrete(s).dtype), 1.0 / safe)


def nonzero_singular_values(s: Any, tol: np.ndarray) -> np.ndarray:
    """1 where a singular value is above tol, 0 where it counts as 0: a zero singular value is
    |.| at 0 of the input (s = |u^T a v|), whose derivative is abs'(0) = 0 (docs/conventions.md)."""
    return (concrete(s) > tol).astype(concrete(s).dtype)


def qr_r_inverse(r: Any) -> Any:
    """R^-1 for qr's rules, or a LinearAlgebraError where R's diagonal has a 0 (a rank-deficient a:
    Q's columns past the rank are not determined by a, so they have no derivative)."""
    diagonal = np.abs(np.diagonal(concrete(r), axis1=-2, axis2=-1))
    if plain_numbers(diagonal <= degenerate_tolerance(diagonal, r.shape[-1])).any():
        raise LinearAlgebraError(
            "op 'qr_packed': no derivative at a rank-deficient a (R has a zero on its diagonal, "
            f"{np.array2string(diagonal, precision=3)}): Q's columns past the rank are not determined "
            "by a. Differentiate at a full-rank a, or use svd/pinv, whose derivatives hold the rank fixed"
        )
    return linalg.inv(r)


def refuse_second_order(op: str, values: Any, tol: np.ndarray, *inputs: Any, zeros: bool = False) -> None:
    """Refuse a rule run under an outer derivative (a traced input: second order) at a point where
    two values coincide (or, with `zeros`, one is 0): the first derivative there is a convention
    (docs/conventions.md), so differentiating it again would give a plausible wrong number."""
    if not any(map(core.differentiated, inputs)):
        return
    v = concrete(values)
    n = v.shape[-1]
    pairs = (np.abs(v[..., None, :] - v[..., :, None]) <= tol[..., None]) & ~np.eye(n, dtype=bool)
    if plain_numbers(pairs).any() or (zeros and plain_numbers(np.abs(v) <= tol).any()):
        raise InvalidValueError(
            f"op {op!r}: no second derivative at repeated{' or zero' if zeros else ''} "
            f"{'singular ' if zeros else 'eigen'}values ({np.array2string(plain_numbers(v), precision=4)}): the "
            "first derivative there is a convention, exact for functions invariant in the degenerate "
            "subspace (docs/conventions.md), and not differentiable again; take second derivatives "
            "where the values are distinct"
        )


def degenerate_blocks(values: Any, tol: np.ndarray) -> np.ndarray:
    """same[..., i, j]: values i and j (sorted, ascending or descending) are in one run whose
    neighbours are at most tol apart: one repeated eigen- or singular value (the diagonal too)."""
    v = concrete(values)
    steps = np.abs(np.diff(v, axis=-1)) > tol
    ids = np.concatenate([np.zeros(v.shape[:-1] + (1,), dtype=int), np.cumsum(steps, axis=-1)], axis=-1)
    return ids[..., :, None] == ids[..., None, :]


def block_average(x: Any, same: np.ndarray) -> Any:
    """x (..., n) averaged within each block of `same` (..., n, n): ties split equally, as max's."""
    weights = (same / np.sum(same, axis=-1, keepdims=True)).astype(concrete(x).dtype)
    return linalg.matmul(shapes.expand_dims(x, axis=-2), weights)[..., 0, :]


def _negligible(part: Any, scale: Any, dtype: Any) -> bool:
    """Whether every entry of `part` is rounding next to `scale` (the cotangent's or tangent's;
    under vmap each example's, and every example's entries)."""
    bound = 64 * max(part.shape[-1:] or (1,)) * np.finfo(dtype).eps * scale
    return not plain_numbers(np.abs(part) > bound).any()


def refuse_undetermined(
    op: str, values: Any, what: str, advice: str, *checks: tuple[Any, np.ndarray], scale: float
) -> None:
    """An InvalidValueError naming op and the degenerate values unless each quantity of `checks`
    (a concrete array and the mask of its entries whose factor the rule cannot know) is rounding
    there: where it is not, the derivative is undetermined by the cotangent or tangent."""
    dtype = concrete(values).dtype
    for quantity, mask in checks:
        q = concrete(quantity)  # (not np.asarray: under vmap a batch, every example's at once)
        part = np.where(np.broadcast_to(mask, q.shape), q, 0)
        if not _negligible(part, scale, dtype):
            raise InvalidValueError(
                f"op {op!r}: no derivative at the degenerate values "
                f"{np.array2string(plain_numbers(values), precision=4)}: {what}. {advice}"
            )


EIGH_ADVICE = (
    "For functions of the eigenvalues only use np.linalg.eigvalsh (on forward too: its tangent does "
    "not need the eigenvectors); for a matrix function V f(w) V^T (sqrtm, expm, logm) use a form "
    "without eigenvectors (a Newton or Schur iteration, a series) or perturb a so that its eigenvalues "
    "are distinct. Eigenvectors inside a repeated eigenvalue's eigenspace have no derivative, and "
    "functions of them (V f(w) V^T, the eigenspace's projector) cannot be told apart from their "
    "cotangents there (docs/conventions.md, decompositions)"
)
SVD_ADVICE = (
    "For functions of the singular values only use np.linalg.svd(a, compute_uv=False) (svdvals) or "
    "np.linalg.norm(a, 'nuc' or 2) (on forward too: their tangents do not need U and V); to rebuild "
    "a or a function U f(s) V^T use a itself, a form without the SVD, or perturb a so that its "
    "singular values are distinct and nonzero. Singular vectors of a repeated or zero singular value "
    "have no derivative, and functions of them cannot be told apart from their cotangents there "
    "(docs/conventions.md, decompositions)"
)


def refuse_phase_dependent(op: str, phase_part: Any, scale: float, advice: str) -> None:
    """An InvalidValueError unless phase_part (..., k), the imaginary parts whose vanishing says the
    loss is unchanged when complex vectors turn by e^{i phi} (LAPACK fixes that phase by a choice of
    its own, which moves with a), is rounding next to scale: a loss that depends on the phase has
    no derivative of NumPy's function that adcore could give (as torch's svd/eigh backward check)."""
    part = np.abs(concrete(phase_part))  # (under vmap a batch, with each example's scale)
    eps = np.finfo(part.dtype).eps
    if plain_numbers(part > np.sqrt(eps) * np.maximum(scale, np.finfo(part.dtype).tiny)).any():
        raise InvalidValueError(
            f"op {op!r}: the singular or eigen vectors in the complex case are specified up to "
            "multiplication by e^{i phi} (LAPACK picks phi, and it moves with the input), and the loss "
            f"depends on that phase (imaginary parts {np.array2string(plain_numbers(part), precision=3)} where 0 "
            f"means it does not), so its derivative is ill-defined. {advice}"
        )


PHASE_ADVICE = (
    "Differentiate a function unchanged by each vector's phase: of |entries|, of the values, of "
    "U f(s) V^H or V f(w) V^H (outer products u v^H, v v^H), or of vectors whose phase you fix "
    "yourself (e.g. divide each by the phase of one of its entries)"
)


def gap_inverse(values: Any, tol: np.ndarray, sign: int = -1) -> Any:
    """F[..., i, j] = 1 / (v_j - v_i) (sign -1) or 1 / (v_j + v_i) (sign +1), 0 where that is at
    most tol (degenerate pairs, the diagonal): the rules' masked F matrix."""
    row = shapes.expand_dims(values, axis=-2)  # v_j along the last axis
    column = shapes.expand_dims(values, axis=-1)  # v_i
    gap = row - column if sign < 0 else row + column
    n = concrete(values).shape[-1]
    masked = (np.abs(concrete(gap)) <= tol[..., None]) | np.eye(n, dtype=bool)
    safe = elementwise.where(masked, np.ones((), concrete(values).dtype), gap)
    return elementwise.where(masked, np.zeros((), concrete(values).dtype), 1.0 / safe)


def swap_last(x: Any) -> Any:
    """x with its last two axes swapped (the transpose of each matrix of a batch)."""
    return shapes.transpose(x, axes=tuple(range(len(x.shape) - 2)) + (len(x.shape) - 1, len(x.shape) - 2))


def diagonal_of(x: Any) -> Any:
    """The diagonal of each square matrix (..., n, n) as (..., n)."""
    n = x.shape[-1]
    return reductions.sum(x * np.eye(n, dtype=concrete(x).dtype), axis=-2)


def diagonal_matrix(d: Any) -> Any:
    """(..., n) as diagonal matrices (..., n, n)."""
    n = d.shape[-1]
    return shapes.expand_dims(d, axis=-2) * np.eye(n, dtype=concrete(d).dtype)


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
    if np.iscomplexobj(concrete(t)):  # Hermitian: the diagonal's real part (LAPACK ignores the imaginary)
        strict = part - t * np.eye(n, dtype=dtype)
        return strict + complex_parts.conj(swap_last(strict)) + complex_parts.real(t) * np.eye(n, dtype=dtype)
    return part + swap_last(part) - t * np.eye(n, dtype=dtype)


def norm_direction(x: Any, ans: Any, ord: Any = None, axis: Any = None) -> Any:
    """D with d norm = sum over the reduced axes of D * dx: norm's (sub)gradient, shaped as x.

    0 where the norm is 0 (2-norm, 'fro'), sign(x) on the ties of inf/1 norms split equally, U V^T
    over the nonzero singular values ('nuc'), u v^T of the extreme singular value (±2, ties split).
    """
    axes, matrix = norm_axes(x, ord, axis)
    value = concrete(x)
    kept = tuple(1 if i in axes else n for i, n in enumerate(x.shape))
    n_kept = shapes.reshape(ans, shape=kept)
    if matrix:
        return _matrix_norm_direction(x, ord, axes)
    if np.iscomplexobj(value):
        return _complex_vector_norm_direction(x, n_kept, ord, axes)
    if ord in (None, 2, "fro"):
        zero = concrete(n_kept) == 0
        _refuse_norm_second_order(x, ord, value, zero)
        safe = elementwise.where(zero, np.ones((), value.dtype), n_kept)
        return x * elementwise.where(zero, np.zeros((), value.dtype), 1.0 / safe)
    signs = np.sign(value)
    if ord == 0:
        return np.zeros_like(value)
    if ord == 1:
        return signs
    if ord in (np.inf, -np.inf):
        hit = np.abs(value) == concrete(n_kept)
        return signs * (hit / np.sum(hit, axis=axes, keepdims=True)).astype(value.dtype)
    if value.size == np.size(concrete(n_kept)):
        return signs  # slices of one entry: the norm is |x|, whatever ord
    if ord < 1 and plain_numbers(value == 0).any():
        raise InvalidValueError(
            f"op 'norm': ord={ord!r} has no derivative at an x with zero entries (|x|**{ord} has an "
            "infinite slope at 0); differentiate where every entry is nonzero"
        )
    zero = concrete(n_kept) == 0
    _refuse_norm_second_order(x, ord, value, zero)
    safe = elementwise.where(zero, np.ones((), value.dtype), n_kept)
    scale = elementwise.where(zero, np.zeros((), value.dtype), safe ** (1.0 - ord))
    return signs * elementwise.abs(x) ** (ord - 1.0) * scale


def phase_conjugate(x: Any) -> Any:
    """conj(x) / |x|, 0 where x is 0: d|x| = Re(phase_conjugate(x) dx) for complex x (abs'(0) = 0).
    Traced, not concrete: unlike a real sign, a complex phase moves with x, so the rules built on
    it differentiate again."""
    value = concrete(x)
    zero = value == 0
    real = np.finfo(value.dtype).dtype
    safe = elementwise.where(zero, np.ones((), real), elementwise.abs(x))
    return elementwise.where(zero, np.zeros((), value.dtype), complex_parts.conj(x) / safe)


def _complex_vector_norm_direction(x: Any, n_kept: Any, ord: Any, axes: tuple[int, ...]) -> Any:
    """norm_direction of a complex x (d norm = Re(sum D dx), JAX's convention, docs/complex.md):
    the real rules with sign(x) replaced by conj(x) / |x|, so the 2-norm's is conj(x) / norm."""
    value = concrete(x)
    real = np.finfo(value.dtype).dtype
    zero = concrete(n_kept) == 0
    if ord in (None, 2, "fro"):
        _refuse_norm_second_order(x, ord, value, zero)
        safe = elementwise.where(zero, np.ones((), real), n_kept)
        return complex_parts.conj(x) * elementwise.where(zero, np.zeros((), real), 1.0 / safe)
    if ord == 0:
        return np.zeros_like(value)
    phases = phase_conjugate(x)
    if ord == 1 or value.size == np.size(concrete(n_kept)):
        return phases  # ord 1, or slices of one entry: the norm is sum |x|
    if ord in (np.inf, -np.inf):
        hit = np.abs(value) == concrete(n_kept)
        return phases * (hit / np.sum(hit, axis=axes, keepdims=True)).astype(real)
    if ord < 1 and plain_numbers(value == 0).any():
        raise InvalidValueError(
            f"op 'norm': ord={ord!r} has no derivative at an x with zero entries (|x|**{ord} has an "
            "infinite slope at 0); differentiate where every entry is nonzero"
        )
    _refuse_norm_second_order(x, ord, value, zero)
    safe = elementwise.where(zero, np.ones((), real), n_kept)
    scale = elementwise.where(zero, np.zeros((), real), safe ** (1.0 - ord))
    return phases * elementwise.abs(x) ** (ord - 1.0) * scale


def _refuse_norm_second_order(x: Any, ord: Any, value: np.ndarray, zero_norm: np.ndarray) -> None:
    """Under an outer derivative (a traced x), an InvalidValueError where the p-norm's gradient has
    no derivative: at x = 0, where the gradient 0 is a subgradient and x / |x|-like nearby (its
    derivative unbounded), and for 1 < ord < 2 at a zero entry (|x|**ord has an infinite second
    derivative at 0); either would otherwise come out a plausible 0. A slice of one entry is |x|,
    whose second derivative is abs's, 0."""
    if not core.differentiated(x) or value.size == zero_norm.size:
        return
    where = "x = 0 (its gradient there is the subgradient 0)" if plain_numbers(zero_norm).any() else None
    if where is None and ord not in (None, "fro") and 1 < ord < 2 and plain_numbers(value == 0).any():
        where = f"an x with zero entries (|x|**{ord} has an infinite second derivative at 0)"
    if where is not None:
        raise InvalidValueError(
            f"op 'norm': ord={ord!r} has no second derivative at {where}; take second derivatives "
            "where the norm is not 0 (and, for 1 < ord < 2, every entry is nonzero)"
        )


def _matrix_norm_direction(x: Any, ord: Any, axes: tuple[int, ...]) -> Any:
    """norm_direction for 'nuc', ±1, ±2, ±inf over the two axes `axes` (rows, columns)."""
    others = [i for i in range(len(x.shape)) if i not in axes]
    order = (*others, *axes)
    inverse = tuple(int(i) for i in np.argsort(order))
    x2 = shapes.transpose(x, axes=order)
    value = concrete(x2)
    if ord in ("nuc", 2, -2):
        m, n = value.shape[-2:]
        s = np.linalg.svd(value, compute_uv=False)
        tol = degenerate_tolerance(s, max(m, n))
        refuse_second_order("norm", s, tol, x, zeros=True)  # before svd_packed's own rules see x
        packed = svd_packed(x2)
        u, s, v = packed[..., :m, :], np.real(concrete(packed[..., m, :])), packed[..., m + 1 :, :]
        if ord == "nuc":
            weights = s > tol
        else:
            extreme = np.max(s, axis=-1, keepdims=True) if ord == 2 else np.min(s, axis=-1, keepdims=True)
            weights = np.abs(s - extreme) <= tol
            weights = weights / np.sum(weights, axis=-1, keepdims=True)
        weights = weights.astype(s.dtype)[..., None, :]
        d2 = linalg.matmul(u * weights, swap_last(v))  # U w V^H: the block below s holds conj(V)
        if np.iscomplexobj(value):  # d s_k = Re(u_k^H dA v_k): D = conj(U w V^H)
            d2 = complex_parts.conj(d2)
    else:
        along = -2 if ord in (1, -1) else -1  # column sums for ±1, row sums for ±inf
        sums = np.sum(np.abs(value), axis=along, keepdims=True)
        extreme = (
            np.max(sums, axis=(-2, -1), keepdims=True)
            if ord > 0
            else np.min(sums, axis=(-2, -1), keepdims=True)
        )
        hit = sums == extreme
        share = (hit / np.sum(hit, axis=(-2, -1), keepdims=True)).astype(sums.dtype)
        d2 = (phase_conjugate(x2) if np.iscomplexobj(value) else np.sign(value)) * share
    return shapes.transpose(d2, axes=inverse)


# --- pinv and lstsq with a cut: the derivative of the truncated pseudo-inverse ----------------------


class TruncatedPinv(NamedTuple):
    """What the truncated pseudo-inverse's rules need: a's thin SVD U (..., m, r), V (..., n, r);
    the coefficients H and G of dP = V (H o X + G o X^T) U^T + ..., X = U^T dA V; S_k^-2 (the kept
    singular values' inverse squares, 0 at the dropped ones)."""

    u: Any
    v: Any
    h: Any
    g: Any
    inverse_squares: Any


def truncated_pinv(op: str, a: Any, rtol: Any, *inputs: Any) -> TruncatedPinv | None:
    """The SVD pieces of the derivative of pinv(a) with singular values at most rtol * max(s) cut,
    or None where no singular value but rounding is dropped (Golub & Pereyra's rule, which takes
    the dropped ones as exact zeros, is then exact and cheaper). That function is smooth where no
    singular value sits at the cut, and its derivative only divides by the gaps s_kept^2 -
    s_dropped^2. An InvalidValueError where a singular value is within rounding of the cut, and
    under an outer derivative (a traced input) at a rank-deficient a."""
    value = concrete(a)
    second_order = any(map(core.differentiated, (a, *inputs)))
    tol = 32 * max(value.shape[-2:]) * np.finfo(np.result_type(value.dtype, np.float32)).eps
    if np.all((0 <= np.asarray(rtol)) & (np.asarray(rtol) <= tol)) and not second_order:
        return None  # NumPy's default cut: only rounding is dropped (no SVD: the common case stays cheap)
    s_value = np.linalg.svd(value, compute_uv=False)
    cut = np.asarray(rtol)[..., None] * np.max(s_value, axis=-1, keepdims=True)
    kept = s_value > cut
    tol = degenerate_tolerance(s_value, max(value.shape[-2:]))
    _refuse_at_cut(op, s_value, cut, kept, tol)
    if second_order and plain_numbers(s_value <= tol).any():
        raise InvalidValueError(
            f"op {op!r}: no second derivative at a rank-deficient a (singular values "
            f"{np.array2string(plain_numbers(s_value), precision=4)}): the first derivative there holds the rank "
            "fixed, and differentiating it again would give a plausible wrong number; take second "
            "derivatives where a has full rank"
        )
    if not plain_numbers(~kept & (s_value > tol)).any():  # (under vmap: in no example)
        return None
    m = a.shape[-2]
    packed = decompositions.svd_packed(a)
    u, s, v = packed[..., :m, :], packed[..., m, :], packed[..., m + 1 :, :]
    dtype = s_value.dtype
    one, zero = np.ones((), dtype), np.zeros((), dtype)
    safe = elementwise.where(kept, s, one)  # the kept singular values, 1 where dropped (never divided by)
    row, column = shapes.expand_dims(safe, axis=-2), shapes.expand_dims(safe, axis=-1)  # s_b, s_a
    s_row, s_column = shapes.expand_dims(s, axis=-2), shapes.expand_dims(s, axis=-1)
    kept_row, kept_column = kept[..., None, :], kept[..., :, None]
    mixed = kept_row != kept_column  # one of a, b kept, the other dropped
    squares = s_row * s_row - s_column * s_column  # s_b^2 - s_a^2: positive where b is kept
    g = elementwise.where(
        mixed, np.where(kept_row, 1, -1).astype(dtype) / elementwise.where(mixed, squares, one), zero
    )
    ratio = elementwise.where(kept_row, s_column / row, s_row / column)  # s_dropped / s_kept
    both = kept_row & kept_column
    h = elementwise.where(mixed, g * ratio, zero) - elementwise.where(both, 1.0 / (row * column), zero)
    return TruncatedPinv(u, v, h, g, elementwise.where(kept, 1.0 / (safe * safe), zero))


def _refuse_at_cut(op: str, s: np.ndarray, cut: np.ndarray, kept: np.ndarray, tol: np.ndarray) -> None:
    """An InvalidValueError where rounding decides whether a singular value is cut (pinv jumps
    there), or where a zero singular value is kept (a negative rcond: pinv is infinite)."""
    near = (np.abs(s - cut) <= tol) & (cut > tol) & (cut < np.max(s, axis=-1, keepdims=True))
    # (under vmap: a refusal where any example's would refuse, as the loop's example does)
    if plain_numbers(near).any() or plain_numbers(kept & (s <= tol)).any():
        raise InvalidValueError(
            f"op {op!r}: no derivative where a singular value is at the cut rcond * max(s) within "
            f"rounding (singular values {np.array2string(plain_numbers(s), precision=6)}, cut "
            f"{np.array2string(np.squeeze(plain_numbers(cut), -1), precision=6)}): the pseudo-inverse jumps there "
            "as the singular value is kept or dropped. Move rcond (rtol) away from s / max(s)"
        )
