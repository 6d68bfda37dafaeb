"""np.clip with traced bounds: NumPy's value, differentiable in the bounds too, on every backend (issue 32).

It was a RecursionError: the bounds are clip's params, and the op's impl handed a traced one back
to NumPy, which handed it to the op again. Oracles: clip's value is NumPy's own; the derivative
of sum(w * clip(x, lo, hi)) is w where lo < x < hi (1 on the closed interval, clip's convention),
sum(w where x < lo) in lo and sum(w where max(x, lo) > hi) in hi, written out below.
"""

from __future__ import annotations

import numpy as np
import pytest

import adcore
from adcore.errors import AdcoreError

BACKENDS = ["reverse", "forward", "numeric", "symbolic"]
X = np.array([0.5, 1.1, 1.5, 2.3, 3.0])  # no element at a bound: numeric's differences see no kink
W = np.arange(1.0, 6.0)


def _weighted_clip(x, lo, hi):
    return np.sum(W * np.clip(x, lo, hi))


def _expected(x, lo, hi):
    """The derivative of sum(W * clip(x, lo, hi)) in x, lo and hi (NumPy: min(max(x, lo), hi))."""
    above = np.maximum(x, lo) > hi
    below = (x < lo) & ~above
    return W * ~(above | below), np.sum(W[below]), np.sum(W[above])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("lo", "hi"), [(1.0, 2.5), (2.0, 1.0), (-1.0, 0.2)])
def test_clip_is_differentiable_in_x_and_both_bounds(backend, lo, hi):
    g = adcore.grad(_weighted_clip, argnums=(0, 1, 2), backend=backend)(X, lo, hi)
    for got, want in zip(g, _expected(X, lo, hi)):
        np.testing.assert_allclose(got, want, atol=1e-6)


@pytest.mark.parametrize("backend", ["reverse", "forward", "symbolic"])
def test_one_traced_bound_by_function_method_and_keyword(backend):
    calls = [
        lambda lo: np.sum(W * np.clip(X, lo, None)),
        lambda lo: np.sum(W * X.clip(lo)),
        lambda lo: np.sum(W * np.clip(X, a_min=lo, a_max=2.5)),
        lambda lo: np.sum(W * adcore.ops.clip(X, a_min=lo, a_max=2.5)),
    ]
    for f in calls:
        # d/dlo: the weights of the elements below lo = 1.2 (0.5 and 1.1)
        np.testing.assert_allclose(adcore.grad(f, backend=backend)(1.2), 3.0)
    hi_only = adcore.grad(lambda hi: np.sum(W * np.clip(X, None, hi)), backend=backend)(1.2)
    np.testing.assert_allclose(hi_only, 3 + 4 + 5)  # the elements above 1.2


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("lo", "hi"), [(1.0, 2.5), (2.0, 1.0), (np.nan, 2.0), (1.0, np.nan), (0.0, 1.0)])
def test_the_traced_value_is_numpys_bit_for_bit(dtype, lo, hi):
    x = np.array([-0.0, 0.5, 1.0, 1.5, 2.5, np.nan], dtype)
    lo_, hi_ = np.asarray(lo), np.asarray(hi)  # the arguments as the API takes them: 0-d float64

    def f(lo, hi):
        return np.clip(x, lo, hi)

    for backend in ("reverse", "forward"):
        out, _ = adcore.vjp(f, lo_, hi_, backend=backend)
        expected = np.clip(x, lo_, hi_)
        assert out.dtype == expected.dtype
        np.testing.assert_array_equal(out.view(np.uint8), expected.view(np.uint8))  # bits, -0.0 and NaN too


def test_second_derivative_in_a_bound_and_a_traced_x_with_traced_bounds():
    # d2/dlo2 sum(clip(X, lo, 2)^2) = 2 * (number of X below lo = 1.2) = 4
    h = adcore.hessian(lambda lo: np.sum(np.clip(X, lo, 2.0) ** 2))(1.2)
    np.testing.assert_allclose(h, 4.0)


def test_another_op_with_a_traced_param_is_refused_naming_it():
    with pytest.raises(AdcoreError, match="op 'round': its param 'decimals' is a traced value") as caught:
        adcore.grad(lambda x, d: np.sum(adcore.ops.round(x, decimals=d)), argnums=(0, 1))(X, 1.0)
    assert isinstance(caught.value, TypeError)
    np.testing.assert_allclose(adcore.grad(lambda lo: _weighted_clip(X, lo, 2.5))(1.2), 3.0)
