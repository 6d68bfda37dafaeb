"""Batch rules of contractions, linear algebra, decompositions, FFTs and convolutions
(adcore/ops/contractions.py, contraction_forms.py, linalg.py, composite_linalg.py,
decompositions.py, eig.py, fft.py, convolution.py).

matmul (and dot of matrices and vectors) is one BLAS product of the whole batch where an operand
is shared (the examples' rows, or columns, side by side), NumPy's batched matmul otherwise. The
other contractions (inner, vdot, tensordot, kron, multi_dot, einsum, dot of more axes) are their
einsum with a batch label leading each batched operand and the output. Products summed in
another order differ from a loop's in the last bits. NumPy's per-matrix functions (det, inv,
cholesky, eigh, svd, qr, ...) broadcast over leading axes and run LAPACK once per matrix, so a
stacked batch gives the loop's values bit for bit, as the FFTs (the same transforms of the same
lines) and cross do. A call a rule does not cover (an axis an example lacks, NumPy's lstsq of a
batch of matrices) returns NotImplemented: vmap runs the op once per example.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from adcore import ops
from adcore.extend.batching import BatchRule, batch_size, leading, moved_to_front, with_rank
from adcore.ops.complex_parts import conj_if_complex
from adcore.ops.contraction_forms import FORMS
from adcore.ops.contractions import PAIRWISE
from adcore.ops.convolution import MODES, output_window
from adcore.ops.einsum_notation import LETTERS, einsum_plan
from adcore_batching.rules.table import BATCH_RULES

Dims = Sequence[int | None]


def _example_shape(x: Any, dim: int | None) -> tuple[int, ...]:
    """One example's shape of x (x's own shape when it is not batched)."""
    shape = tuple(x.shape)
    return shape if dim is None else shape[:dim] + shape[dim + 1 :]


def _reshaped(x: Any, shape: tuple[int, ...]) -> Any:
    return x if tuple(x.shape) == shape else ops.reshape(x, shape=shape)


def _size(shape: Sequence[int]) -> int:
    return int(np.prod(shape, dtype=int))


# --- matmul and dot ----------------------------------------------------------------------------


def _matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """matmul's result shape for operands of these shapes (each at least 1-d)."""
    lead = np.broadcast_shapes(a[:-2], b[:-2])
    return lead + (a[-2:-1] if len(a) > 1 else ()) + (b[-1:] if len(b) > 1 else ())


def _matmul(dims: Dims, a: Any, b: Any) -> Any:
    da, db = dims
    a_shape, b_shape = _example_shape(a, da), _example_shape(b, db)
    if not a_shape or not b_shape or a_shape[-1] != b_shape[-2 if len(b_shape) > 1 else 0]:
        return NotImplemented  # matmul refuses it: the loop raises NumPy's error
    size = batch_size(dims, (a, b))
    if db is None and len(b_shape) == 2:  # every example's rows times b: one product
        a = moved_to_front(a, da)
        rows = _reshaped(a, (size * _size(a_shape[:-1]), a_shape[-1]))
        return _reshaped(ops.matmul(rows, b), (size,) + a_shape[:-1] + b_shape[1:]), 0
    if da is None and len(a_shape) == 2 and len(b_shape) <= 2:  # a times every example's columns
        b = ops.moveaxis(b, source=db, destination=1 if len(b_shape) == 2 else -1)  # (n, B[, k])
        columns = _reshaped(b, (b_shape[0], _size(b.shape[1:])))
        return _reshaped(ops.matmul(a, columns), a_shape[:1] + tuple(b.shape[1:])), 1
    # NumPy's batched matmul, a batched vector made a row (of a) or a column (of b) matrix
    out_shape = (size,) + _matmul_shape(a_shape, b_shape)
    a, b = moved_to_front(a, da), moved_to_front(b, db)
    if da is not None and len(a_shape) == 1:
        a, a_shape = _reshaped(a, (size, 1) + a_shape), (1,) + a_shape
    if db is not None and len(b_shape) == 1:
        b, b_shape = _reshaped(b, (size,) + b_shape + (1,)), b_shape + (1,)
    rank = max(len(a_shape), len(b_shape))  # batched operands' leading axes lined up
    a = a if da is None else with_rank(a, rank)
    b = b if db is None else with_rank(b, rank)
    if a_shape[-1] == 1 and len(a_shape) > 1 and len(b_shape) > 1:
        # outer products (a per-example weight gradient g x^T): einsum's one-term sums, which are
        # matmul's bits (0 + a b, a zero's sign too), at a fifth of its time on the MLP benchmark's
        # (64, 784, 1) @ (64, 1, 128)
        return _reshaped(ops.einsum(a, b, subscripts="...ik,...kj->...ij"), out_shape), 0
    return _reshaped(ops.matmul(a, b), out_shape), 0


