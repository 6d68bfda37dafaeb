"""Contractions: dot, vdot, inner, outer, tensordot, einsum, kron, cross, multi_dot, trace, matrix_power.

All but trace and matrix_power are einsums in disguise: `contraction_forms.einsum_form(op, inputs,
params)` says which (each input reshaped, the subscripts, constants such as cross's Levi-Civita
symbol, the result reshaped), so the rule tables differentiate them all through einsum's rules:
the cotangent of an operand is an einsum of the output's cotangent with the other operands, the
tangent an einsum with the operand's tangent in its place (adcore/ops/einsum_notation.py writes
their subscripts). einsum's contraction order comes from opt_einsum, imported on first use.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from adcore.errors import InvalidValueError, LinearAlgebraError, UnsupportedFunctionError
from adcore.ops.contraction_forms import cross_form, multi_dot_form
from adcore.ops.einsum_notation import EinsumPlan, einsum_plan, from_sublists
from adcore.spec import Domain, OpSpec, Sample, fixed_samples

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
    if len(arrays) == 2 and _is_matrix_product(plan):  # NumPy's pairwise path: a batched matmul (recent
        return np.asarray(np.einsum(plan.subscripts, *arrays, optimize=True))  # NumPy); opt_einsum loops
    return np.asarray(_expression(plan.subscripts, plan.shapes)(*arrays))


@functools.lru_cache(maxsize=4096)
def _is_matrix_product(plan: EinsumPlan) -> bool:
    """Whether a two-operand einsum is a (batched) matrix product: a label summed between the two, and
    each with a label of its own in the output. Batched dots, outer and broadcast products are faster
    in NumPy's einsum loop than as matmuls of 1-wide matrices."""
    a, b = (set(term) for term in plan.terms)
    out = set(plan.output)
    return bool((a & b) - out) and bool((a - b) & out) and bool((b - a) & out)


_SMALL = 4096  # label-size products below which BLAS gains less than opt_einsum's call costs


@functools.lru_cache(maxsize=4096)
def _work(plan: EinsumPlan) -> int:
    """The number of products a plain loop over every label makes."""
    return int(np.prod([n for _, n in plan.sizes], dtype=float))


PAIRWISE = "adcore-pairwise"  # einsum's `optimize` in the rules' einsums: contract() (opt_einsum's order)


def _einsum(*operands: Any, subscripts: str = "", optimize: Any = False) -> np.ndarray:
    """np.einsum as the user called it (NumPy's `optimize`, default False: one loop), so the value is
    NumPy's bit for bit; the rules' einsums (optimize=PAIRWISE) contract in pairs, opt_einsum's order."""
    plan = einsum_plan(subscripts, tuple(np.shape(x) for x in operands))  # bad subscripts: typed errors
    if isinstance(optimize, str) and optimize == PAIRWISE:
        return contract(plan, list(operands))
    return np.asarray(np.einsum(subscripts, *operands, optimize=optimize))


def _cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: Any = None) -> np.ndarray:
    cross_form(np.shape(a), np.shape(b), axisa, axisb, axisc, axis)  # shapes and params, as typed errors
    # NumPy's own products (a contraction with the Levi-Civita symbol differs in the last bit);
    # 2-vectors are deprecated in NumPy 2 but still computed, and the op takes them
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return np.cross(a, b, axisa, axisb, axisc, axis)


def _refusing_bad_shapes(name: str, impl: Callable[..., Any]) -> Callable[..., Any]:
    """NumPy's impl, its ValueError for bad shapes or params an InvalidValueError naming the op."""

    @functools.wraps(impl)
    def call(*args: Any, **params: Any) -> Any:
        try:
            return impl(*args, **params)
        except InvalidValueError:
            raise
        except (ValueError, TypeError) as e:
            shapes = ", ".join(str(np.shape(x)) for x in args)
            error = LinearAlgebraError if isinstance(e, np.linalg.LinAlgError) else InvalidValueError
            raise error(f"{name}: inputs of shapes {shapes} with {params}: {e}") from e

    return call


