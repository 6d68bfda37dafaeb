"""Reverse Jacobians from one vmapped pullback (Backend.batches): the same numbers as one pullback
per row, for every shape of f the engine takes, and the per-row path where the sweep cannot batch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from adcore_reverse.backend import ReverseBackend

import adcore
import adcore.numpy as anp
from adcore import derivatives

RNG = np.random.default_rng(34)
A = RNG.normal(size=(3, 4))
M = RNG.normal(size=(4, 4))
X = RNG.normal(size=4)


def per_row(monkeypatch: pytest.MonkeyPatch, call):
    """call() with reverse pulling back one row at a time (its Jacobians before batching)."""
    with monkeypatch.context() as m:
        m.setattr(ReverseBackend, "batches", False)
        return call()


def assert_same(got, expected):
    """Batching may change a sum's order (a matmul of all rows): equal to rounding, in the same
    shape and dtype, and zero where the per-row Jacobian is."""
    assert np.shape(got) == np.shape(expected) and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)


@pytest.fixture
def batched(monkeypatch):
    """A list that gets, per reverse Jacobian built, whether its rows were pulled back batched."""
    outcomes = []
    original = derivatives._by_batched_pullback

    def recorded(*args):
        jacobians = original(*args)
        outcomes.append(jacobians is not None)
        return jacobians

    monkeypatch.setattr(derivatives, "_by_batched_pullback", recorded)
    return outcomes


FUNCTIONS = {
    "matmul and elementwise": lambda x: anp.tanh(A @ x) + x[:3] ** 2,
    "a 2-d output": lambda x: anp.outer(anp.sin(x), x) @ M,
    "reductions": lambda x: anp.stack([anp.sum(x**2), anp.max(x), anp.mean(anp.exp(x))]),
    "indexing and concatenation": lambda x: anp.concatenate([x[::-1], x[1:3] * x[0], anp.cumsum(x)]),
    "where and a kink": lambda x: anp.where(x > 0, anp.log(anp.abs(x) + 1), x**3) + anp.maximum(x, 0.1),
    "solve": lambda x: anp.linalg.solve(M + 4 * np.eye(4), x * x),
}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_reverse_jacobians_equal_the_per_row_ones_and_forward_mode(name, monkeypatch, batched):
    f = FUNCTIONS[name]
    got = adcore.jacobian(f, backend="reverse")(X)
    assert batched == [True]  # every rule of the backward pass ran on the batch of rows
    assert_same(got, per_row(monkeypatch, lambda: adcore.jacobian(f, backend="reverse")(X)))
    np.testing.assert_allclose(got, adcore.jacobian(f, backend="forward")(X), rtol=1e-12, atol=1e-14)


def test_several_arguments_pytrees_and_an_argument_the_output_ignores(monkeypatch):
    def f(params, x, unused):
        return {"h": anp.tanh(params["W"] @ x + params["b"]), "s": anp.sum(x) * params["b"][:2]}

    args = ({"W": A, "b": RNG.normal(size=3)}, X, np.ones(5))
    jac = adcore.jacobian(f, argnums=(0, 1, 2))
    got = jac(*args)
    expected = per_row(monkeypatch, lambda: jac(*args))
    got_leaves, expected_leaves = adcore.tree.leaves(got), adcore.tree.leaves(expected)
    assert len(got_leaves) == len(expected_leaves) == 8  # 2 outputs x (W, b, x, unused)
    for g, e in zip(got_leaves, expected_leaves):
        assert_same(g, e)
    assert not np.any(got["h"][2]) and got["h"][2].shape == (3, 5)  # the unused argument's: zeros


def test_an_output_that_does_not_depend_on_the_input_has_zero_rows(monkeypatch):
    def f(x):  # rows 0 and 2 depend on x, row 1 is a constant
        return anp.stack([anp.sum(x), anp.sum(np.ones(4)), x[1] * x[2]])

    got = adcore.jacobian(f)(X)
    assert_same(got, per_row(monkeypatch, lambda: adcore.jacobian(f)(X)))
    assert not np.any(got[1])
    # and an output none of which depends on it: no pullback at all
    np.testing.assert_array_equal(adcore.jacobian(lambda x: np.ones(3) * 2.0)(X), np.zeros((3, 4)))


def test_float32_and_an_integer_output_keep_the_per_row_dtypes(monkeypatch):
    x32 = X.astype(np.float32)
    f = lambda x: anp.sin(A.astype(np.float32) @ x)  # noqa: E731
    got = adcore.jacobian(f)(x32)
    expected = per_row(monkeypatch, lambda: adcore.jacobian(f)(x32))
    assert got.dtype == expected.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_has_aux_returns_the_aux_beside_the_batched_jacobian(monkeypatch):
    def f(x):
        y = anp.exp(x) * x
        return y[:3], {"norm": anp.sum(y * y)}

    jac, aux = adcore.jacobian(f, has_aux=True)(X)
    jac_rows, aux_rows = per_row(monkeypatch, lambda: adcore.jacobian(f, has_aux=True)(X))
    assert_same(jac, jac_rows)
    np.testing.assert_array_equal(aux["norm"], aux_rows["norm"])


def test_a_complex_output_of_a_real_input(monkeypatch):
    f = lambda x: anp.exp(1j * x) * x  # noqa: E731  (d Re + 1j d Im)
    got = adcore.jacobian(f)(X)
    assert_same(got, per_row(monkeypatch, lambda: adcore.jacobian(f)(X)))
    np.testing.assert_allclose(got, np.diag(np.exp(1j * X) * (1 + 1j * X)), rtol=1e-12, atol=1e-15)


def test_holomorphic_jacobian_of_a_complex_input(monkeypatch):
    z = X + 1j * RNG.normal(size=4)
    f = lambda z: anp.sin(z) * z[::-1]  # noqa: E731
    got = adcore.jacobian(f, holomorphic=True)(z)
    assert_same(got, per_row(monkeypatch, lambda: adcore.jacobian(f, holomorphic=True)(z)))


def test_python_control_flow_on_values_in_f_is_traced_once_and_pulled_back_batched(monkeypatch):
    def f(x):
        if x[0] > 0:  # the forward trace has the values: the pullback sees one branch
            return anp.sin(x) * x[0]
        return anp.cos(x)

    for x in (X, -X):
        assert_same(adcore.jacobian(f)(x), per_row(monkeypatch, lambda x=x: adcore.jacobian(f)(x)))


def test_a_custom_vjp_whose_bwd_converts_its_cotangent_falls_back_to_one_row_at_a_time(batched):
    seen = []

    @adcore.custom_vjp
    def cube(x):
        return x**3

    def fwd(x):
        return x**3, x

    def bwd(x, g):
        seen.append(type(g).__name__)
        return (3 * x**2 * np.asarray(g),)  # plain NumPy on g: no batched meaning

    cube.defvjp(fwd, bwd)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the fallback is the engine's own: no vmap warning for the user
        got = adcore.jacobian(cube)(X)
    np.testing.assert_allclose(got, np.diag(3 * X**2), rtol=1e-14)
    assert seen == ["BatchTracer"] + ["ndarray"] * 4  # tried once batched, then once per row
    assert batched == [False]


def test_a_custom_vjp_written_with_ops_runs_once_for_every_row():
    seen = []

    @adcore.custom_vjp
    def clipped_identity(x):
        return x

    def bwd(_, g):
        seen.append(type(g).__name__)
        return (anp.clip(g, -0.5, 0.5),)

    clipped_identity.defvjp(lambda x: (x, None), bwd)
    got = adcore.jacobian(lambda x: clipped_identity(x) * 2.0)(X)
    np.testing.assert_array_equal(got, np.diag(np.full(4, 0.5)))
    assert seen == ["BatchTracer"]


def test_rows_in_chunks_give_the_same_jacobian(monkeypatch):
    f = FUNCTIONS["a 2-d output"]
    whole = adcore.jacobian(f)(X)
    monkeypatch.setattr(derivatives, "SEED_ENTRIES", 48)  # 16 outputs: chunks of 3 rows, the last of 1
    assert_same(adcore.jacobian(f)(X), whole)


def test_reverse_over_reverse_hessian_and_a_jacobian_under_grad(monkeypatch):
    def f(x):
        return anp.sum(anp.tanh(M @ x) ** 2) + anp.prod(x)

    hess = adcore.hessian(f, outer="reverse", inner="reverse")
    assert_same(hess(X), per_row(monkeypatch, lambda: hess(X)))
    # a reverse Jacobian inside grad: the batched pullback runs on the outer trace's values
    g = adcore.grad(lambda x: anp.sum(adcore.jacobian(lambda y: anp.sin(y) * y[0])(x) ** 2))
    assert_same(g(X), per_row(monkeypatch, lambda: g(X)))


def test_a_jacobian_under_vmap_equals_the_loop():
    f = FUNCTIONS["matmul and elementwise"]
    xs = RNG.normal(size=(3, 4))
    got = adcore.vmap(adcore.jacobian(f))(xs)
    np.testing.assert_allclose(got, np.stack([adcore.jacobian(f)(x) for x in xs]), rtol=1e-12, atol=1e-15)


def test_pull_back_rows_in_chunks_equals_one_pullback_per_row(monkeypatch):
    f = FUNCTIONS["a 2-d output"]
    out, pullback = ReverseBackend().vjp(f, (X,), (0,))
    rows = RNG.normal(size=(7, *out.shape))
    expected = np.stack([pullback(r)[0] for r in rows])
    monkeypatch.setattr(derivatives, "SEED_ENTRIES", 48)  # rows of 16: chunks of 3, 3 and 1
    (got,) = derivatives.pull_back_rows(pullback, rows, (X,), (0,))
    assert got.shape == (7, 4)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)
    assert derivatives.pull_back_rows(pullback, rows[:0], (X,), (0,)) is None  # no row: the caller's loop
    monkeypatch.setattr(derivatives, "ROW_ENTRIES", 15)  # rows of 16 are pulled back one at a time
    assert derivatives.pull_back_rows(pullback, rows, (X,), (0,)) is None
