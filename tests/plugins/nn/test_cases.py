"""adcore_nn.cases: the plugin registers its composite cases, and their gradients agree across
backends (reverse, forward, symbolic, source and finite differences) in float64 and keep float32."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_nn.cases import CASES, NN_BATCH_NORM_CROSS_ENTROPY, nn_batch_norm_cross_entropy

import adcore
from adcore.plugins import get_registry


def test_the_cases_are_registered_by_the_nn_plugin():
    registry = get_registry()
    for case in CASES:
        assert registry.cases[case.name] is case
    assert registry.plugins["nn"].cases == [case.name for case in CASES]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("backend", ["forward", "symbolic", "source"])
def test_the_gradients_agree_with_reverse_and_finite_differences(case, backend):
    (sample,) = case.samples(np.random.default_rng(0), np.float64)
    reverse = adcore.grad(case.fn, argnums=case.argnums)(*sample.args)
    other = adcore.grad(case.fn, argnums=case.argnums, backend=backend)(*sample.args)
    numeric = adcore.grad(case.fn, argnums=case.argnums, backend="numeric", method="richardson")(*sample.args)
    for r, o, n in zip(reverse, other, numeric):
        assert np.abs(r).max() > 1e-3  # a gradient that is not trivially zero
        np.testing.assert_allclose(o, r, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(n, r, rtol=1e-6, atol=1e-9)


def test_float32_stays_float32():
    for case in CASES:
        (sample,) = case.samples(np.random.default_rng(0), np.float32)
        value, grads = adcore.value_and_grad(case.fn, argnums=case.argnums)(*sample.args)
        assert value.dtype == np.float32 and all(g.dtype == np.float32 for g in grads)


def test_batch_norm_case_by_hand():
    (sample,) = NN_BATCH_NORM_CROSS_ENTROPY.samples(np.random.default_rng(0), np.float64)
    x, w, b = sample.args
    z = (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5) * w + b
    lp = z - np.log(np.exp(z).sum(1, keepdims=True))
    want = -lp[np.arange(4), [0, 2, 1, 2]].mean()
    assert nn_batch_norm_cross_entropy(x, w, b) == pytest.approx(want, rel=1e-12)
