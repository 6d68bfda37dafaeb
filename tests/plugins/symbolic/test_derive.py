"""adcore_symbolic.derive: the elementwise mode (one symbol per argument, however large the
array) and its fallback to the full mode, chunked evaluation, shapes and dtypes."""

from __future__ import annotations

import adcore_symbolic.derive as derive
import numpy as np
import pytest
from adcore_symbolic import derivative_expr

import adcore
import adcore.numpy as anp

RNG = np.random.default_rng(0)
X = RNG.uniform(-1, 1, 200)


def both(f, *args, argnums=0):
    """(symbolic, reverse): value_and_grad from each backend."""
    return (
        adcore.value_and_grad(f, argnums=argnums, backend="symbolic")(*args),
        adcore.value_and_grad(f, argnums=argnums, backend="reverse")(*args),
    )


def assert_same(pair, rtol=1e-13):
    (v, g), (v_ref, g_ref) = pair
    np.testing.assert_allclose(v, v_ref, rtol=rtol)
    for a, b in zip(g if isinstance(g, tuple) else (g,), g_ref if isinstance(g_ref, tuple) else (g_ref,)):
        assert np.shape(a) == np.shape(b)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-14)


# --- the elementwise mode ------------------------------------------------------------------


def test_a_million_elements_never_become_a_million_symbols(monkeypatch):
    def refuse(*args):
        raise AssertionError("the full mode made symbols per element")

    monkeypatch.setattr(derive, "_element_symbols", refuse)
    x = RNG.uniform(0, 1, 10**6)
    g = adcore.grad(lambda v: anp.sum(anp.sin(v) * v), backend="symbolic")(x)
    np.testing.assert_allclose(g, np.cos(x) * x + np.sin(x), rtol=1e-14)
    d = derivative_expr(lambda v: anp.sum(anp.sin(v) * v), (10**6,))
    assert d.elementwise and {str(s) for s in d.derivatives[0].free_symbols} == {"v"}


@pytest.mark.parametrize(
    "f",
    [
        lambda x: anp.sum(x**2),
        lambda x: anp.mean(anp.exp(x)),
        lambda x: 0.5 * anp.sum((x - 0.3) ** 2) + 0.1 * anp.sum(x**2),  # two sums
        lambda x: anp.log(anp.sum(anp.exp(x))),  # a nonlinear function of a sum
        lambda x: anp.sum(anp.where(x > 0, x, 0.01 * x)),  # leaky relu through Piecewise
        lambda x: anp.sum(x, keepdims=True)[0] * 2,  # keepdims, then a (non-elementwise) index
        lambda x: anp.sum(anp.sum(x**2) * x),  # a sum inside an array: back to the full mode
        lambda x: anp.sum(x[1:] * x[:-1]),  # indexing: the full mode
    ],
    ids=["sum", "mean", "two-sums", "log-sum-exp", "where", "keepdims", "sum-times-array", "indexing"],
)
def test_losses_agree_with_reverse(f):
    assert_same(both(f, X))


def test_which_losses_are_elementwise():
    assert derivative_expr(lambda x: anp.log(anp.sum(anp.exp(x))), (5,)).elementwise
    assert derivative_expr(lambda x: anp.sum(x**2) + anp.mean(x), (5,)).elementwise
    assert not derivative_expr(lambda x: anp.sum(x[1:] * x[:-1]), (5,)).elementwise
    assert not derivative_expr(lambda x: anp.sum(anp.sum(x**2) * x), (5,)).elementwise
    assert not derivative_expr(anp.sin, (5,)).elementwise  # an array output: the full Jacobian


def test_broadcast_arguments_are_summed_back_to_their_shapes():
    data = RNG.uniform(-1, 1, (50, 3))

    def loss(w, b, x):
        return anp.mean((x * w + b - 1.0) ** 2)

    w, b = RNG.uniform(-1, 1, 3), np.float64(0.25)
    assert_same(both(loss, w, b, data, argnums=(0, 1, 2)))
    assert derivative_expr(loss, w, b, data, argnums=(0, 1)).elementwise


def test_constant_arrays_the_loss_closes_over():
    target = RNG.uniform(-1, 1, X.shape)
    mask = target > 0
    f = lambda x: anp.sum(anp.where(mask, (x - target) ** 2, anp.abs(x)))  # noqa: E731
    assert_same(both(f, X))
    assert len(derivative_expr(f, X).constants) == 2


def test_chunked_evaluation_is_bit_identical_to_one_pass(monkeypatch):
    x = RNG.uniform(-1, 1, (101, 3))
    w = RNG.uniform(-1, 1, 3)

    def f(x, w):
        return anp.sum(anp.tanh(x * w) ** 2 + anp.sin(x))

    whole = adcore.grad(f, argnums=(0, 1), backend="symbolic")(x, w)
    monkeypatch.setattr(derive, "CHUNK", 7)  # rows of 2: 51 chunks, the last one short
    chunked = adcore.grad(f, argnums=(0, 1), backend="symbolic")(x, w)
    for a, b in zip(whole, chunked):
        np.testing.assert_array_equal(a, b)


def test_an_empty_array():
    g = adcore.grad(lambda x: anp.sum(anp.sin(x)), backend="symbolic")(np.zeros(0))
    assert g.shape == (0,)
    assert adcore.value_and_grad(lambda x: anp.sum(x * x), backend="symbolic")(np.zeros((0, 3)))[0] == 0.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(), (4,), (3, 5)])
def test_dtype_and_shape_are_kept(dtype, shape):
    x = RNG.uniform(0.5, 2, shape).astype(dtype)
    value, g = adcore.value_and_grad(lambda v: anp.sum(anp.log(v) * v), backend="symbolic")(x)
    assert g.dtype == dtype and g.shape == shape and np.result_type(value) == dtype
    np.testing.assert_allclose(g, np.log(x) + 1, rtol=1e-6 if dtype == np.float32 else 1e-15)


# --- the full mode ----------------------------------------------------------------------------


def test_full_jacobians_of_array_functions():
    a = RNG.uniform(-1, 1, (2, 3))

    def f(x):
        return anp.tanh(a @ x) * anp.sum(x)

    x = RNG.uniform(-1, 1, 3)
    np.testing.assert_allclose(
        adcore.jacobian(f, backend="symbolic")(x), adcore.jacobian(f, backend="reverse")(x), rtol=1e-13
    )


def test_element_symbols_name_each_element():
    d = derivative_expr(lambda x: x[0, 1] * x[1, 0], (2, 2))
    assert {str(s) for s in d.value.free_symbols} == {"x[0, 1]", "x[1, 0]"}
    assert "x_0_1" in d.source  # the same symbol in the generated code


def test_argument_names_come_from_the_signature():
    assert derive.argument_names(lambda alpha, beta: 0, 2) == ["alpha", "beta"]
    assert derive.argument_names(anp.sin, 1) == ["x"]
    assert derive.argument_names(lambda *xs: 0, 2) == ["x0", "x1"]
    assert derive.argument_names(lambda x0, *rest: 0, 3) == ["x0", "x1", "x2"]


def test_returning_an_outer_transformations_value_is_a_typed_error():
    def outer(y):
        return adcore.grad(lambda x: y, backend="symbolic")(1.0)

    with pytest.raises(adcore.UnsupportedByBackendError, match="another transformation traces"):
        adcore.grad(outer, backend="reverse")(2.0)
