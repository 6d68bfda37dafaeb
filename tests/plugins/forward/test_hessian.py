"""adcore.hessian: the Jacobian (by `outer`) of the Jacobian (by `inner`), checked against
closed forms for every pairing of forward and reverse mode.

The default is forward over reverse; `backend=` sets both levels, `inner=`/`outer=`
override it. The result has shape f(...).shape + x.shape + x.shape, and with a tuple
argnums H[i][j] = d²f / d args[i] d args[j], of shape out.shape + xi.shape + xj.shape.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import adcore
import adcore.numpy as anp

BACKENDS = ["forward", "reverse"]
PAIRS = list(itertools.product(BACKENDS, repeat=2))  # (inner, outer)
PAIR_IDS = [f"{outer}-over-{inner}" for inner, outer in PAIRS]


# --- Rosenbrock -----------------------------------------------------------------------------------


def rosenbrock(v):
    return (1 - v[0]) ** 2 + 100 * (v[1] - v[0] ** 2) ** 2


def rosenbrock_hessian(v):
    x, y = float(v[0]), float(v[1])
    return np.array([[1200 * x**2 - 400 * y + 2, -400 * x], [-400 * x, 200.0]])


POINTS = [(1.0, 1.0), (-1.2, 1.0), (0.5, -0.3), (2.0, 3.0), (0.0, 0.0)]


@pytest.mark.parametrize("point", POINTS, ids=str)
@pytest.mark.parametrize("inner, outer", PAIRS, ids=PAIR_IDS)
def test_rosenbrock_for_every_inner_and_outer(inner, outer, point):
    v = np.array(point)
    hess = adcore.hessian(rosenbrock, inner=inner, outer=outer)(v)
    assert hess.shape == (2, 2) and hess.dtype == np.float64
    np.testing.assert_allclose(hess, rosenbrock_hessian(v), rtol=1e-13, atol=1e-12)


@pytest.mark.parametrize("point", POINTS, ids=str)
@pytest.mark.parametrize("backend", BACKENDS)
def test_rosenbrock_with_one_backend_for_both(backend, point):
    v = np.array(point)
    hess = adcore.hessian(rosenbrock, backend=backend)(v)
    np.testing.assert_allclose(hess, rosenbrock_hessian(v), rtol=1e-13, atol=1e-12)


@pytest.mark.parametrize("point", POINTS, ids=str)
def test_rosenbrock_by_default(point):
    v = np.array(point)
    np.testing.assert_allclose(adcore.hessian(rosenbrock)(v), rosenbrock_hessian(v), rtol=1e-13, atol=1e-12)


def test_rosenbrock_on_two_scalar_arguments():
    # the same Hessian with x and y as separate arguments: H[i][j] = d²f / dxi dxj
    def f(x, y):
        return (1 - x) ** 2 + 100 * (y - x**2) ** 2

    for inner, outer in PAIRS:
        hess = adcore.hessian(f, argnums=(0, 1), inner=inner, outer=outer)(-1.2, 1.0)
        expected = rosenbrock_hessian((-1.2, 1.0))
        np.testing.assert_allclose(np.array(hess, dtype=float), expected, rtol=1e-13)


# --- which backend computes which level -----------------------------------------------------------


@pytest.fixture
def calls(monkeypatch):
    """The backends' names in the order they are entered (outer first), by the contract method
    each builds its Jacobians from (Backend.builds)."""
    seen: list[str] = []
    for name in BACKENDS:
        be = adcore.get_backend(name)
        method = "value_and_jacobian" if be.builds == "jacobian" else be.builds
        original = getattr(be, method)

        def spy(*args, _name=name, _original=original, **kwargs):
            seen.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(be, method, spy)
    return seen


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        ({}, ["forward", "reverse"]),
        ({"backend": "forward"}, ["forward", "forward"]),
        ({"backend": "reverse"}, ["reverse", "reverse"]),
        ({"inner": "forward", "outer": "reverse"}, ["reverse", "forward"]),
        ({"backend": "reverse", "outer": "forward"}, ["forward", "reverse"]),
        ({"backend": "reverse", "inner": "forward"}, ["reverse", "forward"]),
        ({"backend": "forward", "inner": "reverse", "outer": "reverse"}, ["reverse", "reverse"]),
    ],
    ids=str,
)
def test_backend_inner_and_outer_pick_the_levels(calls, kwargs, expected):
    hess = adcore.hessian(rosenbrock, **kwargs)(np.array([0.5, -0.3]))
    assert calls == expected  # [outer, inner]: the outer derivative calls the inner one
    np.testing.assert_allclose(hess, rosenbrock_hessian((0.5, -0.3)), rtol=1e-13)


# --- a 50-D quadratic form --------------------------------------------------------------------------

N = 50
RNG = np.random.default_rng(7)
A = RNG.normal(size=(N, N))
B = RNG.normal(size=N)
X50 = RNG.normal(size=N)


def quadratic(x):
    return 0.5 * (x @ (A @ x)) + B @ x


def test_quadratic_form_matrix_is_not_symmetric():
    assert not np.allclose(A, A.T)


@pytest.mark.parametrize("inner, outer", PAIRS, ids=PAIR_IDS)
def test_quadratic_form_hessian_is_the_symmetric_part(inner, outer):
    hess = adcore.hessian(quadratic, inner=inner, outer=outer)(X50)
    assert hess.shape == (N, N)
    np.testing.assert_allclose(hess, (A + A.T) / 2, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("inner, outer", PAIRS, ids=PAIR_IDS)
def test_quadratic_form_hessian_does_not_depend_on_the_point(inner, outer):
    h = adcore.hessian(quadratic, inner=inner, outer=outer)
    np.testing.assert_allclose(h(X50), h(np.zeros(N)), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(h(X50), h(100 * X50), rtol=1e-12, atol=1e-12)


def test_quadratic_form_through_numpy_names():
    def f(x):
        return 0.5 * anp.sum(x * anp.matmul(A, x)) + anp.sum(B * x)

    np.testing.assert_allclose(adcore.hessian(f)(X50), (A + A.T) / 2, rtol=1e-13, atol=1e-13)


# --- non-scalar functions -------------------------------------------------------------------------


def vector_valued(x):
    # (n,) -> (n,): f_k = x_k³ + sin(x_0 x_k)
    return x**3 + anp.sin(x[0] * x)


def vector_valued_hessian(x):
    n = x.size
    h = np.zeros((n, n, n))
    for k in range(n):
        s = np.sin(x[0] * x[k])
        h[k, k, k] += 6 * x[k]
        # d²/dxi dxj sin(x0 xk): the gradient of x0 xk is e_k x0 + e_0 xk
        g = np.zeros(n)
        g[k] += x[0]
        g[0] += x[k]
        h[k] -= s * np.outer(g, g)
        second = np.zeros((n, n))  # Hessian of x0 xk
        second[0, k] += 1
        second[k, 0] += 1
        h[k] += np.cos(x[0] * x[k]) * second
    return h


def matrix_valued(x):
    # (n,) -> (2, n): rows x² · x_0 and exp(x) · sum(x)
    return anp.stack([x**2 * x[0], anp.exp(x) * anp.sum(x)])


@pytest.mark.parametrize("inner, outer", PAIRS, ids=PAIR_IDS)
def test_vector_valued_hessian_closed_form(inner, outer):
    x = np.array([0.7, -1.1, 2.0, 0.3])
    hess = adcore.hessian(vector_valued, inner=inner, outer=outer)(x)
    assert hess.shape == (4, 4, 4)
    np.testing.assert_allclose(hess, vector_valued_hessian(x), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("inner, outer", PAIRS, ids=PAIR_IDS)
@pytest.mark.parametrize(
    "f, x", [(vector_valued, np.array([0.7, -1.1, 2.0])), (matrix_valued, np.array([0.2, -0.5, 1.3]))]
)
def test_non_scalar_hessian_stacks_the_per_output_hessians(inner, outer, f, x):
    out_shape = np.shape(f(x))
    hess = adcore.hessian(f, inner=inner, outer=outer)(x)
    assert hess.shape == out_shape + x.shape + x.shape
    for idx in np.ndindex(*out_shape):
        h_idx = adcore.hessian(lambda v, idx=idx: f(v)[idx], inner=inner, outer=outer)(x)
        assert h_idx.shape == x.shape + x.shape
        np.testing.assert_allclose(hess[idx], h_idx, rtol=1e-14, atol=1e-14)
        np.testing.assert_allclose(h_idx, h_idx.T, rtol=1e-13, atol=1e-13)


def test_matrix_input_and_output_shape():
    # (2, 3) -> (3,): column sums of squares, H[k] = 2 on the diagonal entries of column k
    x = RNG.normal(size=(2, 3))
    hess = adcore.hessian(lambda m: anp.sum(m**2, axis=0))(x)
    assert hess.shape == (3, 2, 3, 2, 3)
    expected = np.zeros((3, 2, 3, 2, 3))
    for k in range(3):
        for i in range(2):
            expected[k, i, k, i, k] = 2.0
    np.testing.assert_array_equal(hess, expected)


# --- tuple argnums ----------------------------------------------------------------------------------


def mixed(x, y):
    # sum over the broadcast (x: (n,), y: (m, n)) of x_j² y_kj
    return anp.sum(x**2 * y)


def mixed_hessian(x, y):
    m, n = y.shape
    hxx = np.diag(2 * y.sum(axis=0))
    hxy = np.zeros((n, m, n))
    for j in range(n):
        hxy[j, :, j] = 2 * x[j]
    hyx = np.transpose(hxy, (1, 2, 0))
    hyy = np.zeros((m, n, m, n))
    return ((hxx, hxy), (hyx, hyy))


def product_of_sums(x, y):
    # sum(sin x) · sum(y³), x: (2,), y: (3, 1)
    return anp.sum(anp.sin(x)) * anp.sum(y**3)


def product_of_sums_hessian(x, y):
    s, c = np.sum(np.sin(x)), np.sum(y**3)
    hxx = np.diag(-np.sin(x)) * c
    hxy = np.cos(x)[:, None, None] * (3 * y**2)[None]
    hyx = np.transpose(hxy, (1, 2, 0))
    hyy = np.diag(6 * y.ravel()).reshape(3, 1, 3, 1) * s
    return ((hxx, hxy), (hyx, hyy))


MIXED_CASES = [
    ("x²y, scalars", mixed, mixed_hessian, np.array([1.5]), np.array([[-2.0]])),
    ("x²y, (3,) and (2, 3)", mixed, mixed_hessian, np.array([0.5, -1.0, 2.0]), RNG.normal(size=(2, 3))),
    (
        "sin·cube, (2,) and (3, 1)",
        product_of_sums,
        product_of_sums_hessian,
        np.array([0.3, -1.2]),
        RNG.normal(size=(3, 1)),
    ),
]


@pytest.mark.parametrize("inner, outer", PAIRS, ids=PAIR_IDS)
@pytest.mark.parametrize("name, f, expected, x, y", MIXED_CASES, ids=[c[0] for c in MIXED_CASES])
def test_tuple_argnums_gives_every_mixed_block(name, f, expected, x, y, inner, outer):
    hess = adcore.hessian(f, argnums=(0, 1), inner=inner, outer=outer)(x, y)
    assert len(hess) == 2 and all(len(row) == 2 for row in hess)
    shapes = (x.shape, y.shape)
    want = expected(x, y)
    for i in range(2):
        for j in range(2):
            assert hess[i][j].shape == shapes[i] + shapes[j]
            np.testing.assert_allclose(hess[i][j], want[i][j], rtol=1e-13, atol=1e-13)
    # symmetry of the mixed partials: H[0][1] and H[1][0] are transposes of each other
    np.testing.assert_allclose(
        hess[0][1], np.moveaxis(hess[1][0], list(range(y.ndim)), list(range(x.ndim, x.ndim + y.ndim)))
    )


def test_tuple_argnums_leaves_out_other_arguments():
    # f(a, x, y) with argnums (1, 2): a is a constant, H is the one of x and y
    x, y = np.array([0.3, -1.2]), RNG.normal(size=(3, 1))
    hess = adcore.hessian(lambda a, x, y: a * product_of_sums(x, y), argnums=(1, 2))(2.0, x, y)
    want = product_of_sums_hessian(x, y)
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(hess[i][j], 2.0 * want[i][j], rtol=1e-13, atol=1e-13)


def test_single_argnum_other_than_zero():
    x, y = np.array([0.5, -1.0, 2.0]), RNG.normal(size=(2, 3))
    hxx = adcore.hessian(mixed, argnums=0)(x, y)
    hyy = adcore.hessian(mixed, argnums=1)(x, y)
    np.testing.assert_allclose(hxx, mixed_hessian(x, y)[0][0], rtol=1e-14)
    np.testing.assert_array_equal(hyy, np.zeros((2, 3, 2, 3)))


# --- dtypes and errors ----------------------------------------------------------------------------


@pytest.mark.parametrize("inner, outer", PAIRS, ids=PAIR_IDS)
def test_float32_in_float32_out(inner, outer):
    v = np.array([-1.2, 1.0], dtype=np.float32)
    hess = adcore.hessian(rosenbrock, inner=inner, outer=outer)(v)
    assert hess.dtype == np.float32
    np.testing.assert_allclose(hess, rosenbrock_hessian(v), rtol=1e-5)


@pytest.mark.parametrize("inner, outer", PAIRS, ids=PAIR_IDS)
def test_float32_in_float32_out_with_tuple_argnums(inner, outer):
    x = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    y = np.array([[0.1, 0.2, -0.3], [1.0, 2.0, 3.0]], dtype=np.float32)
    hess = adcore.hessian(mixed, argnums=(0, 1), inner=inner, outer=outer)(x, y)
    want = mixed_hessian(x.astype(float), y.astype(float))
    for i in range(2):
        for j in range(2):
            assert hess[i][j].dtype == np.float32
            np.testing.assert_allclose(hess[i][j], want[i][j], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kwargs", [{"backend": "nope"}, {"inner": "nope"}, {"outer": "nope"}], ids=str)
def test_unknown_backend_raises_when_the_hessian_is_created(kwargs):
    def never_called(x):
        raise AssertionError("f must not run")

    with pytest.raises(adcore.UnknownBackendError, match="nope"):
        adcore.hessian(never_called, **kwargs)