def _dot(dims: Dims, a: Any, b: Any) -> Any:
    """np.dot of vectors and matrices is matmul; with a scalar or more axes, its einsum."""
    ndims = (len(_example_shape(a, dims[0])), len(_example_shape(b, dims[1])))
    if all(1 <= n <= 2 for n in ndims):
        return _matmul(dims, a, b)
    return _einsum_shaped("dot")(dims, a, b)


# --- einsum and the ops that are einsums in disguise --------------------------------------------


def _batched_einsum(
    dims: Dims,
    operands: Sequence[Any],
    terms: Sequence[str],
    output: str,
    shapes: Sequence[tuple[int, ...]],
    out_shape: tuple[int, ...],
    **params: Any,
) -> Any:
    """einsum(terms -> output) of operands (each reshaped to its shape in `shapes`), a fresh label
    leading each batched operand's term and the output."""
    used = set("".join(terms))
    label = next((c for c in LETTERS if c not in used), None)
    if label is None:
        return NotImplemented  # 52 labels taken: the loop
    size = batch_size(dims, operands)
    batched_terms, batched = [], []
    for x, d, term, shape in zip(operands, dims, terms, shapes):
        if d is None:
            batched_terms.append(term)
            batched.append(_reshaped(x, shape))
        else:
            batched_terms.append(label + term)
            batched.append(_reshaped(moved_to_front(x, d), (size,) + shape))
    subscripts = ",".join(batched_terms) + "->" + label + output
    return _reshaped(ops.einsum(*batched, subscripts=subscripts, **params), (size,) + out_shape), 0


def _einsum(dims: Dims, *operands: Any, subscripts: str, **params: Any) -> Any:
    """einsum in its canonical form (no ellipsis, broadcast axes of length 1 dropped), batched;
    the user's `optimize` kept."""
    plan = einsum_plan(subscripts, tuple(_example_shape(x, d) for x, d in zip(operands, dims)))
    return _batched_einsum(dims, operands, plan.terms, plan.output, plan.shapes, plan.out_shape, **params)


def _einsum_shaped(op: str) -> BatchRule:
    """The batch rule of a contraction op through its einsum form (contraction_forms.FORMS)."""

    def rule(dims: Dims, *inputs: Any, **params: Any) -> Any:
        form = FORMS[op](*(_example_shape(x, d) for x, d in zip(inputs, dims)), **params)
        if form.constants:
            return NotImplemented
        plan = form.plan
        # opt_einsum's pairwise order, as the rules' einsums (a BLAS product where there is one)
        return _batched_einsum(
            dims, inputs, plan.terms, plan.output, plan.shapes, form.out_shape, optimize=PAIRWISE
        )

    rule.__name__ = f"batch_{op}"
    return rule


def _vdot(dims: Dims, a: Any, b: Any) -> Any:
    """vdot(a, b) = sum(conj(a) * b) of the flattened inputs: conj(a) through vdot's einsum."""
    return _einsum_shaped("vdot")(dims, conj_if_complex(a), b)


def _in_range(axis: Any, ndim: int) -> bool:
    return isinstance(axis, (int, np.integer)) and -ndim <= axis < ndim


