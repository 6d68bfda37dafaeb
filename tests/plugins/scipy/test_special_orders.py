"""polygamma's order: a non-integer or negative one is an InvalidValueError naming it (issue 32, class 10)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.special as ss
from adcore_scipy import special

import adcore
from adcore.errors import AdcoreError

BACKENDS = ["reverse", "forward", "numeric", "symbolic"]
BAD_ORDERS = [1.5, -1, -2.0, np.float64(0.5)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", BAD_ORDERS)
def test_polygamma_with_a_bad_order_is_refused_through_the_function(backend, n):
    with pytest.raises(
        AdcoreError, match=re.escape(f"polygamma: n must be one integer >= 0, got {n!r}")
    ) as caught:
        adcore.grad(lambda x: special.polygamma(n, x), backend=backend)(1.0)
    assert isinstance(caught.value, ValueError)
    # the next call works: d/dx polygamma(1, x) = polygamma(2, x) (SciPy's, the oracle)
    g = adcore.grad(lambda x: special.polygamma(1, x), backend=backend)(1.0)
    np.testing.assert_allclose(g, ss.polygamma(2, 1.0), rtol=1e-6)


@pytest.mark.parametrize("backend", [None, *BACKENDS])
@pytest.mark.parametrize("n", [1.5, -1, True])
def test_the_polygamma_op_with_a_bad_order_is_refused_naming_it(backend, n):
    call = (
        (lambda: adcore.ops.polygamma(1.0, n=n))
        if backend is None
        else (lambda: adcore.grad(lambda x: adcore.ops.polygamma(x, n=n), backend=backend)(1.0))
    )
    with pytest.raises(
        AdcoreError, match=r"op 'polygamma': its order n must be an integer >= 0.*got " + re.escape(repr(n))
    ) as caught:
        call()
    assert isinstance(caught.value, ValueError)  # was a plain ValueError
    np.testing.assert_allclose(adcore.ops.polygamma(1.0, n=1), ss.polygamma(1, 1.0), rtol=1e-15)


@pytest.mark.parametrize("backend", BACKENDS)
def test_psi_with_an_order_is_refused_naming_polygamma(backend):
    with pytest.raises(
        AdcoreError, match=r"psi takes one argument x.*polygamma\(n, x\) with a plain int n >= 0"
    ) as caught:
        adcore.grad(lambda x: special.psi(x, 2), backend=backend)(1.0)
    assert isinstance(caught.value, TypeError)
    # the next call works, and the way out the message names gives SciPy's polygamma(3, x) as the slope
    np.testing.assert_allclose(
        adcore.grad(special.psi, backend=backend)(1.5), ss.polygamma(1, 1.5), rtol=1e-6
    )
    g = adcore.grad(lambda x: special.polygamma(2, x), backend=backend)(1.5)
    np.testing.assert_allclose(g, ss.polygamma(3, 1.5), rtol=1e-6)


@pytest.mark.parametrize("backend", ["reverse", "forward"])
@pytest.mark.parametrize(
    ("f", "outside", "inside", "slope"),
    [
        (lambda y: special.xlog1py(2.0, y), -2.0, 1.0, 1.0),  # 2 / (1 + y)
        (lambda y: special.xlogy(2.0, y), -1.0, 4.0, 0.5),  # 2 / y
        (lambda x: special.xlogy(x, -1.0), 1.0, None, None),  # log(-1): the value is nan
    ],
    ids=["xlog1py_y", "xlogy_y", "xlogy_x"],
)
def test_a_slope_is_nan_where_the_value_is_nan(backend, f, outside, inside, slope):
    value, g = adcore.value_and_grad(f, backend=backend)(outside)
    assert np.isnan(value) and np.isnan(g)  # was the finite x / (1 + y), x / y, log|y|
    if inside is not None:  # the next call works
        np.testing.assert_allclose(adcore.grad(f, backend=backend)(inside), slope, rtol=1e-12)
