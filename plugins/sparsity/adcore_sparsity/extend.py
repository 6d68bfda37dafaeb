"""The helpers of `sparsity` rules (for rule authors: this plugin's rules for the core ops, and
other op plugins' for theirs): which elements of an op's output may depend on which elements
of each input (the op's local Jacobian pattern), as data the sparsity backend combines.

A sparsity rule is a `SparsityRule`. Called `rule(ans, *inputs, **params)`, it gives one entry per
input of the call: None (no derivative flows from that input: a condition, an index, a step
such as floor), `DENSE` (every output element may depend on every element of the input), or a
SciPy sparse matrix of shape (ans.size, input.size) whose stored entries are the dependencies
(flat C-order positions; the stored values mean nothing). A rule reads the numbers of an input
only when `known(input)`: in a global pattern (valid for every input) the traced inputs and
`ans` are `Unknown` stand-ins with a shape and a dtype; in a local pattern (at a point) they are
the values, so `where` or `maximum` can pick the branch they take there.

`order` says how second derivatives flow, for Hessian patterns: "linear" (affine in every input:
add, sum, getitem), "multilinear" (linear in each input alone: multiply, matmul, einsum) or
"nonlinear" (anything else). `exact` claims the pattern is no larger than the Jacobian's
non-zeros at generic points; the conformance engine checks it, and checks every rule is a superset.

The builders here cover the common forms: `elementwise`, `movement` (ops that copy elements:
reshape, getitem, concatenate), `reduction` and `along_axes` (fibres), `dense`, `no_dependency`
and `einsum_dependencies`. SciPy is imported when a rule runs, never at import; of adcore this
module imports errors only, so an op plugin's rules may import it without loading anything else.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from adcore.errors import ValueDependentError

DENSE = "dense"  # every output element may depend on every element of this input
ORDERS = ("linear", "multilinear", "nonlinear")


class Unknown:
    """A value a global pattern must not read (a traced input, or the output): shape and dtype only."""

    __slots__ = ("dtype", "shape")

    def __init__(self, shape: tuple[int, ...], dtype: Any) -> None:
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __repr__(self) -> str:
        return f"Unknown(shape={self.shape}, dtype={self.dtype})"


def known(x: Any) -> bool:
    """Whether a rule may read x's numbers (a constant, or any input of a local pattern)."""
    return not isinstance(x, Unknown)


class Condition(np.ndarray):
    """A comparison of a traced value in a global pattern (x > 0): its booleans hold at this point
    only, so `anp.where` takes both branches and anything that would decide by them (if, any,
    an index) raises ValueDependentError."""

    def _refuse(self, what: str) -> Any:
        raise ValueDependentError(
            f"{what} of a comparison of a traced value decides by the input's numbers, which a global "
            "sparsity pattern (valid for every input) cannot do: detect the pattern at this point with "
            "local=True, or choose between values with anp.where (both branches are kept)"
        )

    def __bool__(self) -> bool:
        return self._refuse("bool()")

    def __index__(self) -> int:
        return self._refuse("an index")

    def any(self, *args: Any, **kwargs: Any) -> Any:
        return self._refuse("any()")

    def all(self, *args: Any, **kwargs: Any) -> Any:
        return self._refuse("all()")

    def nonzero(self) -> Any:
        return self._refuse("nonzero()")

    def item(self, *args: Any) -> Any:
        return self._refuse("item()")

    def tolist(self) -> Any:
        return self._refuse("tolist()")

    def sum(self, *args: Any, **kwargs: Any) -> Any:
        return self._refuse("sum()")

    def __array_function__(self, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
        if func in _DECIDING or (func is np.where and len(args) + len(kwargs) == 1):
            return self._refuse(f"np.{func.__name__}()")
        return super().__array_function__(func, types, args, kwargs)


# NumPy functions whose answer decides by a condition's booleans (an index, a count, a truth value)
_DECIDING = {
    np.nonzero,
    np.flatnonzero,
    np.argwhere,
    np.count_nonzero,
    np.any,
    np.all,
    np.sum,
    np.argmax,
    np.argmin,
    np.argsort,
    np.unique,
    np.array_equal,
    np.extract,
    np.compress,
}


def is_condition(x: Any) -> bool:
    """Whether x is a global pattern's Condition (or a tuple index holding one)."""
    if isinstance(x, tuple):
        return any(isinstance(i, Condition) for i in x)
    return isinstance(x, Condition)


@dataclass(frozen=True)
class SparsityRule:
    """An op's sparsity rule: `dependencies(ans, *inputs, **params)` gives one entry per input
    (None, DENSE or a sparse (ans.size, input.size) matrix); `order` and `exact` as data.

    A multilinear rule may give `pairs(ans, *inputs, **params)`: {(i, j): a sparse (input_i.size,
    input_j.size) matrix of the elements of inputs i and j that multiply each other in some term},
    or None. Without it, a Hessian pattern pairs the elements that reach one output element, which
    for a contraction (r @ r: one output) is every pair."""

    dependencies: Callable[..., tuple]
    order: str = "nonlinear"
    exact: bool = True
    pairs: Callable[..., dict | None] | None = None

    def __post_init__(self) -> None:
        if self.order not in ORDERS:
            raise ValueError(f"SparsityRule order must be one of {ORDERS}, got {self.order!r}")

    def __call__(self, ans: Any, *inputs: Any, **params: Any) -> tuple:
        return self.dependencies(ans, *inputs, **params)


# --- sparse matrices from index maps ----------------------------------------------------------


def _size(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape, dtype=np.int64))


