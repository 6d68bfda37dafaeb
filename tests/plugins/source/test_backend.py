"""The source backend through the public API: modes, options, the engine's wrapper (pytrees,
has_aux, argnums, keywords), every derivative function, each checked against the reverse tape."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
from adcore.errors import InvalidInputError

MODES = ("reverse", "forward")
X = np.array([0.3, -1.2, 2.0])


def loss(x, w):
    y = np.tanh(x * w["scale"]) + w["shift"]
    return np.sum(y * y)


def vector(x, a):
    y = np.sin(x) * a
    return y * x


@pytest.mark.parametrize("mode", MODES)
def test_grad_of_a_pytree_argument_is_shaped_like_it_and_agrees_with_the_tape(mode):
    w = {"scale": np.array([0.5, 2.0, -1.0]), "shift": np.array(0.25)}
    got = adcore.grad(loss, argnums=(0, 1), backend="source", mode=mode)(X, w)
    want = adcore.grad(loss, argnums=(0, 1), backend="reverse")(X, w)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-13)
    assert set(got[1]) == {"scale", "shift"}
    for key in w:
        np.testing.assert_allclose(got[1][key], want[1][key], rtol=1e-13)
        assert np.shape(got[1][key]) == np.shape(w[key])


@pytest.mark.parametrize("mode", MODES)
def test_jacobian_of_a_vector_function_in_both_modes(mode):
    a = np.array([1.5, -0.5, 3.0])
    got = adcore.jacobian(vector, argnums=(0, 1), backend="source", mode=mode)(X, a)
    want = adcore.jacobian(vector, argnums=(0, 1), backend="reverse")(X, a)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-13)


@pytest.mark.parametrize("mode", MODES)
def test_value_and_grad_gives_numpys_value_bit_for_bit(mode):
    w = {"scale": np.array([0.5, 2.0, -1.0]), "shift": np.array(0.25)}
    value, _ = adcore.value_and_grad(loss, backend="source", mode=mode)(X, w)
    assert value == loss(X, w)


@pytest.mark.parametrize("mode", MODES)
def test_has_aux_returns_the_aux_as_the_function_computed_it(mode):
    def f(x):
        y = np.sum(np.exp(x))
        return y, {"mean": np.mean(x), "n": 3}

    g, aux = adcore.grad(f, has_aux=True, backend="source", mode=mode)(X)
    np.testing.assert_allclose(g, np.exp(X), rtol=1e-14)
    assert aux["n"] == 3 and aux["mean"] == np.mean(X)


@pytest.mark.parametrize("mode", MODES)
def test_keyword_arguments_and_static_integers_reach_the_function(mode):
    def f(x, n, scale=1.0):
        for _ in range(n):
            x = np.sin(x) * scale
        return np.sum(x)

    got = adcore.grad(f, backend="source", mode=mode)(X, 3, scale=0.5)
    want = adcore.grad(f, backend="reverse")(X, 3, scale=0.5)
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_jvp_and_vjp_through_the_source_backend():
    a = np.array([1.5, -0.5, 3.0])
    t = np.array([1.0, 2.0, -1.0])
    out, tangent = adcore.jvp(lambda x: vector(x, a), (X,), (t,), backend="source")
    want_out, want_tangent = adcore.jvp(lambda x: vector(x, a), (X,), (t,), backend="forward")
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_allclose(tangent, want_tangent, rtol=1e-13)
    out, pullback = adcore.vjp(lambda x: vector(x, a), X, backend="source")
    (ct,) = pullback(t)
    (want_ct,) = adcore.vjp(lambda x: vector(x, a), X, backend="reverse")[1](t)
    np.testing.assert_allclose(ct, want_ct, rtol=1e-13)
    (again,) = pullback(t)  # a pullback called twice gives the same answer (its sweep used nothing up)
    np.testing.assert_array_equal(again, ct)


def test_hessian_with_the_source_backend_inside_and_forward_outside():
    def f(x):
        return np.sum(np.sin(x) * x * x)

    got = adcore.hessian(f, inner="source", outer="forward")(X)
    want = adcore.hessian(f)(X)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_float32_in_float32_out():
    x = X.astype(np.float32)
    for mode in MODES:
        g = adcore.grad(lambda x: np.sum(np.cos(x) * x), backend="source", mode=mode)(x)
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, -np.sin(x) * x + np.cos(x), rtol=1e-6)


def test_a_function_the_tape_refuses_in_place_writes_is_differentiated_from_its_source():
    def f(x):
        y = np.zeros(3)
        y[0] = x[0] * x[1]
        y[1] = np.sin(x[2])
        y[2] = y[0] + y[1]
        return np.sum(y * y)

    x = np.array([0.5, 1.5, -0.7])
    y0, y1 = x[0] * x[1], np.sin(x[2])
    y2 = y0 + y1
    want = np.array(
        [2 * y0 * x[1] + 2 * y2 * x[1], 2 * y0 * x[0] + 2 * y2 * x[0], (2 * y1 + 2 * y2) * np.cos(x[2])]
    )
    for mode in MODES:
        np.testing.assert_allclose(adcore.grad(f, backend="source", mode=mode)(x), want, rtol=1e-13)


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"mode": "sideways"}, ["mode", "'reverse' or 'forward'", "sideways"]),
        ({"compile": "llvm"}, ["compile", "'numba'", "llvm"]),
        ({"mdoe": "forward"}, ["no option 'mdoe'", "did you mean 'mode'"]),
    ],
)
def test_a_bad_option_is_a_typed_error_and_the_next_call_works(options, words):
    with pytest.raises(InvalidInputError) as info:
        adcore.grad(np.sin, backend="source", **options)(0.5)
    for word in words:
        assert word in str(info.value)
    assert adcore.grad(np.sin, backend="source")(0.5) == pytest.approx(np.cos(0.5), rel=1e-15)


def test_its_variants_are_its_two_modes():
    backend = adcore.get_backend("source")
    assert backend.variants == {"reverse": {"mode": "reverse"}, "forward": {"mode": "forward"}}
    assert backend.for_options({"mode": "forward"}).builds == "jvp"
    assert backend.for_options({}).builds == "vjp"


@pytest.mark.parametrize("mode", MODES)
def test_a_field_of_an_ops_named_tuple_output_carries_its_derivative(mode):
    def f(a):
        m = np.outer(a, a) + np.diag(a)
        e = np.linalg.eigh(m)
        return np.sum(e.eigenvalues * e.eigenvalues)

    a = np.array([1.0, 0.4, 2.0])
    got = adcore.grad(f, backend="source", mode=mode)(a)
    np.testing.assert_allclose(got, adcore.grad(f, backend="reverse")(a), rtol=1e-10)


@pytest.mark.parametrize("mode", MODES)
def test_data_passed_as_an_argument_is_a_constant_and_either_argument_can_be_differentiated(mode):
    def f(params, x, layers):
        y = x
        for _ in range(layers):
            y = np.tanh(y * params["w"] + params["b"])
        return np.sum(y)

    params = {"w": np.array([0.5, -1.5, 2.0]), "b": np.array(0.1)}
    for argnums in (0, 1, (0, 1)):
        got = adcore.grad(f, argnums=argnums, backend="source", mode=mode)(params, X, 2)
        want = adcore.grad(f, argnums=argnums, backend="reverse")(params, X, 2)
        for g, w in zip(adcore.tree.leaves(got), adcore.tree.leaves(want)):
            np.testing.assert_allclose(g, w, rtol=1e-13)


@pytest.mark.parametrize("inner", MODES)
@pytest.mark.parametrize("outer", MODES)
def test_source_over_source_differentiates_the_generated_code(inner, outer):
    def f(x):
        return np.sum(np.sin(x) * x * x)

    gradient = adcore.grad(f, backend="source", mode=inner)
    got = adcore.jacobian(gradient, backend="source", mode=outer)(X)
    x = X
    want = np.diag(-np.sin(x) * x * x + 4 * x * np.cos(x) + 2 * np.sin(x))  # d²/dx² of sin(x) x²
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_a_generator_is_refused_in_forward_mode_before_it_runs():
    from adcore_source.errors import SourceTransformError

    def f(x):
        yield x

    with pytest.raises(SourceTransformError, match="generator|yield"):
        adcore.grad(f, backend="source", mode="forward")(0.5)


def _doubles_its_first_entry(v):
    v[0] = v[0] * 2.0
    return np.sum(v)


@pytest.mark.parametrize("mode", MODES)
def test_a_callee_writing_into_its_parameter_is_refused_not_differentiated_wrong(mode):
    # in NumPy the caller's `a` changes too; a callee transformed on a copy would hide that
    from adcore_source.errors import SourceTransformError

    def f(x):
        a = x * 1.0
        s = _doubles_its_first_entry(a)
        return s + np.sum(a * a)

    with pytest.raises(SourceTransformError, match="_doubles_its_first_entry.*'v' in place"):
        adcore.grad(f, backend="source", mode=mode)(X)
