"""The numeric backend on complex arguments and complex values: its differences work on the real
function the API hands it (complex arguments and outputs as real pairs); its complex step, which
perturbs the imaginary part, refuses complex arguments, complex outputs and complex values inside f."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

import adcore
from adcore.errors import InvalidOutputError, UnreliableEstimateError, UnsupportedByBackendError

Z = np.array([1.0 + 2.0j, -0.5 + 0.3j])


@pytest.mark.parametrize("method", ["central", "richardson", "forward", "backward"])
def test_differences_on_the_split_function_follow_the_convention(method):
    g = adcore.grad(lambda z: np.sum(np.abs(z) ** 2), backend="numeric", method=method)(Z)
    np.testing.assert_allclose(g, 2 * np.conj(Z), rtol=1e-6)
    d = adcore.jacobian(np.exp, backend="numeric", method=method, holomorphic=True)(Z)
    np.testing.assert_allclose(d, np.diag(np.exp(Z)), rtol=1e-6)


def test_an_error_estimate_of_a_complex_derivative_bounds_it():
    d, error = adcore.jacobian(
        lambda z: np.abs(z) ** 3, backend="numeric", method="richardson", return_error=True
    )(Z)
    exact = np.diag(3 * np.abs(Z) * np.conj(Z))
    assert error.dtype == np.float64 and d.dtype == np.complex128
    assert np.all(np.abs(d - exact) <= error + 1e-15)
    assert np.all(error < 1e-9)


def test_the_complex_step_refuses_a_complex_argument():
    with pytest.raises(UnsupportedByBackendError, match="argument 0 is complex.*method='central'"):
        adcore.grad(lambda z: np.abs(z) ** 2, backend="numeric", method="complex")(1 + 2j)
    with pytest.raises(UnsupportedByBackendError, match="complex step"):
        adcore.jvp(np.exp, (Z,), (Z,), backend="numeric", method="complex")


def test_the_complex_step_refuses_a_complex_valued_f():
    with pytest.raises((UnsupportedByBackendError, InvalidOutputError), match="complex"):
        adcore.jacobian(lambda x: np.exp(1j * x), backend="numeric", method="complex")(np.array([0.3, 0.5]))


@pytest.mark.parametrize(
    "f",
    [
        lambda x: np.real(np.exp(1j * x) * x),
        lambda x: np.abs(np.exp(1j * x) + x),
        lambda x: (x * (1 + 1j)).imag,
    ],
    ids=["real-of-exp", "abs", "imag"],
)
def test_the_complex_step_on_complex_values_inside_f_is_refused_not_a_number(f):
    with pytest.raises((InvalidOutputError, UnreliableEstimateError), match="complex"):
        adcore.grad(f, backend="numeric", method="complex")(1.3)
    # central differences are right
    assert adcore.grad(f, backend="numeric")(1.3) == pytest.approx(adcore.grad(f, backend="reverse")(1.3))


def test_the_complex_step_still_works_on_real_functions_with_structured_outputs():
    f = lambda x: {"a": np.sin(x), "b": np.sum(x**2)}  # noqa: E731
    d = adcore.jacobian(f, backend="numeric", method="complex")(np.array([0.3, 0.5]))
    np.testing.assert_allclose(d["a"], np.diag(np.cos([0.3, 0.5])), rtol=1e-14)
    np.testing.assert_allclose(d["b"], [0.6, 1.0], rtol=1e-14)


def phase_and_norm(x):
    return {"c": np.exp(1j * x), "r": np.sum(x**2)}


def abs_squared(z):
    return np.sum(np.abs(z) ** 2)


def test_a_process_pool_differentiates_complex_arguments_and_outputs():
    x = np.array([0.3, 0.5])
    with ProcessPoolExecutor(2) as pool:
        d = adcore.jacobian(phase_and_norm, backend="numeric", executor=pool)(x)
        g = adcore.grad(abs_squared, backend="numeric", executor=pool)(Z)
    np.testing.assert_allclose(d["c"], np.diag(1j * np.exp(1j * x)), rtol=1e-8)
    np.testing.assert_allclose(d["r"], 2 * x, rtol=1e-8)
    np.testing.assert_allclose(g, 2 * np.conj(Z), rtol=1e-8)
