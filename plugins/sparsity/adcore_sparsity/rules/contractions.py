"""Sparsity rules of adcore/ops/contractions.py, and of matmul (adcore/ops/linalg.py).

Every contraction but trace is an einsum in disguise: `einsum_form` (adcore/ops/contraction_forms.py)
gives its canonical subscripts (no ellipsis, broadcast axes of length 1 dropped, implicit output
made explicit, cross's Levi-Civita symbol as a constant), and `einsum_dependencies` reads the
pattern from them: output element o depends on element e of an operand when some term of o's sum
holds e times elements of the other operands that may be non-zero (a traced one everywhere in a
global pattern; a constant, or any value in a local one, where it is not 0). Multilinear: linear
in each operand alone. trace is the sum of a diagonal: linear.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from adcore.ops.contraction_forms import EinsumForm, einsum_form
from adcore.ops.einsum_notation import einsum_plan
from adcore_sparsity.extend import (
    DENSE,
    SparsityRule,
    Unknown,
    einsum_dependencies,
    einsum_pairs,
    is_condition,
    known,
)
from adcore_sparsity.rules.table import defsparsity


def _matmul_form(a: tuple[int, ...], b: tuple[int, ...]) -> EinsumForm:
    """np.matmul as an einsum: a 1-d operand promoted (and its axis dropped after), batch axes broadcast."""
    left, row = ("j", "") if len(a) == 1 else ("...ij", "i")
    right, column = ("j", "") if len(b) == 1 else ("...jk", "k")
    batch = "..." if row or column else ""
    subscripts = f"{left},{right}->{batch}{row}{column}"
    return EinsumForm(subscripts, (a, b), einsum_plan(subscripts, (a, b)).out_shape)


def _as_operand(x: Any, shape: tuple[int, ...]) -> Any:
    """An operand in its canonical shape: a value reshaped; an Unknown, or a Condition (a global
    pattern's comparison, whose booleans hold at this point only), an Unknown of that shape."""
    return np.reshape(np.asarray(x), shape) if known(x) and not is_condition(x) else Unknown(shape, x.dtype)


def _full_is_dense(dependency: Any, out_size: int, in_size: int) -> Any:
    """DENSE for a pattern with every entry (vdot, a full contraction): no index arrays to carry."""
    if dependency is not None and out_size * in_size > 0 and dependency.nnz == out_size * in_size:
        return DENSE
    return dependency


def _contraction(form_of: Callable[[tuple, dict], EinsumForm]) -> SparsityRule:
    """The rule of an op that is the einsum `form_of(inputs, params)` of its inputs (and constants)."""

    def dependencies(ans: Any, *inputs: Any, **params: Any) -> tuple:
        form = form_of(inputs, params)
        plan = form.plan
        operands = [_as_operand(x, s) for x, s in zip((*inputs, *form.constants), plan.shapes)]
        out = Unknown(plan.out_shape, np.float64)
        found = einsum_dependencies(plan.subscripts, out, *operands)[: len(inputs)]
        return tuple(_full_is_dense(d, out.size, int(np.size(o))) for d, o in zip(found, operands))

    def pairs(ans: Any, *inputs: Any, **params: Any) -> dict | None:
        """The elements of two inputs that meet in one term (r @ r pairs r_k with r_k only)."""
        form = form_of(inputs, params)
        operands = [_as_operand(x, s) for x, s in zip((*inputs, *form.constants), form.plan.shapes)]
        found = einsum_pairs(form.plan.subscripts, *operands)
        return None if found is None else {k: m for k, m in found.items() if max(k) < len(inputs)}

    return SparsityRule(dependencies, "multilinear", True, pairs)


def _form_of(op: str) -> Callable[[tuple, dict], EinsumForm]:
    return lambda inputs, params: einsum_form(op, inputs, params)


def _matmul(inputs: tuple, params: dict) -> EinsumForm:
    return _matmul_form(*(tuple(np.shape(x)) for x in inputs))


def _trace(ans: Any, x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> tuple:
    """Output element b (the batch of the other axes) depends on the diagonal of matrix b."""
    from scipy import sparse

    shape = np.shape(x)
    size = int(np.prod(shape, dtype=np.int64))
    diagonal = np.diagonal(np.arange(size, dtype=np.int64).reshape(shape), offset, axis1, axis2)
    batches, length = int(np.prod(diagonal.shape[:-1], dtype=np.int64)), diagonal.shape[-1]
    indptr = np.arange(batches + 1, dtype=np.int64) * length  # row b: the diagonal of matrix b
    return (sparse.csr_array((np.ones(diagonal.size), diagonal.ravel(), indptr), shape=(batches, size)),)


# fmt: off
defsparsity("matmul",    _contraction(_matmul))
for _op in ("dot", "vdot", "inner", "outer", "tensordot", "einsum", "kron", "cross", "multi_dot"):
    defsparsity(_op,     _contraction(_form_of(_op)))
defsparsity("trace",     SparsityRule(_trace, "linear", True))
# fmt: on
