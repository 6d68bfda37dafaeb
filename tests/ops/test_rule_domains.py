"""Rules at the edge of the domain their formula was derived on (issue 32, class 3's audit): each
finding's right number against an independent oracle, or its typed refusal and a next call that
works. pinv and lstsq with a cut: tests/ops/test_truncated_rules.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from finite_differences import central_jacobian

import adcore
from adcore.errors import InvalidValueError

RULE_BACKENDS = ["reverse", "forward"]


# --- norm: the gradient at x = 0 is a subgradient; |x|**p, 1 < p < 2, bends infinitely at 0 ----------


@pytest.mark.parametrize("outer", RULE_BACKENDS)
@pytest.mark.parametrize(
    "ord, x",
    [
        (None, np.zeros(3)),  # x / |x| near 0: the Hessian was a plausible 0
        (3, np.zeros(3)),
        ("fro", np.zeros((2, 2))),
        (1.5, np.array([1.0, -2.0, 0.0])),  # d2/dx2 |x|**1.5 = 0.75 |x|**-0.5: inf, was 0 (nan on forward)
    ],
)
def test_norm_second_derivative_where_it_does_not_exist_is_refused(outer, ord, x):
    f = lambda x: np.linalg.norm(x, ord)  # noqa: E731
    gradient = adcore.grad(f)
    # the first derivative stays: the subgradient 0 at x = 0, sign |x|**(p-1) ... elsewhere
    np.testing.assert_allclose(gradient(x), 0 * x if ord != 1.5 else central_jacobian(f, x), atol=1e-8)
    with pytest.raises(InvalidValueError, match="'norm': ord=.* has no second derivative"):
        adcore.jacobian(gradient, backend=outer)(x)
    away = x + 0.5
    np.testing.assert_allclose(
        adcore.jacobian(gradient, backend=outer)(away), central_jacobian(gradient, away, 1e-5), atol=1e-6
    )


@pytest.mark.parametrize("outer", RULE_BACKENDS)
def test_norm_second_derivative_at_a_zero_entry_for_ord_at_least_two_is_right(outer):
    # d2/dx2 |x|**2.5 = 3.75 |x|**0.5 -> 0 at 0: a Hessian exists, and it is computed
    x = np.array([1.0, -2.0, 0.0])
    gradient = adcore.grad(lambda x: np.linalg.norm(x, 2.5))
    h = adcore.jacobian(gradient, backend=outer)(x)
    np.testing.assert_allclose(h[:2, :2], central_jacobian(gradient, x, 1e-5)[:2, :2], atol=1e-8)
    # the zero entry's row and column: 3.75 |x|**0.5 and |x|**1.5 terms, 0 at 0 (central differences
    # of |x|**1.5 see h**0.5 there)
    np.testing.assert_array_equal(h[2], np.zeros(3))
    np.testing.assert_array_equal(h[:, 2], np.zeros(3))


@pytest.mark.parametrize("outer", RULE_BACKENDS)
def test_norm_of_one_entry_slices_is_abs_to_second_order(outer):
    # norm over an axis of length 1 is |x|: at 0, gradient abs'(0) = 0 and second derivative 0
    x = np.array([[0.0, 2.0, -3.0]])
    gradient = adcore.grad(lambda x: np.sum(np.linalg.norm(x, 1.5, axis=0)))
    np.testing.assert_allclose(gradient(x), [[0.0, 1.0, -1.0]], rtol=1e-15)
    np.testing.assert_allclose(
        adcore.jacobian(gradient, backend=outer)(x), np.zeros((1, 3, 1, 3)), atol=1e-15
    )


@pytest.mark.parametrize("ord", [None, 3, 1.5, 2.5])
def test_symbolic_norm_gradient_at_zero_is_the_subgradient_zero(ord):
    # sympy's own derivative of (sum |x|**p)**(1/p) is 0 * inf = nan at x = 0 (it was for ord=3)
    x = np.zeros(3)
    g = adcore.grad(lambda x: np.linalg.norm(x, ord), backend="symbolic")(x)
    np.testing.assert_array_equal(g, np.zeros(3))


@pytest.mark.parametrize("ord", [0.5, -1])
def test_symbolic_norm_below_one_at_a_zero_entry_is_refused_as_on_reverse(ord):
    f = lambda x: np.linalg.norm(x, ord)  # noqa: E731
    for backend in ("reverse", "symbolic"):
        with pytest.raises(InvalidValueError, match="'norm'.*zero entr"):
            adcore.grad(f, backend=backend)(np.array([1.0, 2.0, 0.0]))
    x = np.array([1.0, 2.0, 0.5])
    np.testing.assert_allclose(adcore.grad(f, backend="symbolic")(x), central_jacobian(f, x), rtol=1e-7)


@pytest.mark.parametrize("ord, x", [(None, np.zeros(3)), (3, np.zeros(3)), (1.5, np.array([1.0, -2.0, 0.0]))])
def test_forward_over_symbolic_norm_second_derivative_is_refused_where_it_does_not_exist(ord, x):
    f = lambda x: np.linalg.norm(x, ord)  # noqa: E731
    gradient = adcore.grad(f, backend="symbolic")
    with pytest.raises(InvalidValueError, match="'norm'.*backend 'symbolic'"):
        adcore.jacobian(gradient, backend="forward")(x)
    away = x + 0.5
    np.testing.assert_allclose(
        adcore.jacobian(gradient, backend="forward")(away), adcore.hessian(f)(away), rtol=1e-10
    )


# --- std: 0 where all elements are equal, a kink like the 2-norm's at 0 -------------------------------


@pytest.mark.parametrize("outer", RULE_BACKENDS)
@pytest.mark.parametrize("inner", RULE_BACKENDS)
def test_std_second_derivative_at_equal_elements_is_refused(inner, outer):
    # std = |x - mean| / sqrt(n): its Hessian (I - 1/n - u u^T) / (n std) is unbounded near equal
    # elements; (I - 1/n) / n came out, the derivative of no function
    gradient = adcore.grad(lambda x: np.std(x), backend=inner)
    np.testing.assert_array_equal(gradient(np.ones(3)), np.zeros(3))  # the subgradient 0 stays
    with pytest.raises(InvalidValueError, match="'std': no second derivative where all elements"):
        adcore.jacobian(gradient, backend=outer)(np.ones(3))
    x = np.array([1.0, 2.0, 4.0])
    np.testing.assert_allclose(
        adcore.jacobian(gradient, backend=outer)(x), central_jacobian(gradient, x, 1e-5), atol=1e-8
    )


def test_std_of_one_element_slices_has_second_derivative_zero():
    # a slice of one element: std is the constant 0, every derivative 0
    h = adcore.hessian(lambda x: np.sum(np.std(x, axis=0)))(np.array([[1.0, 2.0]]))
    np.testing.assert_array_equal(h, np.zeros((1, 2, 1, 2)))


# --- hypot at (0, 0): the 2-norm of two arguments -------------------------------------------------


@pytest.mark.parametrize("outer", RULE_BACKENDS)
def test_hypot_second_derivative_at_the_origin_in_both_arguments_is_refused(outer):
    f = lambda v: np.hypot(v[0], v[1])  # noqa: E731
    gradient = adcore.grad(f)
    np.testing.assert_array_equal(gradient(np.zeros(2)), np.zeros(2))  # the subgradient 0 stays
    with pytest.raises(InvalidValueError, match="'hypot': no second derivative at \\(0, 0\\)"):
        adcore.jacobian(gradient, backend=outer)(np.zeros(2))
    # (3, 4): the Hessian (I - u u^T) / 5, u = (3, 4) / 5
    u = np.array([0.6, 0.8])
    h = adcore.jacobian(gradient, backend=outer)(np.array([3.0, 4.0]))
    np.testing.assert_allclose(h, (np.eye(2) - np.outer(u, u)) / 5, atol=1e-15)
    # one argument constant: hypot(x, 0) = |x|, second derivative 0 as abs's
    along_x = adcore.grad(lambda x: np.hypot(x, 0.0))
    np.testing.assert_array_equal(adcore.jacobian(along_x, backend=outer)(np.zeros(1)), [[0.0]])
