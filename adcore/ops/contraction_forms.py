"""The einsum each bilinear contraction op computes (dot, vdot, inner, outer, tensordot, einsum,
kron, cross, multi_dot): its inputs reshaped, the subscripts, constants such as cross's
Levi-Civita symbol, the result reshaped. The rule tables differentiate all of these ops through
einsum's rules on their form; a test checks each form computes its op.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from adcore.core import shape_of
from adcore.errors import InvalidValueError
from adcore.ops.einsum_notation import LETTERS, EinsumPlan, einsum_plan


@dataclass(frozen=True)
class EinsumForm:
    """op(*inputs) == reshape(einsum(subscripts, *(inputs reshaped to `shapes`), *constants), out_shape)."""

    subscripts: str
    shapes: tuple[tuple[int, ...], ...]
    out_shape: tuple[int, ...]
    constants: tuple[np.ndarray, ...] = ()

    @property
    def plan(self) -> EinsumPlan:
        return einsum_plan(self.subscripts, self.shapes + tuple(c.shape for c in self.constants))


def einsum_form(op: str, inputs: tuple, params: dict) -> EinsumForm:
    """The einsum that op `op` (dot, vdot, inner, outer, tensordot, einsum, kron, cross,
    multi_dot) computes on inputs of these shapes with these params."""
    shapes = tuple(shape_of(x) for x in inputs)
    try:
        return _cached_form(op, shapes, tuple(sorted(params.items())))
    except TypeError:  # an unhashable param (tensordot's axes as lists)
        return FORMS[op](*shapes, **params)


@functools.lru_cache(maxsize=4096)
def _cached_form(op: str, shapes: tuple, params: tuple) -> EinsumForm:
    return FORMS[op](*shapes, **dict(params))


def _letters(n: int, start: int = 0) -> str:
    return LETTERS[start : start + n]


def _dot_form(a: tuple, b: tuple) -> EinsumForm:
    la = _letters(len(a))
    if not a or not b:  # a product with a scalar
        lb, out = _letters(len(b), len(a)), None
    elif len(b) == 1:
        lb, out = la[-1], la[:-1]
    else:  # over a's last axis and b's second-to-last
        lb = _letters(len(b) - 2, len(a)) + la[-1] + _letters(1, len(a) + len(b) - 2)
        out = la[:-1] + lb[:-2] + lb[-1]
    out = la + lb if out is None else out
    return EinsumForm(f"{la},{lb}->{out}", (a, b), _sized(out, (la, lb), (a, b)))


def _inner_form(a: tuple, b: tuple) -> EinsumForm:
    la, lb = _letters(len(a)), _letters(len(b), len(a))
    if a and b:  # over both last axes
        lb = lb[:-1] + la[-1]
        out = la[:-1] + lb[:-1]
    else:
        out = la + lb
    return EinsumForm(f"{la},{lb}->{out}", (a, b), _sized(out, (la, lb), (a, b)))


def _vdot_form(a: tuple, b: tuple) -> EinsumForm:
    return EinsumForm("i,i->", ((_size(a),), (_size(b),)), ())


def _outer_form(a: tuple, b: tuple) -> EinsumForm:
    return EinsumForm("i,j->ij", ((_size(a),), (_size(b),)), (_size(a), _size(b)))


def _tensordot_form(a: tuple, b: tuple, axes: Any = 2) -> EinsumForm:
    a_axes, b_axes = _tensordot_axes(a, b, axes)
    la = _letters(len(a))
    lb = list(_letters(len(b), len(a)))
    for i, j in zip(a_axes, b_axes):
        lb[j] = la[i]
    lb = "".join(lb)
    out = "".join(c for i, c in enumerate(la) if i not in a_axes) + "".join(
        c for j, c in enumerate(lb) if j not in b_axes
    )
    return EinsumForm(f"{la},{lb}->{out}", (a, b), _sized(out, (la, lb), (a, b)))


def _tensordot_axes(a: tuple, b: tuple, axes: Any) -> tuple[list[int], list[int]]:
    try:
        if isinstance(axes, (int, np.integer)):
            n = int(axes)
            if n < 0:
                raise ValueError
            a_axes, b_axes = list(range(len(a) - n, len(a))), list(range(n))
        else:
            a_axes, b_axes = ([x] if isinstance(x, (int, np.integer)) else list(x) for x in axes)
        a_axes = [int(i) % len(a) for i in a_axes]
        b_axes = [int(j) % len(b) for j in b_axes]
    except (TypeError, ValueError, ZeroDivisionError) as e:
        raise InvalidValueError(
            f"tensordot: axes={axes!r} must be a count n >= 0 or a pair of axis sequences of a and b"
        ) from e
    if len(a_axes) != len(b_axes) or any(a[i] != b[j] for i, j in zip(a_axes, b_axes)):
        raise InvalidValueError(f"tensordot: axes={axes!r} pair axes of different lengths ({a} and {b})")
    return a_axes, b_axes


def _einsum_form(*shapes: tuple, subscripts: str = "", optimize: Any = None) -> EinsumForm:
    return EinsumForm(subscripts, shapes, einsum_plan(subscripts, shapes).out_shape)


def _kron_form(a: tuple, b: tuple) -> EinsumForm:
    nd = max(len(a), len(b))
    a, b = (1,) * (nd - len(a)) + a, (1,) * (nd - len(b)) + b
    la, lb = _letters(nd), _letters(nd, nd)
    out = "".join(x + y for x, y in zip(la, lb))  # a's index is the slow one along each axis
    return EinsumForm(f"{la},{lb}->{out}", (a, b), tuple(m * n for m, n in zip(a, b)))


def _levi_civita() -> np.ndarray:
    eps = np.zeros((3, 3, 3), dtype=int)
    for i, j, k in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
        eps[i, j, k], eps[i, k, j] = 1, -1
    return eps


_EPS = _levi_civita()


def cross_form(
    a: tuple, b: tuple, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: Any = None
) -> EinsumForm:
    if axis is not None:
        axisa = axisb = axisc = axis
    axisa, axisb = _axis("cross", "axisa", axisa, len(a)), _axis("cross", "axisb", axisb, len(b))
    na, nb = a[axisa], b[axisb]
    if na not in (2, 3) or nb not in (2, 3):
        raise InvalidValueError(f"cross: the vectors have {na} and {nb} components: each must have 2 or 3")
    a_rest, b_rest = a[:axisa] + a[axisa + 1 :], b[:axisb] + b[axisb + 1 :]
    try:
        rest = np.broadcast_shapes(a_rest, b_rest)
    except ValueError as e:
        raise InvalidValueError(
            f"cross: the vectors' other axes {a_rest} and {b_rest} do not broadcast"
        ) from e
    labels = _letters(len(rest))
    la, lb = labels[len(rest) - len(a_rest) :], labels[len(rest) - len(b_rest) :]
    la, lb = la[:axisa] + "Y" + la[axisa:], lb[:axisb] + "Z" + lb[axisb:]
    if na == nb == 2:  # the z component of the 2-vectors' cross product: a scalar
        return EinsumForm(f"{la},{lb},YZ->{labels}", (a, b), rest, (_EPS[2, :2, :2],))
    c = _axis("cross", "axisc", axisc, len(rest) + 1)
    out = labels[:c] + "X" + labels[c:]
    return EinsumForm(f"{la},{lb},XYZ->{out}", (a, b), rest[:c] + (3,) + rest[c:], (_EPS[:, :na, :nb],))


def multi_dot_form(*shapes: tuple) -> EinsumForm:
    if len(shapes) < 2:
        raise InvalidValueError(f"multi_dot: needs at least two arrays, got {len(shapes)}")
    bad = [i for i, s in enumerate(shapes) if len(s) != 2 and not (len(s) == 1 and i in (0, len(shapes) - 1))]
    if bad:
        raise InvalidValueError(
            f"multi_dot: array {bad[0]} has {len(shapes[bad[0]])} axes: all must be matrices, "
            "the first and last may be vectors"
        )
    chain = _letters(len(shapes) + 1)
    terms = [chain[i : i + 2] for i in range(len(shapes))]
    if len(shapes[0]) == 1:
        terms[0] = terms[0][1]
    if len(shapes[-1]) == 1:
        terms[-1] = terms[-1][0]
    out = ("" if len(shapes[0]) == 1 else chain[0]) + ("" if len(shapes[-1]) == 1 else chain[-1])
    subscripts = ",".join(terms) + "->" + out
    return EinsumForm(subscripts, shapes, einsum_plan(subscripts, shapes).out_shape)


def _size(shape: tuple) -> int:
    return int(np.prod(shape, dtype=int))


def _sized(out: str, terms: tuple[str, ...], shapes: tuple) -> tuple[int, ...]:
    sizes = {label: n for term, shape in zip(terms, shapes) for label, n in zip(term, shape)}
    return tuple(sizes[label] for label in out)


def _axis(op: str, name: str, axis: Any, ndim: int) -> int:
    if not isinstance(axis, (int, np.integer)) or not -ndim <= axis < ndim:
        raise InvalidValueError(f"{op}: {name}={axis!r} is not an axis of an array with {ndim} axes")
    return int(axis) % ndim


FORMS: dict[str, Callable[..., EinsumForm]] = {
    "dot": _dot_form,
    "vdot": _vdot_form,
    "inner": _inner_form,
    "outer": _outer_form,
    "tensordot": _tensordot_form,
    "einsum": _einsum_form,
    "kron": _kron_form,
    "cross": cross_form,
    "multi_dot": multi_dot_form,
}
