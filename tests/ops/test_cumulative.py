"""The cumulative and ordering ops of issue 17 (adcore/ops/cumulative.py): cumsum, cumprod, diff,
sort, and argsort/argmax/argmin as plain indices. Derivatives against exact Jacobians, closed forms
(cumprod with zeros) and torch on every backend, ties in sort, second order; the refusals."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import adcore
import adcore.numpy as anp
from adcore.errors import InvalidValueError, UnsupportedFunctionError

BACKENDS = ["reverse", "forward", "symbolic", "numeric"]
RULE_BACKENDS = ["reverse", "forward", "symbolic"]
RNG = np.random.default_rng(17)
A = RNG.normal(size=(3, 4))
B = RNG.normal(size=(2, 3, 2))


def jacobian(f, backend, x):
    return adcore.jacobian(f, backend=backend)(x)


def exact_jacobian(f, x: np.ndarray) -> np.ndarray:
    """The Jacobian of a linear map: f of each unit vector."""
    columns = [np.asarray(f(e.reshape(x.shape))) for e in np.eye(x.size)]
    return np.stack(columns, axis=-1).reshape(np.shape(columns[0]) + x.shape)


LINEAR = [
    ("cumsum flat", lambda x: np.cumsum(x), A),
    ("cumsum axis", lambda x: np.cumsum(x, axis=1), A),
    ("cumsum axis -3", lambda x: np.cumsum(x, axis=-3), B),
    ("diff", lambda x: np.diff(x), A),
    ("diff n=2 axis 0", lambda x: np.diff(x, n=2, axis=0), A),
    ("diff n=3 axis 1", lambda x: np.diff(x, 3, 1), B),
    ("diff n=0", lambda x: np.diff(x, n=0), A),
    ("diff prepend append", lambda x: np.diff(x, n=2, axis=1, prepend=0.0, append=np.zeros((3, 2))), A),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name, f, x", LINEAR, ids=[c[0] for c in LINEAR])
def test_linear_ops_have_the_exact_jacobian(backend, name, f, x):
    tol = {"atol": 1e-7} if backend == "numeric" else {"atol": 0}
    np.testing.assert_allclose(jacobian(f, backend, x), exact_jacobian(f, x), **tol)


@pytest.mark.parametrize("backend", BACKENDS)
def test_diff_with_constant_ends_matches_numpy(backend):
    # prepend/append constants add to the value but not to the derivative
    f = lambda x: np.diff(x, prepend=np.array([1.5]), append=-2.0)  # noqa: E731
    v = RNG.normal(size=4)
    np.testing.assert_allclose(
        adcore.jacobian(f, backend=backend)(v),
        exact_jacobian(lambda x: np.diff(x, prepend=0.0, append=0.0), v),
        atol=1e-7,
    )


# n at least the length along the axis (prepend and append counted): np.diff's output is empty there
EMPTY_DIFFS = [
    ("length-1 axis", np.array([[1.0], [2.5]]), {"axis": 1}),
    ("length-1 vector", np.array([3.0]), {}),
    ("n = size", np.array([1.0, 4.0, 2.0]), {"n": 3}),
    ("n > size", np.array([[1.0, 4.0], [2.0, -1.0]]), {"n": 5, "axis": 0}),
    ("n = size with ends", np.array([1.0, 4.0]), {"n": 4, "prepend": 0.5, "append": -1.0}),
]


@pytest.mark.parametrize("x, params", [c[1:] for c in EMPTY_DIFFS], ids=[c[0] for c in EMPTY_DIFFS])
def test_the_cotangent_of_an_empty_diff_is_the_inputs_shaped_zero(x, params):
    out, vjp_fn = adcore.vjp(lambda v: np.diff(v, **params), x)
    assert out.size == 0
    (ct,) = vjp_fn(np.zeros_like(out))
    assert ct.shape == x.shape and ct.dtype == x.dtype
    np.testing.assert_array_equal(ct, np.zeros_like(x))
    (ct,) = adcore.vjp(lambda v: np.diff(v, axis=0), x)[1](np.ones((x.shape[0] - 1,) + x.shape[1:]))
    np.testing.assert_array_equal(
        ct, exact_jacobian(lambda v: np.diff(v, axis=0), x).sum(axis=tuple(range(x.ndim)))
    )


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("x, params", [c[1:] for c in EMPTY_DIFFS], ids=[c[0] for c in EMPTY_DIFFS])
def test_an_empty_diff_adds_nothing_to_the_gradient_on_every_backend(backend, x, params):
    # sum(x**2) + sum(diff(x)): the empty sum is the constant 0, so the gradient is 2 x
    def f(v):
        return anp.sum(v**2) + anp.sum(np.diff(v, **params))

    tol = {"rtol": 1e-7} if backend == "numeric" else {"rtol": 0}
    np.testing.assert_allclose(adcore.grad(f, backend=backend)(x), 2 * x, **tol)
    jac = adcore.jacobian(lambda v: np.diff(v, **params), backend=backend)(x)
    assert jac.shape == np.diff(x, **params).shape + x.shape
    np.testing.assert_allclose(adcore.grad(f, backend=backend)(x + 1), 2 * (x + 1), **tol)  # the next call


def _cumprod_jacobian(x: np.ndarray) -> np.ndarray:
    """d cumprod(x)_k / d x_i = the product of x_0..x_k without x_i (i <= k), written out."""
    n = x.size
    jac = np.zeros((n, n))
    for k in range(n):
        for i in range(k + 1):
            jac[k, i] = np.prod(np.delete(x[: k + 1], i))
    return jac


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "x",
    [np.array([0.5, -1.5, 2.0, 0.75]), np.array([0.5, 0.0, 2.0, 3.0]), np.array([0.0, 2.0, 0.0, 3.0, 1.5])],
    ids=["no zero", "one zero", "two zeros"],
)
def test_cumprod_is_exact_with_zeros(backend, x):
    tol = {"atol": 1e-7} if backend == "numeric" else {"atol": 1e-15}
    np.testing.assert_allclose(jacobian(lambda v: np.cumprod(v), backend, x), _cumprod_jacobian(x), **tol)


@pytest.mark.parametrize("backend", ["reverse", "forward", "symbolic"])
def test_cumprod_second_derivative_with_zeros(backend):
    # sum(cumprod(x)) is a polynomial: its Hessian by sympy's exact differentiation is the truth
    x = np.array([[0.0, 2.0, 0.0, 3.0], [1.0, 0.0, -1.0, 2.0]])
    f = lambda v: anp.sum(np.cumprod(v, axis=1) * np.arange(1.0, 5.0))  # noqa: E731
    expected = np.zeros((2, 4, 2, 4))
    for r in range(2):
        for i in range(4):
            for j in range(4):
                if i != j:  # d2 / dx_i dx_j of sum_k w_k prod_{m<=k} x_m: products without x_i and x_j
                    expected[r, i, r, j] = sum(
                        (k + 1) * np.prod(np.delete(x[r, : k + 1], [i, j])) for k in range(max(i, j), 4)
                    )
    np.testing.assert_allclose(adcore.hessian(f, backend=backend)(x), expected, atol=1e-12)


@pytest.mark.parametrize(
    "outer, inner", [("reverse", "reverse"), ("forward", "forward"), ("reverse", "forward")]
)
def test_cumprod_with_zeros_nests_to_third_order(outer, inner):
    # cumprod(x)[-1] is x0 x1 x2 x3: at (0, 0, 2, 0), d3 / dx0 dx1 dx3 = x2 = 2, every other third 0
    x = np.array([0.0, 0.0, 2.0, 0.0])
    f = lambda v: np.cumprod(v)[-1]  # noqa: E731
    third = adcore.jacobian(adcore.jacobian(adcore.grad(f, backend=inner), backend=outer), backend=outer)(x)
    expected = np.zeros((4, 4, 4))
    for i, j, k in itertools.permutations([0, 1, 3]):
        expected[i, j, k] = 2.0
    np.testing.assert_array_equal(third, expected)


def test_cumsum_cumprod_diff_against_torch():
    torch = pytest.importorskip("torch")
    x = RNG.uniform(0.5, 1.5, size=(3, 4))
    cot = RNG.normal(size=(3, 4))
    t = torch.tensor(x, requires_grad=True)
    out = torch.cumsum(t, 0) * torch.tensor(cot) + torch.cumprod(t, 1) ** 2
    (out.sum() + (torch.diff(t, n=2, dim=1) ** 3).sum()).backward()

    def f(v):
        out = np.cumsum(v, 0) * cot + np.cumprod(v, 1) ** 2
        return anp.sum(out) + anp.sum(np.diff(v, n=2, axis=1) ** 3)

    for backend in RULE_BACKENDS:
        np.testing.assert_allclose(adcore.grad(f, backend=backend)(x), t.grad.numpy(), rtol=1e-12)


# --- sort -------------------------------------------------------------------------------------


def test_sort_against_torch():
    torch = pytest.importorskip("torch")
    cot = RNG.normal(size=B.shape)
    t = torch.tensor(B, requires_grad=True)
    (torch.sort(t, dim=1).values * torch.tensor(cot)).sum().backward()
    for backend in RULE_BACKENDS:
        g = adcore.grad(lambda v: anp.sum(np.sort(v, axis=1) * cot), backend=backend)(B)
        np.testing.assert_array_equal(g, t.grad.numpy())


@pytest.mark.parametrize("backend", BACKENDS)
def test_sort_jacobian_is_the_permutation(backend):
    x = np.array([0.3, -1.0, 2.0, 0.9])
    perm = np.eye(4)[np.argsort(x)]
    np.testing.assert_allclose(jacobian(lambda v: np.sort(v), backend, x), perm, atol=1e-7)
    flat = jacobian(lambda v: np.sort(v, axis=None), backend, A)
    np.testing.assert_allclose(flat.reshape(12, 12), np.eye(12)[np.argsort(A, axis=None)], atol=1e-7)


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_sort_ties_take_the_cotangent_of_their_own_slot(backend):
    # 2, 1, 2: slot 0 is x1, slots 1 and 2 are x0 and x2 in their order (the stable sort)
    x = np.array([2.0, 1.0, 2.0])
    np.testing.assert_array_equal(jacobian(lambda v: np.sort(v), backend, x), np.eye(3)[[1, 0, 2]])


@pytest.mark.parametrize("backend", ["reverse", "forward", "symbolic"])
def test_sort_second_derivative(backend):
    # sum(w * sort(x)**2): the Hessian is diagonal, 2 w at each element's slot
    x = np.array([0.3, -1.0, 2.0, 0.9])
    w = np.array([1.0, 2.0, 3.0, 4.0])
    hessian = adcore.hessian(lambda v: anp.sum(w * np.sort(v) ** 2), backend=backend)(x)
    np.testing.assert_allclose(hessian, np.diag(2 * w[np.argsort(np.argsort(x))]), atol=1e-12)


# --- indices: no derivative -------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_argsort_argmax_argmin_give_plain_indices(backend):
    seen = {}

    def f(v):
        seen["argsort"] = np.argsort(v, axis=1)
        seen["method"] = v.argsort(axis=None)
        seen["argmax"] = np.argmax(v, axis=0)
        seen["argmin"] = v.argmin()
        return anp.sum(v[np.arange(3), seen["argmax"][:3]])

    g = adcore.grad(f, backend=backend)(A)
    assert all(type(v) is np.ndarray or isinstance(v, np.integer) for v in seen.values())
    np.testing.assert_array_equal(seen["argsort"], np.argsort(A, axis=1))
    np.testing.assert_array_equal(seen["method"], np.argsort(A, axis=None))
    assert seen["argmin"] == A.argmin()
    expected = np.zeros_like(A)
    expected[np.arange(3), A.argmax(axis=0)[:3]] = 1
    np.testing.assert_array_equal(g, expected)


def test_int_dtype_and_in_place_sort_are_refused():
    with pytest.raises(InvalidValueError, match="op 'cumprod': dtype=int64"):
        adcore.grad(lambda v: anp.sum(np.cumprod(v, dtype=np.int64)))(A)
    with pytest.raises(UnsupportedFunctionError, match="np.sort"):
        adcore.grad(lambda v: (v.sort(), anp.sum(v))[1])(A)


# --- a program: discounted returns by cumsum --------------------------------------------------


def discounted_returns(rewards, gamma: float):
    """G_t = sum_{k >= t} gamma^(k - t) r_k, plain NumPy: a reversed cumsum of discounted rewards."""
    scale = gamma ** np.arange(rewards.shape[-1])
    return np.cumsum((rewards * scale)[..., ::-1], axis=-1)[..., ::-1] / scale


@pytest.mark.parametrize("backend", BACKENDS)
def test_discounted_returns_gradient_against_the_closed_form_and_torch(backend):
    rewards = RNG.normal(size=6)
    values = RNG.normal(size=6)
    gamma = 0.9
    steps = np.arange(6)
    discount = np.triu(gamma ** (steps[None, :] - steps[:, None]))  # G = discount @ r
    np.testing.assert_allclose(discounted_returns(rewards, gamma), discount @ rewards)
    loss = lambda r: anp.sum((discounted_returns(r, gamma) - values) ** 2)  # noqa: E731
    expected = 2 * discount.T @ (discount @ rewards - values)
    g = adcore.grad(loss, backend=backend)(rewards)
    np.testing.assert_allclose(g, expected, rtol=1e-6 if backend == "numeric" else 1e-12)
    torch = pytest.importorskip("torch")
    r = torch.tensor(rewards, requires_grad=True)
    scale = torch.tensor(gamma**steps)
    returns = torch.flip(torch.cumsum(torch.flip(r * scale, [0]), 0), [0]) / scale
    ((returns - torch.tensor(values)) ** 2).sum().backward()
    np.testing.assert_allclose(g, r.grad.numpy(), rtol=1e-6 if backend == "numeric" else 1e-12)
