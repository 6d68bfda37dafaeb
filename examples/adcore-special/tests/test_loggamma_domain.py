"""loggamma at real x <= 0: SciPy's value is nan, and so is the slope on reverse and forward (psi(x) is
finite there, which was the slope returned); numeric refuses the nan value by a typed error. symbolic
still gives psi(x) there: a nan in its expression is refused by sympy's where (not done yet)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as ss
from adcore_special import loggamma

import adcore
from adcore.errors import AdcoreError

X = np.array([-1.5, -0.5, 0.5, 3.0])  # two outside the real domain, two inside


@pytest.mark.parametrize("backend", ["reverse"])
def test_the_slope_is_nan_exactly_where_the_value_is(backend):
    g = adcore.grad(lambda x: np.sum(loggamma(x)), backend=backend)(X)
    assert np.all(np.isnan(ss.loggamma(X[:2]))) and np.all(np.isnan(g[:2]))
    np.testing.assert_allclose(g[2:], ss.digamma(X[2:]), rtol=1e-12)  # SciPy's psi, the oracle


@pytest.mark.parametrize("backend", ["reverse", "forward"])
@pytest.mark.parametrize("x", [-0.5, -2.5])
def test_a_scalar_outside_the_domain_has_a_nan_slope(backend, x):
    value, slope = adcore.value_and_grad(loggamma, backend=backend)(x)
    assert np.isnan(value) and np.isnan(slope)
    # the next call works, inside the domain
    np.testing.assert_allclose(adcore.grad(loggamma, backend=backend)(2.5), ss.digamma(2.5), rtol=1e-12)


def test_numeric_refuses_the_nan_value_by_a_typed_error():
    with pytest.raises(AdcoreError, match="finite"):
        adcore.grad(loggamma, backend="numeric")(-0.5)
    np.testing.assert_allclose(adcore.grad(loggamma, backend="numeric")(2.5), ss.digamma(2.5), rtol=1e-6)
