"""JVPs of adcore/ops/contractions.py.

The einsum-shaped ops (dot, vdot, inner, outer, tensordot, einsum, kron, cross, multi_dot) share
one rule: the op's einsum form (contraction_forms.einsum_form) with the input's batched tangent in the
input's place, a batch label leading it and the output. trace is linear: the trace of the
tangent. matrix_power's tangent runs forward through its products.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore.core import shape_of
from adcore.extend import lift
from adcore.ops import complex_parts as cp
from adcore.ops.contraction_forms import einsum_form
from adcore.ops.contractions import PAIRWISE, power_program
from adcore.ops.einsum_notation import tangent_subscripts
from adcore_forward.jvps.table import batch as _batch
from adcore_forward.jvps.table import defjvp, defjvp_variadic


def _shaped(x: Any, shape: tuple[int, ...]) -> Any:
    return x if shape_of(x) == shape else anp.reshape(x, shape)


def einsum_tangent(op: str, k: int, t: Any, ans: Any, inputs: tuple, params: dict) -> Any:
    """Input k's share of the output's tangent, for einsum-shaped op `op`."""
    form = einsum_form(op, inputs, params)
    plan = form.plan
    operands = [*inputs, *(c.astype(t.dtype) for c in form.constants)]
    shaped = [
        _shaped(t, t.shape[:1] + s) if i == k else _shaped(x, s)
        for i, (x, s) in enumerate(zip(operands, plan.shapes))
    ]
    share = anp.einsum(*shaped, subscripts=tangent_subscripts(plan, k), optimize=PAIRWISE)
    return _shaped(share, _batch(t, ans))


def _binary(op: str) -> tuple:
    def rule(k: int) -> Any:
        return lambda t, ans, a, b, **params: einsum_tangent(op, k, t, ans, (a, b), params)

    return rule(0), rule(1)


def _variadic(op: str) -> Any:
    return lambda k, t, ans, *xs, **params: einsum_tangent(op, k, t, ans, xs, params)


def _cross_rules() -> tuple:
    """cross is bilinear: the shares are cross(t, b) and cross(a, t), the tangent lifted under the
    output; for 3-vectors along the last axes, that is one cross of the batch (a third of the time
    of the einsum with the Levi-Civita tensor, whose tangent form has three operands). Else einsum."""
    share_a, share_b = _binary("cross")

    def plain(a: Any, b: Any, params: dict) -> bool:
        return not any(params.get(k, -1) != -1 for k in ("axisa", "axisb", "axisc")) and (
            params.get("axis") is None and np.shape(a)[-1:] == np.shape(b)[-1:] == (3,)
        )

    def rule_a(t, ans, a, b, **params):
        return anp.cross(lift(t, ans), b) if plain(a, b, params) else share_a(t, ans, a, b, **params)

    def rule_b(t, ans, a, b, **params):
        return anp.cross(a, lift(t, ans)) if plain(a, b, params) else share_b(t, ans, a, b, **params)

    return rule_a, rule_b


def _vdot_rules() -> tuple:
    """vdot(a, b) = sum(conj(a) * b), conjugate-linear in a: the tangents sum(conj(t) b) and
    sum(conj(a) t). On real inputs, dot's rules."""
    share_a, share_b = _binary("vdot")
    return (
        lambda t, ans, a, b, **params: share_a(cp.conj_if_complex(t), ans, a, b, **params),
        lambda t, ans, a, b, **params: share_b(t, ans, cp.conj_if_complex(a), b, **params),
    )


def _trace_jvp(t, ans, x, offset=0, axis1=0, axis2=1):
    return anp.trace(t, offset=offset, axis1=axis1 % x.ndim + 1, axis2=axis2 % x.ndim + 1)


def _power_tangent(t: Any, x: Any, n: int) -> Any:
    """The tangent of x^n (n >= 1) from x's batched tangent t, through binary powering's products."""
    program, result = power_program(n)
    values, tangents = [x], [t]
    for i, j in program:
        values.append(anp.matmul(values[i], values[j]))
        tangents.append(anp.matmul(tangents[i], values[j]) + anp.matmul(values[i], tangents[j]))
    return tangents[result]


def _matrix_power_jvp(t, ans, x, n=1):
    if n == 0:
        return np.zeros(_batch(t, ans), dtype=t.dtype)
    if n > 0:
        return _power_tangent(t, x, n)
    inverse = ans if n == -1 else anp.matrix_power(x, -1)
    return _power_tangent(-anp.matmul(inverse, anp.matmul(t, inverse)), inverse, -n)


# fmt: off
# --- contractions ---------------------------------------------------------------------------
defjvp("dot",          *_binary("dot"))
defjvp("vdot",         *_vdot_rules())
defjvp("inner",        *_binary("inner"))
defjvp("outer",        *_binary("outer"))
defjvp("tensordot",    *_binary("tensordot"))
defjvp("kron",         *_binary("kron"))
defjvp("cross",        *_cross_rules())
defjvp_variadic("einsum",    _variadic("einsum"))
defjvp_variadic("multi_dot", _variadic("multi_dot"))
defjvp("trace",        _trace_jvp)
defjvp("matrix_power", _matrix_power_jvp)
# fmt: on