def _cross(
    dims: Dims, a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: Any = None
) -> Any:
    """np.cross broadcasts over the vectors' other axes: batched inputs get their batch axis first
    and their vector axis named past it. The same products as a loop's: bit for bit."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a_shape, b_shape = _example_shape(a, dims[0]), _example_shape(b, dims[1])
    if not (_in_range(axisa, len(a_shape)) and _in_range(axisb, len(b_shape))):
        return NotImplemented  # the loop raises cross's error
    rank = max(len(a_shape), len(b_shape))  # an example result's axes: the others and the vector's
    if 3 in (a_shape[axisa], b_shape[axisb]):
        if not _in_range(axisc, rank):
            return NotImplemented
        axisc = axisc % rank + 1
    else:
        axisc = -1  # two 2-vectors: a scalar per pair, no vector axis to place
    a, axisa = _vectors_batched(a, dims[0], axisa, len(a_shape), rank)
    b, axisb = _vectors_batched(b, dims[1], axisb, len(b_shape), rank)
    return ops.cross(a, b, axisa=axisa, axisb=axisb, axisc=axisc), 0


def _vectors_batched(x: Any, dim: int | None, axis: int, example_ndim: int, rank: int) -> tuple[Any, int]:
    """A cross operand with its batch axis first and singleton axes after it up to `rank` axes per
    example, and its vector axis in that array (an unbatched one as it is)."""
    if dim is None:
        return x, axis
    return with_rank(moved_to_front(x, dim), rank), axis % example_ndim + 1 + rank - example_ndim


# --- the solve family: a right-hand side b is a vector when 1-d, else a stack of matrices ---------


def _solve_like(op: Any) -> BatchRule:
    """solve, solve_triangular, cho_solve: a (..., n, n) and b (n,) or (..., n, k) broadcast over
    leading axes. A shared a solves every example's vector b as one right-hand side of columns (one
    factorization; the solutions differ from a loop's in the last bits); batched matrices a are
    solved each with its own b as a column."""
    matrices = leading(op, (2, 2))

    def rule(dims: Dims, a: Any, b: Any, **params: Any) -> Any:
        (da, db), a_shape, b_shape = dims, _example_shape(a, dims[0]), _example_shape(b, dims[1])
        if len(a_shape) < 2 or len(b_shape) != 1:
            return matrices(dims, a, b, **params)  # a too small: NotImplemented, the loop's error
        if db is None:  # NumPy reads a 1-d b as a vector against any stack a
            return op(moved_to_front(a, da), b, **params), 0
        if da is None:
            out = op(a, ops.moveaxis(b, source=db, destination=-1), **params)  # (..., n, B)
            return out, len(out.shape) - 1
        size = batch_size(dims, (a, b))
        column = _reshaped(moved_to_front(b, db), (size,) + (1,) * (len(a_shape) - 2) + b_shape + (1,))
        out = op(moved_to_front(a, da), column, **params)
        return _reshaped(out, tuple(out.shape[:-1])), 0

    rule.__name__ = f"batch_{op.name}"
    return rule


def _lstsq(op: Any) -> BatchRule:
    """lstsq_solution, lstsq_residuals: NumPy's lstsq takes one matrix a (no stacks), so only a
    shared a is batched: every example's b as columns of one right-hand side (one SVD of a; the
    results differ from a loop's in the last bits). A batched a: the loop."""

    def rule(dims: Dims, a: Any, b: Any, **params: Any) -> Any:
        (da, db), b_shape = dims, _example_shape(b, dims[1])
        size = batch_size(dims, (a, b))
        if da is not None or len(b_shape) not in (1, 2) or len(a.shape) != 2 or size * _size(b_shape) == 0:
            return NotImplemented
        columns = ops.moveaxis(b, source=db, destination=1)  # (m, B[, k])
        out = op(a, _reshaped(columns, (b_shape[0], _size(columns.shape[1:]))), **params)
        if op.name == "lstsq_solution":
            return _reshaped(out, tuple(out.shape[:1]) + tuple(columns.shape[1:])), 1
        # the residuals: one per column, (1,) for a vector b; none unless a has full column rank n < m
        per_example = (0,) if out.shape[0] == 0 else (b_shape[1:] or (1,))
        return _reshaped(out, (size,) + per_example), 0

    rule.__name__ = f"batch_{op.name}"
    return rule


# --- FFTs: the transformed axes named past the batch axis ----------------------------------------


def _fft(op: Any) -> BatchRule:
    def rule(dims: Dims, x: Any, s: Any = None, axes: Any = None, norm: Any = None) -> Any:
        nd = len(_example_shape(x, dims[0]))
        if axes is None:  # every axis, or the last len(s)
            count = nd if s is None else (1 if np.ndim(s) == 0 else len(s))
            if count > nd:
                return NotImplemented  # the loop raises the op's error
            axes = tuple(range(nd - count, nd))
        axes = (axes,) if np.ndim(axes) == 0 else tuple(axes)
        if not all(_in_range(a, nd) for a in axes):
            return NotImplemented
        return op(moved_to_front(x, dims[0]), s=s, axes=tuple(a % nd + 1 for a in axes), norm=norm), 0

    rule.__name__ = f"batch_{op.name}"
    return rule


# --- convolve, correlate: 1-d only in NumPy, so a product of each example's sliding windows -----


