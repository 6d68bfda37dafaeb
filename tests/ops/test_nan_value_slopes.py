"""Where an elementwise op's real value is nan (x outside its real domain), so is its slope: log(-1),
log1p(-2), log2/log10(-1), arctanh(2) gave the formula's finite 1/x, 1/(1+x), 1/(1-x^2) (issue 32);
arcsin, arccos, sqrt, arccosh already gave nan. Numeric refuses the nan value by a typed error."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
from adcore.errors import AdcoreError

# op, a point outside its real domain, a point inside, the slope there (analytic)
OPS = [
    (np.log, -1.0, 2.0, 0.5),
    (np.log1p, -2.0, 1.0, 0.5),
    (np.log2, -1.0, 2.0, 1 / (2 * np.log(2))),
    (np.log10, -1.0, 2.0, 1 / (2 * np.log(10))),
    (np.arctanh, 2.0, 0.5, 1 / 0.75),
    (np.arcsin, 2.0, 0.6, 1 / 0.8),
    (np.arccos, -2.0, 0.6, -1 / 0.8),
    (np.sqrt, -1.0, 4.0, 0.25),
    (np.arccosh, 0.5, 2.0, 1 / np.sqrt(3.0)),
]
IDS = [op.__name__ for op, *_ in OPS]


@pytest.mark.parametrize("backend", ["reverse", "forward"])
@pytest.mark.parametrize(("op", "outside", "inside", "slope"), OPS, ids=IDS)
def test_the_slope_is_nan_where_the_value_is(backend, op, outside, inside, slope):
    value, g = adcore.value_and_grad(op, backend=backend)(outside)
    assert np.isnan(value) and np.isnan(g)
    # the next call works, inside the domain, and an array with both gives each its own (reverse)
    np.testing.assert_allclose(adcore.grad(op, backend=backend)(inside), slope, rtol=1e-14)
    if backend == "reverse":
        both = adcore.grad(lambda x: np.sum(op(x)))(np.array([outside, inside]))
        assert np.isnan(both[0])
        np.testing.assert_allclose(both[1], slope, rtol=1e-14)


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_an_untaken_nan_branch_still_gives_the_taken_slope(backend):
    # where(x > 0, log(x), 0) at x = -1: log's nan slope is not taken
    g = adcore.grad(lambda x: np.sum(np.where(x > 0, np.log(np.abs(x) * np.sign(x)), 2 * x)), backend=backend)
    np.testing.assert_allclose(g(np.array([-1.0, 2.0])), [2.0, 0.5], rtol=1e-14)


@pytest.mark.parametrize(("op", "outside", "inside", "slope"), OPS, ids=IDS)
def test_numeric_refuses_the_nan_value(op, outside, inside, slope):
    with pytest.raises(AdcoreError, match="finite"):
        adcore.grad(op, backend="numeric")(outside)
    np.testing.assert_allclose(adcore.grad(op, backend="numeric")(inside), slope, rtol=1e-6)


def test_complex_logs_off_the_real_domain_keep_their_slope():
    # log of a negative complex number is a number: its slope 1/z stays
    g = adcore.grad(lambda t: np.real(np.log(t * (1 + 0j) - 3.0)))(1.0)
    np.testing.assert_allclose(g, -0.5, rtol=1e-14)