def _trace(x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> np.ndarray:
    return np.trace(x, offset=offset, axis1=axis1, axis2=axis2)


def _multi_dot(*arrays: Any) -> np.ndarray:
    multi_dot_form(*(np.shape(x) for x in arrays))
    return np.linalg.multi_dot(arrays)


def _matrix_power(a: Any, n: int = 1) -> np.ndarray:
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise InvalidValueError(f"matrix_power: n={n!r} must be an integer")
    if np.ndim(a) < 2 or np.shape(a)[-1] != np.shape(a)[-2]:
        raise LinearAlgebraError(f"matrix_power: a has shape {np.shape(a)}, not a (stack of) square matrix")
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
    accepts_complex=True,
)
vdot = _numpy_op(
    "vdot",
    np.vdot,
    2,
    (np.vdot,),
    fixed_samples(*_pairs(((3,), (3,)), ((2, 3), (6,)), ((2, 2), (2, 2)))),
    doc="np.vdot: both flattened, then sum(conj(a) * b): conjugate-linear in a",
    accepts_complex=True,
)
inner = _numpy_op(
    "inner",
    np.inner,
    2,
    (np.inner,),
    fixed_samples(*_pairs(((), (2, 3)), ((3,), (3,)), ((2, 3), (3,)), ((2, 3), (4, 3)), ((2, 1, 3), (2, 3)))),
    doc="np.inner: over both last axes (a product with a scalar)",
    accepts_complex=True,
)
outer = _numpy_op(
    "outer",
    np.outer,
    2,
    (np.outer,),
    fixed_samples(*_pairs(((3,), (4,)), ((2, 2), (3,)), ((), (3,)))),
    doc="np.outer: both flattened",
    accepts_complex=True,
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
    accepts_complex=True,
)


class _SubscriptsFirst(OpSpec):
    """einsum's calls, NumPy's way: the subscripts first, then any number of operands."""

    def canonical_call(self, args: tuple, params: dict) -> tuple[tuple, dict]:
        if (
            len(args) == 1
            and isinstance(args[0], list)
            and args[0]
            and (isinstance(args[0][0], str) or from_sublists(tuple(args[0])) is not None)
        ):
            args = tuple(args[0])  # np.einsum's arguments as one list (ArrayTracer.__array_function__)
        sublists = from_sublists(tuple(args))
        if sublists is not None:  # einsum(a, [0, 1], b, [1, 2], [0, 2])
            args = (sublists[0], *sublists[1])
        if args and isinstance(args[0], str):
            args, params = args[1:], {**params, "subscripts": args[0]}
        if "subscripts" not in params:
            raise InvalidValueError(
                "einsum: no subscripts: call einsum('ij,jk->ik', a, b), or in the sublist form "
                "einsum(a, [0, 1], b, [1, 2], [0, 2])"
            )
        unknown = sorted(set(params) - set(self.params))
        if unknown:
            raise UnsupportedFunctionError(
                f"einsum(..., {unknown[0]}=...) is not supported by adcore op 'einsum', whose params are "
                f"{list(self.params)}; leave {unknown[0]!r} out."
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
        "(diagonals); the value is np.einsum's for the same `optimize` (NumPy's default False: one loop)"
    ),
    accepts_complex=True,
)
kron = _numpy_op(
    "kron",
    np.kron,
    2,
    (np.kron,),
    fixed_samples(*_pairs(((2, 2), (2, 3)), ((3,), (2,)), ((2,), (2, 3)), ((), (2,)))),
    doc="np.kron: the smaller ndim padded with leading axes of length 1",
    accepts_complex=True,
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
    accepts_complex=True,
)
multi_dot = OpSpec(
    "multi_dot",
    _refusing_bad_shapes("multi_dot", _multi_dot),
    variadic=True,
    numpy=(np.linalg.multi_dot,),
    samples=_multi_dot_samples,
    doc="np.linalg.multi_dot: a chain of matrices, the first and last may be vectors",
    accepts_complex=True,
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
    accepts_complex=True,
)
matrix_power = _numpy_op(
    "matrix_power",
    _matrix_power,
    1,
    (np.linalg.matrix_power,),
    _matrix_power_samples,
    params=("n",),
    doc="np.linalg.matrix_power: n >= 0 by repeated squaring, n < 0 the power of the inverse",
    accepts_complex=True,
)
