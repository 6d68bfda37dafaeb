"""VJPs of adcore/ops/contractions.py.

The einsum-shaped ops (dot, vdot, inner, outer, tensordot, einsum, kron, cross, multi_dot) share
one rule: the cotangent of an operand is an einsum of the output's cotangent with the other
operands (identities tie a repeated label's axes, ones spread it over a label only that operand
has), on the op's einsum form (contraction_forms.einsum_form). trace's cotangent is g on the diagonal;
matrix_power's runs backwards through its products.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore.core import shape_of
from adcore.ops import complex_parts as cp
from adcore.ops.contraction_forms import einsum_form
from adcore.ops.contractions import PAIRWISE, power_program
from adcore.ops.einsum_notation import cotangent_subscripts
from adcore_reverse.vjps.table import defvjp, defvjp_variadic


def _shaped(x: Any, shape: tuple[int, ...]) -> Any:
    return x if shape_of(x) == shape else anp.reshape(x, shape)


def _constant(kind: str, n: int, dtype: Any) -> np.ndarray:
    return np.eye(n, dtype=dtype) if kind == "eye" else np.ones(n, dtype=dtype)


def einsum_cotangent(op: str, k: int, g: Any, inputs: tuple, params: dict) -> Any:
    """The cotangent of input k of einsum-shaped op `op`, from the output's cotangent g."""
    form = einsum_form(op, inputs, params)
    plan = form.plan
    dtype = g.dtype
    operands = [*inputs, *(c.astype(dtype) for c in form.constants)]
    others = [_shaped(x, s) for i, (x, s) in enumerate(zip(operands, plan.shapes)) if i != k]
    subscripts, constants = cotangent_subscripts(plan, k)
    extra = [_constant(kind, n, dtype) for kind, n in constants]
    cotangent = anp.einsum(
        _shaped(g, plan.out_shape), *others, *extra, subscripts=subscripts, optimize=PAIRWISE
    )
    return _shaped(cotangent, shape_of(inputs[k]))


def _binary(op: str) -> tuple:
    def rule(k: int) -> Any:
        return lambda g, ans, a, b, **params: einsum_cotangent(op, k, g, (a, b), params)

    return rule(0), rule(1)


def _variadic(op: str) -> Any:
    return lambda k, g, ans, *xs, **params: einsum_cotangent(op, k, g, xs, params)


def _vdot_rules() -> tuple:
    """vdot(a, b) = sum(conj(a) * b), conjugate-linear in a: L(da) = sum(conj(da) b), so a's cotangent is
    conj(g b) (JAX's convention); b's is g conj(a). On real inputs, dot's rules."""
    share_a, share_b = _binary("vdot")
    return (
        lambda g, ans, a, b, **params: cp.conj_if_complex(share_a(g, ans, a, b, **params)),
        lambda g, ans, a, b, **params: share_b(g, ans, cp.conj_if_complex(a), b, **params),
    )


def _trace_vjp(g, ans, x, offset=0, axis1=0, axis2=1):
    a1, a2 = axis1 % x.ndim, axis2 % x.ndim
    diagonal = np.eye(x.shape[a1], x.shape[a2], k=offset, dtype=g.dtype)
    if a1 > a2:
        diagonal = diagonal.T
    place = [1] * x.ndim
    place[a1], place[a2] = x.shape[a1], x.shape[a2]
    return anp.expand_dims(g, (min(a1, a2), max(a1, a2))) * np.reshape(diagonal, place)


def _transposed(x: Any) -> Any:
    return anp.swapaxes(x, -1, -2)


def _power_cotangent(g: Any, x: Any, n: int) -> Any:
    """The cotangent of x in x^n (n >= 1), back through the products binary powering makes."""
    program, result = power_program(n)
    values = [x]
    for i, j in program:
        values.append(anp.matmul(values[i], values[j]))
    cotangents: list[Any] = [None] * len(values)
    cotangents[result] = g
    for m in range(len(values) - 1, 0, -1):
        c = cotangents[m]
        if c is None:
            continue
        i, j = program[m - 1]
        for index, share in (
            (i, anp.matmul(c, _transposed(values[j]))),
            (j, anp.matmul(_transposed(values[i]), c)),
        ):
            cotangents[index] = share if cotangents[index] is None else cotangents[index] + share
    return cotangents[0]


def _matrix_power_vjp(g, ans, x, n=1):
    if n == 0:
        return np.zeros(x.shape, dtype=g.dtype)
    if n > 0:
        return _power_cotangent(g, x, n)
    inverse = ans if n == -1 else anp.matrix_power(x, -1)
    c = _power_cotangent(g, inverse, -n)  # then through inv: d inv(x) = -inv(x) dx inv(x)
    return -anp.matmul(_transposed(inverse), anp.matmul(c, _transposed(inverse)))


# fmt: off
# --- contractions ---------------------------------------------------------------------------
defvjp("dot",          *_binary("dot"))
defvjp("vdot",         *_vdot_rules())
defvjp("inner",        *_binary("inner"))
defvjp("outer",        *_binary("outer"))
defvjp("tensordot",    *_binary("tensordot"))
defvjp("kron",         *_binary("kron"))
defvjp("cross",        *_binary("cross"))
defvjp_variadic("einsum",    _variadic("einsum"))
defvjp_variadic("multi_dot", _variadic("multi_dot"))
defvjp("trace",        _trace_vjp)
defvjp("matrix_power", _matrix_power_vjp)
# fmt: on
