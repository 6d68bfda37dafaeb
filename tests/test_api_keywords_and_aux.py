"""adcore.api: misspelt keywords refused with 'did you mean', and hessian's has_aux (issue 32, class 10)."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
from adcore.core import Tracer
from adcore.errors import AdcoreError

X = np.array([0.5, 1.5, 2.5])


def _cube_sum_with_aux(x):
    return np.sum(x**3), {"total": np.sum(x)}


@pytest.mark.parametrize(
    ("function", "keyword", "suggested"),
    [
        (adcore.grad, "argnum", "argnums"),
        (adcore.value_and_grad, "hasaux", "has_aux"),
        (adcore.differentiate, "argnum", "argnums"),
        (adcore.jacobian, "holomorphc", "holomorphic"),
        (adcore.hessian, "argnum", "argnums"),
        (adcore.hvp, "argnum", "argnums"),
        (adcore.vjp, "backnd", "backend"),
        (adcore.checkpoint, "static_argnum", "static_argnums"),
        (adcore.check_grads, "mode", "modes"),
    ],
)
def test_a_misspelt_keyword_is_refused_with_did_you_mean(function, keyword, suggested):
    f = np.sum
    with pytest.raises(AdcoreError) as caught:
        function(f, **{keyword: 0})
    assert isinstance(caught.value, TypeError)  # Python's error for an unknown keyword
    assert repr(keyword) in str(caught.value) and f"did you mean {suggested!r}" in str(caught.value)
    np.testing.assert_array_equal(adcore.grad(lambda x: np.sum(x * x), argnums=0)(X), 2 * X)  # d/dx x^2


def test_an_unknown_keyword_of_a_function_without_options_lists_its_keywords():
    with pytest.raises(AdcoreError, match="'bogus'.*argnums, backend") as caught:
        adcore.hessian(np.sum, bogus=1)
    assert isinstance(caught.value, TypeError)


def test_backend_options_still_pass_through():
    # the numeric backend's own option is not an API keyword and is not near one
    np.testing.assert_allclose(adcore.grad(np.sum, backend="numeric", method="central")(X), np.ones(3))


@pytest.mark.parametrize("backend", [None, "reverse", "forward", "numeric", "symbolic"])
def test_hessian_has_aux_returns_h_and_the_aux_as_jax(backend):
    h, aux = adcore.hessian(_cube_sum_with_aux, has_aux=True, backend=backend)(X)
    # d^2/dx^2 sum(x^3) = diag(6x), analytic; aux is f's second output at X, concrete
    np.testing.assert_allclose(h, np.diag(6 * X), rtol=1e-6 if backend != "numeric" else 1e-3, atol=1e-3)
    assert not isinstance(aux["total"], Tracer) and float(aux["total"]) == 4.5


def test_hessian_has_aux_with_two_argnums():
    def f(x, y):
        return np.sum(x * x * y), x + y

    (hxx, hxy), (hyx, hyy) = [list(r) for r in adcore.hessian(f, argnums=(0, 1), has_aux=True)(X, X)[0]]
    _, aux = adcore.hessian(f, argnums=(0, 1), has_aux=True)(X, X)
    # f = sum x^2 y: d2/dx2 = diag(2y), d2/dxdy = diag(2x), d2/dy2 = 0
    np.testing.assert_allclose(hxx, np.diag(2 * X))
    np.testing.assert_allclose(hxy, np.diag(2 * X))
    np.testing.assert_allclose(hyx, np.diag(2 * X))
    np.testing.assert_allclose(hyy, np.zeros((3, 3)))
    np.testing.assert_array_equal(aux, 2 * X)
