"""Sympy rules of adcore/ops/contractions.py.

The einsum-shaped ops (dot, vdot, inner, outer, tensordot, einsum, kron, cross, multi_dot) are
their einsum form (contraction_forms.einsum_form) on object arrays: each operand's diagonals taken,
laid along all the labels, multiplied, and each output entry one sympy Add of its products (not
NumPy's object einsum, which adds one term at a time: quadratic in sympy). trace adds a diagonal;
matrix_power multiplies matrices, and inverts each for n < 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore.extend import reduce_with
from adcore.ops.contraction_forms import einsum_form
from adcore.ops.contractions import power_program
from adcore.ops.einsum_notation import einsum_plan
from adcore_symbolic.sympy_rules.table import defsympy, sp


def sympy_einsum(subscripts: str, *operands: Any) -> Any:
    """np.einsum(subscripts, *operands) on object arrays of sympy expressions."""
    arrays = [np.asarray(x, dtype=object) for x in operands]
    plan = einsum_plan(subscripts, tuple(x.shape for x in arrays))
    summed = "".join(dict.fromkeys(c for term in plan.terms for c in term if c not in plan.output))
    labels = plan.output + summed
    sizes = dict(plan.sizes)
    grid: Any = 1
    for x, term, shape in zip(arrays, plan.terms, plan.shapes):
        x = x.reshape(shape)
        unique = "".join(dict.fromkeys(term))
        if unique != term:  # a repeated label: its diagonal (NumPy's einsum only moves entries here)
            x = np.einsum(f"{term}->{unique}", x)
        order = sorted(range(len(unique)), key=lambda a: labels.index(unique[a]))
        x = np.transpose(x, order)
        grid = grid * x.reshape([sizes[c] if c in unique else 1 for c in labels])
    grid = np.broadcast_to(np.asarray(grid, dtype=object), [sizes[c] for c in labels])
    if grid.size == 0:  # an empty output, or a sum of nothing: 0
        return np.zeros(plan.out_shape, dtype=int).astype(object)
    if summed:
        grid = reduce_with(sp.Add, grid, axis=tuple(range(len(plan.output), len(labels))))
    return grid[()] if grid.ndim == 0 else grid


def _einsum_shaped(op: str) -> Any:
    def rule(*inputs: Any, **params: Any) -> Any:
        form = einsum_form(op, inputs, params)
        operands = [np.reshape(np.asarray(x, dtype=object), s) for x, s in zip(inputs, form.shapes)]
        out = sympy_einsum(form.subscripts, *operands, *form.constants)
        return np.reshape(np.asarray(out, dtype=object), form.out_shape)

    return rule


def _trace(x, offset=0, axis1=0, axis2=1):
    diagonal = np.diagonal(np.asarray(x, dtype=object), offset=offset, axis1=axis1, axis2=axis2)
    return reduce_with(sp.Add, diagonal, axis=-1)


def _matrix_power(x, n=1):
    x = np.asarray(x, dtype=object)
    if n < 0:
        x = _inverses(x)
    if n == 0:
        return np.broadcast_to(np.eye(x.shape[-1], dtype=int).astype(object), x.shape).copy()
    program, result = power_program(abs(n))  # the products the impl makes: log n of them
    values = [x]
    for i, j in program:
        values.append(sympy_einsum("...ij,...jk->...ik", values[i], values[j]))
    return values[result]


def _inverses(x: np.ndarray) -> np.ndarray:
    out = np.empty(x.shape, dtype=object)
    for index in np.ndindex(x.shape[:-2]):
        out[index] = np.array(sp.Matrix(x[index].tolist()).inv().tolist(), dtype=object)
    return out


# fmt: off
for _op in ("dot", "vdot", "inner", "outer", "tensordot", "einsum", "kron", "cross", "multi_dot"):
    defsympy(_op, _einsum_shaped(_op))
defsympy("trace",        _trace)
defsympy("matrix_power", _matrix_power)
# fmt: on