def gather(source: np.ndarray, in_size: int) -> Any:
    """The pattern of an output whose element k copies input element source.flat[k] (-1: none),
    as a CSR matrix (source.size, in_size)."""
    from scipy import sparse

    source = np.asarray(source, dtype=np.int64).ravel()
    taken = source >= 0
    if taken.all():  # every output element copies one (elementwise ops, slices): one entry a row
        indptr, indices = np.arange(source.size + 1, dtype=np.int64), source
    else:
        indptr = np.zeros(source.size + 1, dtype=np.int64)
        np.cumsum(taken, out=indptr[1:])
        indices = source[taken]
    return sparse.csr_array((np.ones(indices.size), indices, indptr), shape=(source.size, in_size))


def scatter(target: np.ndarray, out_size: int) -> Any:
    """The pattern of an output into whose element target.flat[j] input element j flows (-1:
    nowhere), as a CSR matrix (out_size, target.size)."""
    from scipy import sparse

    target = np.asarray(target, dtype=np.int64).ravel()
    j = np.flatnonzero(target >= 0)
    matrix = sparse.coo_array((np.ones(j.size), (target[j], j)), shape=(out_size, target.size))
    return matrix.tocsr()


def broadcast(in_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> Any:
    """The pattern of an input broadcast to out_shape: each output element depends on the input
    element NumPy broadcasting lines up under it."""
    if tuple(in_shape) == tuple(out_shape):  # the identity, without a broadcast copy
        return gather(np.arange(_size(in_shape)), _size(in_shape))
    source = np.broadcast_to(np.arange(_size(in_shape)).reshape(in_shape), out_shape)
    return gather(source, _size(in_shape))


def normalize_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """An axis param (None, an int or a tuple, negatives allowed) as a sorted tuple of axes."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    return tuple(sorted(int(a) % max(ndim, 1) for a in axes))


def fibres(shape: tuple[int, ...], axes: tuple[int, ...]) -> np.ndarray:
    """For each element of an array of `shape`, the index of its fibre along `axes` (the output
    element a reduction over `axes` puts it in), shaped like the array."""
    kept = tuple(1 if a in axes else n for a, n in enumerate(shape))
    return np.broadcast_to(np.arange(_size(kept)).reshape(kept), shape)


# --- rule builders ----------------------------------------------------------------------------


def elementwise(
    order: str = "nonlinear", inputs: Sequence[int] | None = None, exact: bool = True
) -> SparsityRule:
    """Each output element depends on the inputs' elements at its (broadcast) position; only
    `inputs` (positions) when given, e.g. where's (1, 2)."""

    def dependencies(ans: Any, *args: Any, **params: Any) -> tuple:
        out = np.shape(ans)
        return tuple(
            broadcast(np.shape(a), out) if inputs is None or i in inputs else None for i, a in enumerate(args)
        )

    return SparsityRule(dependencies, order, exact)


def movement(impl: Callable[..., Any], order: str = "linear", exact: bool = True) -> SparsityRule:
    """An op that only copies input elements into the output (or puts zeros there): reshape,
    getitem, transpose, concatenate, pad with zeros, triu. Its pattern is read from `impl` run
    on the inputs' element numbers (each input numbered after the previous one)."""

    def dependencies(ans: Any, *args: Any, **params: Any) -> tuple:
        sizes = [_size(np.shape(a)) for a in args]
        starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        numbered = [
            np.arange(start + 1, start + size + 1, dtype=np.float64).reshape(np.shape(a))
            for a, start, size in zip(args, starts, sizes)
        ]
        source = np.asarray(impl(*numbered, **params)).ravel().astype(np.int64) - 1  # -1: a zero put there
        which = np.searchsorted(starts, source, side="right") - 1
        return tuple(gather(np.where(which == i, source - starts[i], -1), sizes[i]) for i in range(len(args)))

    return SparsityRule(dependencies, order, exact)


def reduction(order: str = "linear", exact: bool = True, axis_param: str = "axis") -> SparsityRule:
    """An output element depends on the input's elements in its fibre along the reduced axes
    (sum, prod, max, var, logsumexp); the params `axis` (None: all) and `keepdims` as NumPy's."""

    def dependencies(ans: Any, x: Any, **params: Any) -> tuple:
        shape = np.shape(x)
        axes = normalize_axes(params.get(axis_param), len(shape))
        return (scatter(fibres(shape, axes), _size(np.shape(ans))),)

    return SparsityRule(dependencies, order, exact)


def along_axes(
    axes_of: Callable[..., tuple[int, ...]], order: str = "nonlinear", exact: bool = True
) -> SparsityRule:
    """An output of the input's shape whose element depends on every element of its fibre along
    the axes `axes_of(x, **params)` gives (softmax, sort, fft along axes)."""

    def dependencies(ans: Any, x: Any, **params: Any) -> tuple:
        shape = np.shape(x)
        fibre = fibres(shape, axes_of(x, **params))
        nfibres = int(fibre.max()) + 1 if fibre.size else 0
        into = scatter(fibre, nfibres)  # (fibres, in)
        return ((into.T @ into).tocsr(),)  # out element (same place) -> every input of its fibre

    return SparsityRule(dependencies, order, exact)


def dense(order: str = "nonlinear", inputs: Sequence[int] | None = None, exact: bool = True) -> SparsityRule:
    """Every output element may depend on every element of each input (det, inv, solve); only
    `inputs` (positions) when given."""

    def dependencies(ans: Any, *args: Any, **params: Any) -> tuple:
        return tuple(DENSE if inputs is None or i in inputs else None for i in range(len(args)))

    return SparsityRule(dependencies, order, exact)


def no_dependency() -> SparsityRule:
    """No derivative flows from any input (floor, sign, round, stop_gradient): an empty pattern."""

    def dependencies(ans: Any, *args: Any, **params: Any) -> tuple:
        return (None,) * len(args)

    return SparsityRule(dependencies, "linear", True)


def einsum_dependencies(subscripts: str, ans: Any, *operands: Any) -> tuple:
    """Each operand's pattern under np.einsum(subscripts, *operands) with explicit subscripts
    ("ij,jk->ik", no ellipsis): output element o depends on element e of operand i when some term
    of o's sum holds e, times the other operands' elements that are known to be non-zero (an
    Unknown operand counts as non-zero everywhere)."""
    from scipy import sparse

    inputs, output = subscripts.replace(" ", "").split("->")
    labels = inputs.split(",")
    sizes: dict[str, int] = {}
    for sub, operand in zip(labels, operands):
        sizes.update(zip(sub, np.shape(operand)))
    masks = [
        (np.asarray(op) != 0).astype(np.float64) if known(op) else np.ones(np.shape(op)) for op in operands
    ]
    result = []
    for i, sub in enumerate(labels):
        free = output + "".join(dict.fromkeys(c for c in sub if c not in output))
        others = [m for k, m in enumerate(masks) if k != i]
        other_subs = [s for k, s in enumerate(labels) if k != i]
        ones = np.ones(tuple(sizes[c] for c in free))
        # optimize: a chain (multi_dot) summed pairwise, not in one loop over every label at once
        chain = len(others) > 1  # (its path search costs more than one product of two)
        counts = np.einsum(",".join([*other_subs, free]) + "->" + free, *others, ones, optimize=chain)
        coords = np.nonzero(np.atleast_1d(counts))  # NumPy refuses nonzero of a 0-d array
        at = dict(zip(free, coords))
        out_index = (
            np.ravel_multi_index(tuple(at[c] for c in output), tuple(sizes[c] for c in output))
            if output
            else np.zeros(coords[0].size if coords else 1, dtype=np.int64)
        )
        in_index = (
            np.ravel_multi_index(tuple(at[c] for c in sub), np.shape(operands[i]))
            if sub
            else np.zeros(out_index.size, dtype=np.int64)
        )
        shape = (_size(np.shape(ans)), _size(np.shape(operands[i])))
        # out_index ascends (nonzero's C order, the output's labels first): CSR directly, no COO sort
        indptr = np.zeros(shape[0] + 1, dtype=np.int64)
        np.cumsum(np.bincount(out_index, minlength=shape[0]), out=indptr[1:])
        result.append(sparse.csr_array((np.ones(out_index.size), in_index, indptr), shape=shape))
    return tuple(result)


def batched(
    out_shape: tuple[int, ...], in_shape: tuple[int, ...], out_core: int, in_core: int, core: Any = None
) -> Any:
    """The pattern of an op on a stack of matrices (inv, det, solve, expm): an output element in
    batch b depends only on the input's elements in the batch broadcasting lines up under b, by
    `core`, a (core output size, core input size) pattern (None: dense); the last `out_core` and
    `in_core` axes are the core ones, the axes before them broadcast as NumPy's batch axes. One
    input matrix and a dense core: DENSE (nothing built: a constant 1000 x 1000 matrix costs nothing)."""
    from scipy import sparse

    out_shape, in_shape = tuple(out_shape), tuple(in_shape)
    out_batch, in_batch = out_shape[: len(out_shape) - out_core], in_shape[: len(in_shape) - in_core]
    if core is None and _size(in_batch) == 1:
        return DENSE
    out_size, in_size = _size(out_shape[len(out_batch) :]), _size(in_shape[len(in_batch) :])
    block = np.ones((out_size, in_size)) if core is None else core
    batch = broadcast(in_batch, out_batch)
    return sparse.csr_array(sparse.kron(batch, block, format="csr"), dtype=np.float64)


# --- value-dependent patterns (local patterns, constants): the branch a kink or a step takes ----


def readable(*values: Any) -> bool:
    """Whether a rule may decide by all of these values: each known (a constant, or any value of a
    local pattern) and none a global pattern's Condition (which holds at this point only)."""
    return all(known(v) and not is_condition(v) for v in values)


def selected(in_shape: tuple[int, ...], out_shape: tuple[int, ...], keep: Any = True) -> Any:
    """`broadcast`'s pattern kept only at the output positions where `keep` (broadcastable to
    out_shape) holds: the derivative of maximum, where, relu or clip at a point."""
    if keep is True:
        return broadcast(in_shape, out_shape)
    source = np.broadcast_to(np.arange(_size(in_shape)).reshape(in_shape), out_shape)
    return gather(np.where(np.broadcast_to(keep, out_shape), source, -1), _size(in_shape))


def reduced(in_shape: tuple[int, ...], axes: tuple[int, ...], out_size: int, keep: Any = True) -> Any:
    """The pattern of a reduction over `axes` whose output element depends on the elements of its
    fibre where `keep` (broadcastable to in_shape) holds: max's maxima, sum's where= mask."""
    fibre = fibres(in_shape, axes)
    if keep is not True:
        fibre = np.where(np.broadcast_to(keep, in_shape), fibre, -1)
    return scatter(fibre, out_size)


def einsum_pairs(subscripts: str, *operands: Any, limit: int = 1 << 24) -> dict | None:
    """For each two operands i < j of np.einsum(subscripts, ...) (explicit subscripts), the elements
    that multiply each other in some term whose other factors are not known zeros: a CSR
    (size_i, size_j); None when a pair's terms number more than `limit` (the default pairing stands)."""
    from scipy import sparse

    inputs = subscripts.replace(" ", "").split("->")[0].split(",")
    sizes: dict[str, int] = {}
    for sub, operand in zip(inputs, operands):
        sizes.update(zip(sub, np.shape(operand)))
    masks = [
        (np.asarray(op) != 0).astype(np.float64) if known(op) else np.ones(np.shape(op)) for op in operands
    ]
    result = {}
    for i in range(len(operands)):
        for j in range(i + 1, len(operands)):
            joint = "".join(dict.fromkeys(inputs[i] + inputs[j]))
            if _size(tuple(sizes[c] for c in joint)) > limit:
                return None
            others = [k for k in range(len(operands)) if k not in (i, j)]
            counts = np.einsum(
                ",".join([inputs[i], inputs[j], *(inputs[k] for k in others)]) + "->" + joint,
                np.ones(np.shape(operands[i])),
                np.ones(np.shape(operands[j])),
                *(masks[k] for k in others),
            )
            coords = dict(zip(joint, np.nonzero(np.atleast_1d(counts)) if joint else ()))
            count = int(np.count_nonzero(counts))

            def flat(k: int, coords: dict = coords, count: int = count) -> np.ndarray:
                sub = inputs[k]
                if not sub:
                    return np.zeros(count, dtype=np.int64)
                return np.ravel_multi_index(tuple(coords[c] for c in sub), np.shape(operands[k]))

            shape = (_size(np.shape(operands[i])), _size(np.shape(operands[j])))
            result[(i, j)] = sparse.coo_array((np.ones(count), (flat(i), flat(j))), shape=shape).tocsr()
    return result
