"""Contractions: dot, vdot, inner, outer, tensordot, einsum, kron, cross, multi_dot, trace, matrix_power.

All but trace and matrix_power are einsums in disguise: `einsum_form(op, inputs, params)` says
which (each input reshaped, the subscripts, constants such as cross's Levi-Civita symbol, the
result reshaped), so the rule tables differentiate them all through einsum's rules: the cotangent
of an operand is an einsum of the output's cotangent with the other operands, the tangent an
einsum with the operand's tangent in its place (adcore/ops/einsum_notation.py writes their
subscripts). einsum's contraction order comes from opt_einsum, imported on first use.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from adcore.errors import InvalidValueError
from adcore.ops.einsum_notation import LETTERS, EinsumPlan, einsum_plan
from adcore.spec import Domain, OpSpec, Sample, fixed_samples

# --- einsum forms ------------------------------------------------------------------------------


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


def shape_of(x: Any) -> tuple[int, ...]:
    return tuple(getattr(x, "shape", np.shape(x)))


def einsum_form(op: str, inputs: tuple, params: dict) -> EinsumForm:
    """The einsum that op `op` (dot, vdot, inner, outer, tensordot, einsum, kron, cross,
    multi_dot) computes on inputs of these shapes with these params."""
    shapes = tuple(shape_of(x) for x in inputs)
    try:
        return _cached_form(op, shapes, tuple(sorted(params.items())))
    except TypeError:  # an unhashable param (tensordot's axes as lists)
        return _FORMS[op](*shapes, **params)


@functools.lru_cache(maxsize=4096)
def _cached_form(op: str, shapes: tuple, params: tuple) -> EinsumForm:
    return _FORMS[op](*shapes, **dict(params))


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


def _cross_form(
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


def _multi_dot_form(*shapes: tuple) -> EinsumForm:
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


_FORMS: dict[str, Callable[..., EinsumForm]] = {
    "dot": _dot_form,
    "vdot": _vdot_form,
    "inner": _inner_form,
    "outer": _outer_form,
    "tensordot": _tensordot_form,
    "einsum": _einsum_form,
    "kron": _kron_form,
    "cross": _cross_form,
    "multi_dot": _multi_dot_form,
}


# --- impls -------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def _expression(subscripts: str, shapes: tuple[tuple[int, ...], ...]) -> Any:
    """opt_einsum's compiled contraction (its order chosen once per subscripts and shapes)."""
    import opt_einsum  # a core dependency, imported late: `import adcore` stays light

    return opt_einsum.contract_expression(subscripts, *shapes, optimize="auto")


def contract(plan: EinsumPlan, operands: list) -> np.ndarray:
    """The canonical einsum on plain arrays, in the order opt_einsum chooses."""
    arrays = [np.reshape(x, s) for x, s in zip(operands, plan.shapes)]
    if len(arrays) <= 2 and _work(plan) <= _SMALL:  # one step, no order to choose: NumPy's loop,
        return np.asarray(np.einsum(plan.subscripts, *arrays))  # without opt_einsum's call overhead
    return np.asarray(_expression(plan.subscripts, plan.shapes)(*arrays))


_SMALL = 4096  # label-size products below which BLAS gains less than opt_einsum's call costs


@functools.lru_cache(maxsize=4096)
def _work(plan: EinsumPlan) -> int:
    """The number of products a plain loop over every label makes."""
    return int(np.prod([n for _, n in plan.sizes], dtype=float))


def _einsum(*operands: Any, subscripts: str = "", optimize: Any = None) -> np.ndarray:
    plan = einsum_plan(subscripts, tuple(np.shape(x) for x in operands))
    return contract(plan, list(operands))


def _cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: Any = None) -> np.ndarray:
    form = _cross_form(np.shape(a), np.shape(b), axisa, axisb, axisc, axis)
    dtype = np.result_type(a, b)
    out = contract(form.plan, [a, b, *(c.astype(dtype) for c in form.constants)])
    return np.reshape(out, form.out_shape)


def _refusing_bad_shapes(name: str, impl: Callable[..., Any]) -> Callable[..., Any]:
    """NumPy's impl, its ValueError for bad shapes or params an InvalidValueError naming the op."""

    @functools.wraps(impl)
    def call(*args: Any, **params: Any) -> Any:
        try:
            return impl(*args, **params)
        except InvalidValueError:
            raise
        except (ValueError, TypeError) as e:  # np.linalg.LinAlgError is a ValueError
            shapes = ", ".join(str(np.shape(x)) for x in args)
            raise InvalidValueError(f"{name}: inputs of shapes {shapes} with {params}: {e}") from e

    return call


