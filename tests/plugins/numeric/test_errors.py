"""Bad functions and bad options: a clear error that names the backend, the point and the
fix, and nothing left broken: the next call works."""

from __future__ import annotations

import math

import numpy as np
import pytest

import adcore
import adcore.numpy as anp
from adcore import InvalidInputError, InvalidOutputError, NonScalarOutputError

X = np.array([0.5, 1.0, 2.0])


def grad(f, **options):
    return adcore.grad(f, backend="numeric", **options)


def works_afterwards():
    np.testing.assert_allclose(grad(lambda x: np.sum(x**2))(X), 2 * X, rtol=1e-9)


# a list or None output is judged above the backend (a pytree output; tests/test_api.py)
@pytest.mark.parametrize("result, name", [(lambda x: "text", "str"), (lambda x: {1.0, 2.0}, "set")])
def test_a_function_returning_no_array_names_what_it_returned(result, name):
    with pytest.raises(
        InvalidOutputError, match=f"backend 'numeric': f returned {name} at argument 0, element"
    ):
        adcore.jacobian(result, backend="numeric")(X)
    works_afterwards()


def test_an_output_shape_that_depends_on_the_point_is_reported():
    with pytest.raises(
        InvalidOutputError, match=r"returned shape \(3,\) at argument 0, element \(1,\).*\(2,\) elsewhere"
    ):
        adcore.jacobian(lambda x: x[x > 0.9], backend="numeric")(np.array([2.0, 0.9, 3.0]))
    works_afterwards()


def test_nan_at_a_perturbed_point_names_the_argument_the_element_and_the_step():
    # sqrt is fine at x, but x - h is below zero for the element sitting at 1e-7
    f = lambda a, x: np.sum(np.sqrt(x)) * a  # noqa: E731
    x = np.array([[4.0, 1e-7], [1.0, 9.0]])
    with pytest.raises(InvalidOutputError) as info:
        adcore.grad(f, argnums=1, backend="numeric")(2.0, x)
    message = str(info.value)
    for part in [
        "f returned nan",
        "argument 1",
        "element (0, 1)",
        "x = 1e-07",
        "moved by -",
        "method='central'",
    ]:
        assert part in message, f"{part!r} not in {message!r}"
    works_afterwards()


def test_forward_differences_stay_on_the_domain_side():
    x = np.array([1e-7, 1.0])
    g = grad(lambda x: np.sum(np.sqrt(x)), method="forward")(x)
    np.testing.assert_allclose(g, 0.5 / np.sqrt(x), rtol=5e-2)  # one-sided: truncation h / 4x


def test_richardson_skips_steps_that_leave_the_domain():
    x = np.array([0.05, 1.0])  # the first steps, 1/16, reach below zero at 0.05
    g, error = grad(lambda x: np.sum(np.log(x)), method="richardson", return_error=True)(x)
    assert np.all(np.abs(g - 1 / x) <= error) and np.all(error < 1e-10)


def test_richardson_names_a_point_where_no_step_was_finite():
    # sqrt(x - 1) is finite at x = 1 but nan at every x - h
    with pytest.raises(
        InvalidOutputError, match=r"method='richardson'.*not finite.*argument 0, element \(1,\)"
    ):
        grad(lambda x: np.sum(np.sqrt(x - 1.0)), method="richardson")(np.array([2.0, 1.0]))
    works_afterwards()


def test_richardson_from_a_small_user_step_stops_halving_where_x_stops_moving():
    f = lambda x: np.sum(np.exp(x))  # noqa: E731
    x = np.array([1.5])
    g, error = grad(f, method="richardson", step=1e-15, return_error=True)(x)  # h/8 no longer moves x
    assert np.all(np.abs(g - np.exp(x)) <= error)  # a poor estimate, and it says so
    with pytest.raises(InvalidInputError, match="half of it no longer moves x.*leave step out"):
        grad(f, method="richardson", step=3e-16)(x)
    works_afterwards()


def test_a_nan_value_at_x_itself_is_reported():
    with (
        pytest.raises(InvalidOutputError, match=r"f\(x\) itself is not finite \(nan\)"),
        np.errstate(invalid="ignore"),
    ):
        adcore.value_and_grad(lambda x: np.sum(np.log(x)), backend="numeric")(np.array([-1.0, 1.0]))
    works_afterwards()


# --- the complex step -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "f, how",
    [
        (lambda x: np.sum(np.abs(x) ** 2), "returned float64 values for complex input"),
        (lambda x: np.real(np.sum(x**2)), "returned float64 values for complex input"),
        (lambda x: np.sum(np.asarray(x, dtype=np.float64) ** 2), "cast a complex value to real"),
        (lambda x: np.sum(x.astype(np.float64) ** 2), "cast a complex value to real"),
        (lambda x: math.fsum(x**2), "cast a complex value to real"),
    ],
)
def test_complex_step_on_a_function_that_drops_the_imaginary_part_is_reported(f, how):
    with pytest.raises(InvalidOutputError) as info:
        grad(f, method="complex")(X)
    message = str(info.value)
    for part in ["method='complex'", "drops the imaginary part", how, "method='richardson'"]:
        assert part in message, f"{part!r} not in {message!r}"
    np.testing.assert_allclose(grad(f, method="richardson")(X), 2 * X, rtol=1e-10)  # the fix works
    works_afterwards()


def test_complex_step_on_a_function_that_refuses_complex_input():
    with pytest.raises(InvalidInputError, match=r"failed on complex input.*TypeError.*accept complex arrays"):
        grad(lambda x: np.sum(x**2 + np.floor(x)), method="complex")(X)
    works_afterwards()


def test_complex_step_through_adcore_ops_works():
    g = grad(lambda x: anp.sum(anp.exp(x) * anp.sin(x)), method="complex")(X)
    np.testing.assert_allclose(g, np.exp(X) * (np.sin(X) + np.cos(X)), rtol=1e-15)


# --- options ------------------------------------------------------------------------------------


def test_an_unknown_method_lists_the_methods_and_the_close_match():
    with pytest.raises(
        InvalidInputError, match=r"no method 'richardsen' \(did you mean 'richardson'\?\).*central"
    ):
        grad(lambda x: np.sum(x), method="richardsen")(X)
    works_afterwards()


def test_an_unknown_option_names_the_close_match():
    with pytest.raises(
        InvalidInputError, match=r"no option 'return_errors' \(did you mean 'return_error'\?\)"
    ):
        grad(lambda x: np.sum(x), return_errors=True)
    works_afterwards()


def test_grad_of_a_non_scalar_function():
    with pytest.raises(NonScalarOutputError, match="scalar output"):
        grad(lambda x: x * 2)(X)
    works_afterwards()


def test_numeric_inside_another_transformation_says_to_make_it_the_outer_one():
    inner = adcore.grad(lambda x: anp.sum(x**3), backend="numeric")
    with pytest.raises(InvalidInputError, match="cannot run inside another backend's transformation.*outer"):
        adcore.jacobian(inner, backend="reverse")(X)
    hessian = adcore.hessian(lambda x: anp.sum(x**3), inner="reverse", outer="numeric")(X)
    np.testing.assert_allclose(hessian, np.diag(6 * X), rtol=1e-8, atol=1e-8)


def test_integer_inputs_are_refused_as_by_every_backend():
    with pytest.raises(InvalidInputError, match="dtype int64"):
        grad(lambda x: np.sum(x))(np.array([1, 2]))
