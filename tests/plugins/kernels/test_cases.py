"""adcore_kernels.cases: the small CNN is registered by the plugin and differentiates alike everywhere."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_kernels.cases import SMALL_CNN

import adcore
from adcore.plugins import get_registry


def test_the_small_cnn_is_registered_by_the_kernels_plugin():
    registry = get_registry()
    assert registry.cases["small_cnn"] is SMALL_CNN
    assert registry.plugins["kernels"].cases == ["small_cnn"]


@pytest.mark.parametrize("backend", ["forward", "symbolic"])
def test_the_small_cnn_gradients_agree_with_reverse_and_with_finite_differences(backend):
    (sample,) = SMALL_CNN.samples(np.random.default_rng(0), np.float64)
    argnums = SMALL_CNN.argnums
    reverse = adcore.grad(SMALL_CNN.fn, argnums=argnums)(*sample.args)
    other = adcore.grad(SMALL_CNN.fn, argnums=argnums, backend=backend)(*sample.args)
    numeric = adcore.grad(SMALL_CNN.fn, argnums=argnums, backend="numeric", method="richardson")(*sample.args)
    for r, o, n in zip(reverse, other, numeric):
        assert np.abs(r).max() > 1e-3  # a gradient that is not trivially zero
        np.testing.assert_allclose(o, r, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(n, r, rtol=1e-7, atol=1e-9)