def _sliding(op: str, default_mode: str) -> BatchRule:
    """convolve(a, v) of batched signals: the full convolution as the windows of a zero-padded a
    times v reversed (correlate, convolve(a, conj(v[::-1])): times conj(v)), one einsum for the
    batch, then the window of it NumPy's mode keeps. Products summed in another order than NumPy's
    dot per output: the last bits."""

    def rule(dims: Dims, a: Any, v: Any, mode: str = default_mode) -> Any:
        (da, db), a_shape, v_shape = dims, _example_shape(a, dims[0]), _example_shape(v, dims[1])
        if len(a_shape) > 1 or len(v_shape) > 1 or 0 in a_shape + v_shape or mode not in MODES:
            return NotImplemented  # the loop raises NumPy's error
        if (not a_shape or not v_shape) and op == "correlate":
            return NotImplemented  # correlate refuses 0-d inputs (convolve reads them as length 1)
        size, m, n = batch_size(dims, (a, v)), _size(a_shape), _size(v_shape)
        a, v = _signal(a, da, m, size), _signal(v, db, n, size)
        a_lead, v_lead = (slice(None),) * (da is not None), (slice(None),) * (db is not None)
        if op == "correlate":  # convolve(a, conj(v[::-1])): the windows times conj(v)
            v = conj_if_complex(v)
        else:
            v = ops.getitem(v, index=v_lead + (slice(None, None, -1),))
        padded = ops.pad(a, pad_width=((0, 0),) * len(a_lead) + ((n - 1, n - 1),))
        windows = ops.getitem(padded, index=a_lead + (np.add.outer(np.arange(m + n - 1), np.arange(n)),))
        front = tuple(None if d is None else 0 for d in dims)
        full, out_dim = _batched_einsum(
            front, (windows, v), ("ki", "i"), "k", ((m + n - 1, n), (n,)), (m + n - 1,), optimize=PAIRWISE
        )
        return ops.getitem(full, index=(slice(None), output_window(op, mode, m, n))), out_dim

    rule.__name__ = f"batch_{op}"
    return rule


def _signal(x: Any, dim: int | None, length: int, size: int) -> Any:
    """A 1-d (or 0-d, length 1) signal as (length,), or batched as (size, length)."""
    return _reshaped(x, (length,)) if dim is None else _reshaped(moved_to_front(x, dim), (size, length))


def _add(op: str, rule: BatchRule) -> None:
    """The op's rule in the table, its unbatched constants given as lists or Python numbers (a @
    [1.0, 2.0]) made arrays first, as the op's impl would: the rules read their shapes."""

    @functools.wraps(rule)
    def call(dims: Dims, *inputs: Any, **params: Any) -> Any:
        return rule(dims, *(x if hasattr(x, "shape") else np.asarray(x) for x in inputs), **params)

    BATCH_RULES.add(op, call)


# fmt: off
# --- contractions -------------------------------------------------------------------------------
_add("matmul",       _matmul)
_add("dot",          _dot)
_add("einsum",       _einsum)
_add("vdot",         _vdot)
_add("inner",        _einsum_shaped("inner"))
_add("tensordot",    _einsum_shaped("tensordot"))
_add("kron",         _einsum_shaped("kron"))
_add("multi_dot",    _einsum_shaped("multi_dot"))
_add("cross",        _cross)
_add("matrix_power", leading(ops.matrix_power, (2,)))

# --- per-matrix linear algebra: LAPACK once per matrix of the stack ------------------------------
_add("inv",            leading(ops.inv, (2,)))
_add("det",            leading(ops.det, (2,)))
_add("logabsdet",      leading(ops.logabsdet, (2,)))
_add("slogdet_packed", leading(ops.slogdet_packed, (2,)))
_add("cholesky",       leading(ops.cholesky, (2,)))
_add("solve",            _solve_like(ops.solve))
_add("solve_triangular", _solve_like(ops.solve_triangular))
_add("cho_solve",        _solve_like(ops.cho_solve))

# --- decompositions: packed outputs keep the matrices' leading axes ------------------------------
_add("eigh_packed",     leading(ops.eigh_packed, (2,)))
_add("eigvalsh",        leading(ops.eigvalsh, (2,)))
_add("svd_packed",      leading(ops.svd_packed, (2,)))
_add("svdvals",         leading(ops.svdvals, (2,)))
_add("qr_packed",       leading(ops.qr_packed, (2,)))
_add("pinv",            leading(ops.pinv, (2,)))
_add("eig_packed",      leading(ops.eig_packed, (2,)))
_add("eigvals",         leading(ops.eigvals, (2,)))
_add("lstsq_solution",  _lstsq(ops.lstsq_solution))
_add("lstsq_residuals", _lstsq(ops.lstsq_residuals))

# --- FFTs ----------------------------------------------------------------------------------------
_add("fftn",   _fft(ops.fftn))
_add("ifftn",  _fft(ops.ifftn))
_add("rfftn",  _fft(ops.rfftn))
_add("irfftn", _fft(ops.irfftn))

# --- convolution ---------------------------------------------------------------------------------
_add("convolve",  _sliding("convolve", "full"))
_add("correlate", _sliding("correlate", "valid"))
# fmt: on