def _trace(x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> np.ndarray:
    return np.trace(x, offset=offset, axis1=axis1, axis2=axis2)


def _multi_dot(*arrays: Any) -> np.ndarray:
    _multi_dot_form(*(np.shape(x) for x in arrays))
    return np.linalg.multi_dot(arrays)


def _matrix_power(a: Any, n: int = 1) -> np.ndarray:
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise InvalidValueError(f"matrix_power: n={n!r} must be an integer")
    if np.ndim(a) < 2 or np.shape(a)[-1] != np.shape(a)[-2]:
        raise InvalidValueError(f"matrix_power: a has shape {np.shape(a)}, not a (stack of) square matrix")
    return np.linalg.matrix_power(a, n)


def power_program(n: int) -> tuple[tuple[tuple[int, int], ...], int]:
    """matrix_power's products for n >= 1, as binary powering does them: value 0 is the matrix,
    each pair (i, j) of the program makes the next value, values[i] @ values[j]; the second
    item is the index of a^n among the values."""
    program: list[tuple[int, int]] = []
    base, result, count = 0, None, 1
    while True:
        if n & 1:
            if result is None:
                result = base
            else:
                program.append((result, base))
                result, count = count, count + 1
        n >>= 1
        if not n:
            return tuple(program), result
        program.append((base, base))
        base, count = count, count + 1


# --- samples -----------------------------------------------------------------------------------


def _pairs(*shapes: tuple, params: dict | None = None) -> list:
    return [(s, dict(params or {})) for s in shapes]


def _einsum_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    calls = (
        ("ij,jk->ik", ((2, 3), (3, 4))),
        ("ij,j->i", ((2, 3), (3,))),
        ("i,i->", ((3,), (3,))),
        ("ij,jk", ((2, 3), (3, 2))),  # implicit output
        ("ii->i", ((3, 3),)),  # a diagonal
        ("ii", ((3, 3),)),  # the trace
        ("iij->j", ((2, 2, 3),)),
        ("ij->ji", ((2, 3),)),
        ("ij->", ((2, 3),)),
        ("...ij,...jk->...ik", ((2, 1, 2, 3), (3, 3, 2))),  # broadcasting batch axes
        ("i...,...j", ((2, 3), (3, 2))),
        ("ij,j->ij", ((2, 1), (3,))),  # an axis of length 1 stretched
        ("ij,jk,kl->il", ((2, 3), (3, 4), (4, 2))),
        ("i,j,i->j", ((3,), (2,), (3,))),
        (",i->i", ((), (3,))),
        ("bij,bjk->bik", ((2, 2, 3), (2, 3, 2))),
        ("ij,ij,ij->i", ((2, 3), (2, 3), (2, 3))),
        ("ij,jk->ik", ((0, 3), (3, 2))),  # empty
    )
    return [
        Sample(tuple(_REAL.draw(rng, s, dtype) for s in shapes), {"subscripts": subscripts})
        for subscripts, shapes in calls
    ]


def _matrix_power_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    small = Domain(-0.7, 0.7)
    out = [Sample((small.draw(rng, (3, 3), dtype),), {"n": n}) for n in (0, 1, 2, 3, 5)]
    out.append(
        Sample((small.draw(rng, (2, 2), dtype),), {"n": 8})
    )  # 3x3 to the 8th is past symbolic's budget
    out.append(Sample((small.draw(rng, (2, 3, 3), dtype),), {"n": 3}))
    for n, size in ((-1, 3), (-2, 2), (-3, 2)):  # well conditioned: the identity plus a small matrix
        a = np.eye(size) + 0.3 * rng.uniform(-1, 1, (size, size))  # (symbolic's inverse of a 3x3 cubed
        out.append(Sample((a.astype(dtype),), {"n": n}))  # is past its work budget)
    return out


def _multi_dot_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    chains = (
        ((3,), (3, 4), (4,)),
        ((2, 3), (3, 4), (4, 2)),
        ((2, 3), (3, 4), (4, 5), (5, 2)),
        ((3,), (3, 2)),
    )
    return [Sample(tuple(_REAL.draw(rng, s, dtype) for s in shapes)) for shapes in chains]


_REAL = Domain()

# --- the ops -----------------------------------------------------------------------------------


def _numpy_op(name: str, impl: Callable[..., Any], nin: int, numpy: tuple, samples: Any, **kw: Any) -> OpSpec:
    return OpSpec(name, _refusing_bad_shapes(name, impl), nin=nin, numpy=numpy, samples=samples, **kw)


dot = _numpy_op(
    "dot",
    np.dot,
    2,
    (np.dot,),
    fixed_samples(
        *_pairs(
            ((), (3,)),
            ((2, 3), ()),
            ((3,), (3,)),
            ((2, 3), (3,)),
            ((3,), (3, 4)),
            ((2, 3), (3, 4)),
            ((2, 2, 3), (3,)),
            ((2, 3), (4, 3, 2)),
            ((0, 3), (3, 2)),
        )
    ),
    doc="np.dot: a product with a scalar, 1-d · 1-d, over a's last axis and b's second-to-last",
)
vdot = _numpy_op(
    "vdot",
    np.vdot,
    2,
    (np.vdot,),
    fixed_samples(*_pairs(((3,), (3,)), ((2, 3), (6,)), ((2, 2), (2, 2)))),
    doc="np.vdot on real arrays: both flattened, then their inner product",
)
inner = _numpy_op(
    "inner",
    np.inner,
    2,
    (np.inner,),
    fixed_samples(*_pairs(((), (2, 3)), ((3,), (3,)), ((2, 3), (3,)), ((2, 3), (4, 3)), ((2, 1, 3), (2, 3)))),
    doc="np.inner: over both last axes (a product with a scalar)",
)
outer = _numpy_op(
    "outer",
    np.outer,
    2,
    (np.outer,),
    fixed_samples(*_pairs(((3,), (4,)), ((2, 2), (3,)), ((), (3,)))),
    doc="np.outer: both flattened",
)
tensordot = _numpy_op(
    "tensordot",
    np.tensordot,
    2,
    (np.tensordot, np.linalg.tensordot),
    fixed_samples(
        (((2, 3, 4), (3, 4, 5)), {"axes": 2}),
        (((2, 3), (3, 4)), {"axes": 1}),
        (((2, 3), (4,)), {"axes": 0}),
        (((2, 3, 4), (4, 2)), {"axes": ([0, 2], [1, 0])}),
        (((3, 4), (4, 3)), {"axes": ([-1], [0])}),
        (((3, 4), (4, 3)), {"axes": (1, 0)}),
    ),
    params=("axes",),
    doc="np.tensordot: axes a count or a pair of axis sequences",
)


class _SubscriptsFirst(OpSpec):
    """einsum's calls, NumPy's way: the subscripts first, then any number of operands."""

    def canonical_call(self, args: tuple, params: dict) -> tuple[tuple, dict]:
        if args and isinstance(args[0], str):
            args, params = args[1:], {**params, "subscripts": args[0]}
        if "subscripts" not in params:
            raise InvalidValueError(
                "einsum: no subscripts: call einsum('ij,jk->ik', a, b) (the sublist form "
                "einsum(a, [0, 1], b, [1, 2]) is not supported)"
            )
        return tuple(args), dict(params)


einsum = _SubscriptsFirst(
    "einsum",
    _einsum,
    variadic=True,
    params=("subscripts", "optimize"),
    numpy=(np.einsum,),
    samples=_einsum_samples,
    doc=(
        "np.einsum(subscripts, *operands): explicit or implicit output, '...', repeated labels "
        "(diagonals); the contraction order is opt_einsum's, whatever `optimize` says"
    ),
)
kron = _numpy_op(
    "kron",
    np.kron,
    2,
    (np.kron,),
    fixed_samples(*_pairs(((2, 2), (2, 3)), ((3,), (2,)), ((2,), (2, 3)), ((), (2,)))),
    doc="np.kron: the smaller ndim padded with leading axes of length 1",
)
cross = OpSpec(
    "cross",
    _cross,
    nin=2,
    params=("axisa", "axisb", "axisc", "axis"),
    numpy=(np.cross, np.linalg.cross),
    samples=fixed_samples(
        *_pairs(((3,), (3,)), ((2, 3), (3,)), ((2,), (2,)), ((2,), (3,)), ((4, 1, 3), (2, 3))),
        (((3, 2), (2, 3)), {"axisa": 0, "axisb": 1, "axisc": 0}),
        (((2, 3), (2, 3)), {"axis": 0}),
    ),
    doc="np.cross of 3- and 2-vectors (a 2-vector's z is 0; two 2-vectors give the z component)",
)
multi_dot = OpSpec(
    "multi_dot",
    _refusing_bad_shapes("multi_dot", _multi_dot),
    variadic=True,
    numpy=(np.linalg.multi_dot,),
    samples=_multi_dot_samples,
    doc="np.linalg.multi_dot: a chain of matrices, the first and last may be vectors",
)
trace = _numpy_op(
    "trace",
    _trace,
    1,
    (np.trace,),
    fixed_samples(
        (((3, 3),), {}),
        (((3, 4),), {"offset": 1}),
        (((4, 3),), {"offset": -1}),
        (((2, 3, 3),), {"axis1": 1, "axis2": 2}),
        (((3, 2, 3),), {"offset": 1, "axis1": 2, "axis2": 0}),
        (((2, 2),), {"offset": 5}),  # an empty diagonal: 0
    ),
    params=("offset", "axis1", "axis2"),
    doc="np.trace: the sum of a diagonal (offset, axis1, axis2)",
)
matrix_power = _numpy_op(
    "matrix_power",
    _matrix_power,
    1,
    (np.linalg.matrix_power,),
    _matrix_power_samples,
    params=("n",),
    doc="np.linalg.matrix_power: n >= 0 by repeated squaring, n < 0 the power of the inverse",
)
