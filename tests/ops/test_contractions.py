"""adcore/ops/contractions.py: values against NumPy, derivatives against torch and finite differences on
every backend, NumPy-style calls on traced values, second derivatives, and the refusals."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import adcore
import adcore.numpy as anp
from adcore import InvalidValueError, LinearAlgebraError, UnsupportedFunctionError
from adcore.ops import contraction_forms, contractions
from adcore.ops.einsum_notation import einsum_plan

BACKENDS = ["reverse", "forward", "symbolic"]
OPS = [
    "dot",
    "vdot",
    "inner",
    "outer",
    "tensordot",
    "einsum",
    "kron",
    "cross",
    "multi_dot",
    "trace",
    "matrix_power",
]
rng = np.random.default_rng(17)


def numpy_reference(name: str, args: tuple, params: dict) -> np.ndarray:
    """What NumPy itself computes for a sample of op `name`."""
    if name == "einsum":
        return np.einsum(params["subscripts"], *args)
    if name == "multi_dot":
        return np.linalg.multi_dot(args)
    if name == "matrix_power":
        return np.linalg.matrix_power(*args, **params)
    with warnings.catch_warnings():  # np.cross of 2-vectors is deprecated in NumPy 2
        warnings.simplefilter("ignore", DeprecationWarning)
        return getattr(np, name)(*args, **params)


def samples(name: str) -> list:
    op = getattr(contractions, name)
    return [(op, s) for s in op.samples(np.random.default_rng(0), np.dtype(np.float64))]


ALL_SAMPLES = [
    pytest.param(op, s, id=f"{op.name}-{k}") for name in OPS for k, (op, s) in enumerate(samples(name))
]


@pytest.mark.parametrize("op, sample", ALL_SAMPLES)
def test_values_are_numpys(op, sample):
    expected = numpy_reference(op.name, sample.args, sample.params)
    got = op(*sample.args, **sample.params)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "op, sample", [p for p in ALL_SAMPLES if p.values[0].name in contraction_forms.FORMS]
)
def test_einsum_form_computes_the_op(op, sample):
    # the rules of every einsum-shaped op stand on its form: it must be the op
    form = contraction_forms.einsum_form(op.name, sample.args, sample.params)
    operands = [np.reshape(x, s) for x, s in zip(sample.args, form.shapes)] + list(form.constants)
    got = np.reshape(np.einsum(form.subscripts, *operands), form.out_shape)
    np.testing.assert_allclose(got, numpy_reference(op.name, sample.args, sample.params), atol=1e-12)


# --- derivatives against torch ------------------------------------------------------------------


def torch_jacobian(fn, *args):
    torch = pytest.importorskip("torch")
    inputs = tuple(torch.tensor(a, dtype=torch.float64) for a in args)
    jac = torch.autograd.functional.jacobian(fn, inputs)
    return [j.numpy() for j in jac]


def adcore_jacobians(fn, args, backend):
    argnums = tuple(range(len(args)))
    return adcore.jacobian(fn, argnums=argnums, backend=backend)(*args)


TORCH_CASES = [
    ("einsum ij,jk->ik", lambda a, b: anp.einsum("ij,jk->ik", a, b), "einsum", ((2, 3), (3, 4)), "ij,jk->ik"),
    ("einsum bij,bjk", lambda a, b: anp.einsum("bij,bjk", a, b), "einsum", ((2, 2, 3), (2, 3, 2)), "bij,bjk"),
    ("einsum ii->i", lambda a: anp.einsum("ii->i", a), "einsum", ((3, 3),), "ii->i"),
    ("einsum ii", lambda a: anp.einsum("ii", a), "einsum", ((3, 3),), "ii"),
    (
        "einsum ...ij,...j",
        lambda a, b: anp.einsum("...ij,...j->...i", a, b),
        "einsum",
        ((2, 2, 3), (3,)),
        "...ij,...j->...i",
    ),
    (
        "einsum i,j,i->j",
        lambda a, b, c: anp.einsum("i,j,i->j", a, b, c),
        "einsum",
        ((3,), (2,), (3,)),
        "i,j,i->j",
    ),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", TORCH_CASES, ids=[c[0] for c in TORCH_CASES])
def test_einsum_jacobians_are_torchs(case, backend):
    torch = pytest.importorskip("torch")
    _, fn, _, shapes, subscripts = case
    args = tuple(rng.standard_normal(s) for s in shapes)
    expected = torch_jacobian(lambda *xs: torch.einsum(subscripts, *xs), *args)
    for got, want in zip(adcore_jacobians(fn, args, backend), expected):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def _torch_ops(torch):
    return {
        "dot": ((3, 4), (4, 2), {}, lambda a, b: a @ b),
        "tensordot": (
            (2, 3, 4),
            (4, 3, 2),
            {"axes": ([1, 2], [1, 0])},
            lambda a, b: torch.tensordot(a, b, ([1, 2], [1, 0])),
        ),
        "kron": ((2, 3), (3, 2), {}, torch.kron),
        "outer": ((3,), (4,), {}, torch.outer),
        "inner": ((2, 3), (4, 3), {}, torch.inner),
        "cross": ((2, 3), (2, 3), {}, lambda a, b: torch.linalg.cross(a, b)),
        "vdot": ((2, 3), (6,), {}, lambda a, b: torch.dot(a.reshape(-1), b)),
    }


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ["dot", "tensordot", "kron", "outer", "inner", "cross", "vdot"])
def test_binary_contraction_jacobians_are_torchs(name, backend):
    torch = pytest.importorskip("torch")
    a_shape, b_shape, params, torch_fn = _torch_ops(torch)[name]
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    op = getattr(anp, name)
    got = adcore_jacobians(lambda x, y: op(x, y, **params), (a, b), backend)
    for g, want in zip(got, torch_jacobian(torch_fn, a, b)):
        np.testing.assert_allclose(g, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [0, 1, 2, 3, 6, 7, -1, -2, -3])
def test_matrix_power_jacobian_is_torchs(n, backend):
    torch = pytest.importorskip("torch")
    a = np.eye(3) + 0.3 * rng.uniform(-1, 1, (3, 3))
    if backend == "symbolic" and n < -2:  # a 3x3 inverse cubed is past symbolic's work budget: refused
        with pytest.raises(adcore.UnsupportedByBackendError, match="max_nodes"):
            adcore.jacobian(lambda x: anp.matrix_power(x, n), backend=backend)(a)
        return
    got = adcore.jacobian(lambda x: anp.matrix_power(x, n), backend=backend)(a)
    (want,) = torch_jacobian(lambda x: torch.linalg.matrix_power(x, n), a)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_trace_with_offset_and_axes_is_torchs(backend):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((3, 2, 4))
    got = adcore.jacobian(lambda v: anp.trace(v, offset=1, axis1=2, axis2=0), backend=backend)(x)
    (want,) = torch_jacobian(lambda v: torch.diagonal(v, offset=1, dim1=2, dim2=0).sum(-1), x)
    np.testing.assert_allclose(got, want, atol=1e-12)


# --- against finite differences, every sample --------------------------------------------------


@pytest.mark.parametrize("backend", ["reverse", "forward"])
@pytest.mark.parametrize("op, sample", ALL_SAMPLES)
def test_jacobians_match_finite_differences(op, sample, backend):
    argnums = tuple(range(len(sample.args)))

    def f(*xs):
        return op(*xs, **sample.params)

    got = adcore.jacobian(f, argnums=argnums, backend=backend)(*sample.args)
    if any(np.size(x) == 0 for x in sample.args):  # an empty input: empty Jacobians of NumPy's shapes
        out = np.shape(f(*sample.args))
        assert [g.shape for g in got] == [out + np.shape(x) for x in sample.args]
        assert all(g.size == 0 or not np.any(g) for g in got)
        return
    want = adcore.jacobian(f, argnums=argnums, backend="numeric")(*sample.args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)


# --- NumPy's own calls on traced values -------------------------------------------------------


A = rng.standard_normal((3, 4))
X = rng.standard_normal(4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_numpy_calls_on_traced_values(backend):
    # each differentiated once with the traced value first, once second, a plain array beside it
    calls = [
        (lambda a: np.sum(np.dot(a, X)), A, np.outer(np.ones(3), X)),
        (lambda x: np.sum(np.dot(A, x)), X, A.sum(0)),
        (lambda a: np.sum(np.einsum("ij,j->i", a, X)), A, np.outer(np.ones(3), X)),
        (lambda x: np.sum(np.einsum("ij,j->i", A, x)), X, A.sum(0)),
        (lambda x: np.einsum("i,i", x, x), X, 2 * X),
        (lambda x: np.sum(np.linalg.multi_dot([A.T, A, x])), X, (A.T @ A).sum(0)),
        (lambda x: np.tensordot(A, x, axes=1).sum(), X, A.sum(0)),
        (lambda x: np.vdot(x, X), X, X),
        (lambda x: np.inner(x, X), X, X),
        (lambda x: np.outer(x, X).sum(), X, np.full(4, X.sum())),
        (lambda a: np.trace(a), A, np.eye(3, 4)),
        (lambda a: np.kron(a, np.ones(2)).sum(), A, np.full((3, 4), 2.0)),
        (lambda x: np.cross(x[:3], X[1:]).sum(), X, np.r_[np.cross(X[1:], np.ones(3)), 0.0]),
        (lambda a: np.linalg.matrix_power(a[:, :3], 2).sum(), A, None),
    ]
    for f, x, expected in calls:
        got = adcore.grad(f, backend=backend)(x)
        if expected is None:
            expected = adcore.grad(f, backend="numeric")(x)
        np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_dot_method(backend):
    got = adcore.grad(lambda a: a.dot(X).sum(), backend=backend)(A)
    np.testing.assert_allclose(got, np.outer(np.ones(3), X))


def test_np_einsum_on_a_tracer_takes_the_optimize_keyword():
    got = adcore.grad(lambda x: np.einsum("i,i->", x, x, optimize=True))(X)
    np.testing.assert_allclose(got, 2 * X)


# --- second derivatives -----------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_hessian_of_a_quadratic_form(backend):
    m = rng.standard_normal((4, 4))
    hess = adcore.hessian(lambda x: anp.einsum("i,ij,j->", x, m, x), backend=backend)(X)
    np.testing.assert_allclose(hess, m + m.T, atol=1e-12)


@pytest.mark.parametrize(
    "outer_backend, inner_backend", [("reverse", "reverse"), ("forward", "forward"), ("forward", "reverse")]
)
def test_hessians_of_a_bilinear_form_by_every_nesting(outer_backend, inner_backend):
    # f(x, y) = x^T M y: d2f/dx dy = M, d2f/dx2 = 0
    m = rng.standard_normal((3, 4))
    y = rng.standard_normal(4)
    x = rng.standard_normal(3)
    inner = adcore.grad(lambda a, b: anp.dot(a, anp.dot(m, b)), argnums=0, backend=inner_backend)
    cross_term = adcore.jacobian(lambda b: inner(x, b), backend=outer_backend)(y)
    np.testing.assert_allclose(cross_term, m, atol=1e-12)
    same_term = adcore.jacobian(lambda a: inner(a, y), backend=outer_backend)(x)
    np.testing.assert_allclose(same_term, np.zeros((3, 3)), atol=1e-12)


@pytest.mark.parametrize("backend", ["reverse", "forward"])
@pytest.mark.parametrize(
    "fn",
    [
        lambda x: anp.sum(anp.einsum("ii->i", anp.outer(x, x)) ** 2),
        lambda x: anp.trace(anp.matrix_power(anp.outer(x, x) + np.eye(4), 3)),
        lambda x: anp.sum(anp.kron(x, x) ** 2),
        lambda x: anp.sum(anp.cross(x[:3], x[1:]) ** 2),
        lambda x: anp.sum(anp.tensordot(anp.outer(x, x), anp.outer(x, x), axes=2)),
        lambda x: anp.sum(anp.matrix_power(anp.outer(x, x) + 2 * np.eye(4), -2)),
    ],
    ids=["diagonal", "trace of a power", "kron", "cross", "tensordot", "negative power"],
)
def test_hessians_of_compositions_match_finite_differences(fn, backend):
    got = adcore.hessian(fn, backend=backend)(X)
    want = adcore.jacobian(adcore.grad(fn), backend="numeric")(X)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


# --- einsum's notation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "subscripts, shapes",
    [
        ("Ba,bA", ((2, 3), (4, 5))),  # implicit output in ASCII order: A, B, a, b
        ("i...,...j", ((2, 3), (3, 4))),
        ("...ii->...i", ((2, 3, 3),)),
        ("ij,j->ij", ((2, 1), (3,))),
        ("ij,ij->ij", ((1, 3), (2, 1))),
        ("", ((),)),
    ],
)
def test_einsum_notation_agrees_with_numpy(subscripts, shapes):
    args = [rng.standard_normal(s) for s in shapes]
    np.testing.assert_allclose(anp.einsum(subscripts, *args), np.einsum(subscripts, *args))
    assert einsum_plan(subscripts, shapes).out_shape == np.einsum(subscripts, *args).shape


# --- refusals ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "subscripts, shapes, says",
    [
        ("ij,jk->il", ((2, 3), (3, 4)), "'l' is in no input"),
        ("ij->ii", ((2, 2),), "more than once"),
        ("...i->i", ((2, 3),), "'...'"),
        ("ij,jk", ((2, 3),), "2 input term(s) for 1 operand(s)"),
        ("i-j", ((2, 3),), "'->'"),
        ("i1", ((2, 3),), "'1' is not a label"),
        ("ij,jk->ik", ((2, 3), (4, 5)), "label 'j' has lengths 3 and 4"),
        ("ii->i", ((2, 3),), "label 'i' repeats"),
        ("ijk->i", ((2, 3),), "names 3 axes, operand 0 has 2"),
        ("i->i->i", ((2,),), "'->'"),
    ],
)
def test_bad_subscripts_are_a_typed_error_naming_einsum_and_them(subscripts, shapes, says):
    args = [np.ones(s) for s in shapes]
    with pytest.raises(InvalidValueError, match="einsum") as raised:
        anp.einsum(subscripts, *args)
    assert repr(subscripts) in str(raised.value) and says in str(raised.value)
    # the same on a traced value
    with pytest.raises(InvalidValueError, match="einsum"):
        adcore.grad(lambda x: np.sum(np.einsum(subscripts, x, *args[1:])))(args[0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_einsum_keywords_it_does_not_take_are_refused_by_name(backend):
    with pytest.raises(UnsupportedFunctionError, match="dtype"):
        anp.einsum("i,i", X, X, dtype=np.float32)
    with pytest.raises(UnsupportedFunctionError, match=r"numpy.einsum\(\.\.\., dtype=\.\.\.\)"):
        adcore.grad(lambda x: np.einsum("i,i", x, x, dtype=np.float32), backend=backend)(X)


def test_the_sublist_form_of_einsum_is_numpys_and_a_bad_label_is_refused_by_name():
    a = np.arange(6.0).reshape(2, 3)
    assert np.array_equal(anp.einsum(a, [0, 1]), np.einsum(a, [0, 1]))
    assert np.array_equal(anp.einsum(a, [1, 0]), np.einsum(a, [1, 0]))  # implicit output: labels' order
    with pytest.raises(InvalidValueError, match="sublist label 60"):
        anp.einsum(a, [0, 60])
    with pytest.raises(InvalidValueError, match="operand 0's sublist"):
        anp.einsum(a, [0, "j"])
    assert np.array_equal(anp.einsum(a, [0, 1], [1]), a.sum(axis=0))  # the next call works


@pytest.mark.parametrize(
    "call, says",
    [
        (lambda: anp.dot(np.ones((2, 3)), np.ones((2, 3))), "dot"),
        (lambda: anp.inner(np.ones(3), np.ones(4)), "inner"),
        (lambda: anp.vdot(np.ones(3), np.ones(4)), "vdot"),
        (lambda: anp.tensordot(np.ones((2, 3)), np.ones((2, 3)), axes=1), "tensordot"),
        (lambda: anp.cross(np.ones(4), np.ones(3)), "cross"),
        (lambda: anp.cross(np.ones(3), np.ones(3), axisa=2), "axisa"),
        (lambda: anp.matrix_power(np.ones((2, 3)), 2), "matrix_power"),
        (lambda: anp.matrix_power(np.ones((2, 2)), 1.5), "n=1.5"),
        (lambda: anp.matrix_power(np.ones((2, 2)), -1), "matrix_power"),  # singular
        (lambda: anp.multi_dot([np.ones((2, 3)), np.ones((3, 3, 3)), np.ones(3)]), "multi_dot"),
        (lambda: anp.multi_dot([np.ones(3)]), "multi_dot"),
        (lambda: anp.trace(np.ones(3)), "trace"),
    ],
)
def test_bad_inputs_are_a_typed_error_naming_the_op(call, says):
    with pytest.raises(InvalidValueError, match=says):
        call()


@pytest.mark.parametrize(
    "a, n", [(np.ones((2, 2)), -1), (np.ones((2, 3)), 2)], ids=["singular", "not square"]
)
def test_matrix_power_of_a_bad_matrix_is_numpys_linalg_error_too(a, n):
    with pytest.raises(LinearAlgebraError, match="matrix_power"):
        anp.matrix_power(a, n)
    with pytest.raises(np.linalg.LinAlgError):  # what NumPy code catches
        adcore.grad(lambda x: anp.sum(anp.matrix_power(x, n)))(a)


def test_bad_input_on_a_traced_value_is_the_same_error():
    with pytest.raises(InvalidValueError, match="tensordot"):
        adcore.grad(lambda x: anp.sum(anp.tensordot(x, np.ones((2, 3)), axes=1)))(np.ones((2, 3)))


@pytest.mark.parametrize("optimize", [False, True, "greedy", "optimal"])
def test_einsum_of_three_operands_is_numpys_value_for_the_same_optimize(optimize):
    rng = np.random.default_rng(3)
    a, b, c = rng.normal(size=(7, 9)), rng.normal(size=(9, 11)), rng.normal(size=(11, 5))
    want = np.einsum("ij,jk,kl->il", a, b, c, optimize=optimize)

    def f(x):
        return np.einsum("ij,jk,kl->il", x, b, c, optimize=optimize)

    value, pullback = adcore.vjp(f, a)
    assert value.dtype == want.dtype and np.array_equal(value, want)  # bit for bit, NumPy's loop or path
    g = rng.normal(size=want.shape)
    np.testing.assert_allclose(pullback(g)[0], g @ (b @ c).T, rtol=1e-12)  # d/da of a (bc): g (bc)^T
    for backend in BACKENDS:
        jac = adcore.jacobian(lambda x: f(x).sum(), backend=backend)(a)
        np.testing.assert_allclose(jac, np.tile((b @ c).sum(axis=1), (7, 1)), rtol=1e-12)
