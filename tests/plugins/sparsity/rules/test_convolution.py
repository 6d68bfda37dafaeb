"""The sparsity rules of convolve and correlate (rules/convolution.py)."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_sparsity.extend import Unknown
from plugins.sparsity.rule_check import check_op, dense_pattern

import adcore


def rule(name: str):
    return adcore.plugins.get_registry().rules["sparsity"][name]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", ["convolve", "correlate"])
def test_rule_holds_at_the_op_samples(name, dtype):
    assert check_op(name, dtype=dtype) > 0


@pytest.mark.parametrize("name", ["convolve", "correlate"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_a_constant_stencil_gives_a_band(name, mode):
    """A traced signal against a constant 3-point stencil with a zero tap: the exact band, which is
    the Jacobian's structure."""
    stencil = np.array([1.0, 0.0, -2.0])
    x = np.random.default_rng(4).standard_normal(50)
    out = getattr(np, name)(x, stencil, mode)
    deps = rule(name)(Unknown(out.shape, np.float64), Unknown(x.shape, np.float64), stencil, mode=mode)
    jac = np.asarray(
        adcore.jacobian(lambda z: getattr(adcore.ops, name)(z, stencil, mode=mode), backend="reverse")(x)
    )
    assert np.array_equal(dense_pattern(deps[0], out.size, x.size), jac != 0)
    assert (jac != 0).sum() < 3 * x.size  # the zero tap is no dependency


def test_both_traced_is_bilinear_with_full_windows():
    deps = rule("convolve")(Unknown((6,), np.float64), Unknown((4,), np.float64), Unknown((3,), np.float64))
    pa, pv = dense_pattern(deps[0], 6, 4), dense_pattern(deps[1], 6, 3)
    assert pa.sum(axis=1).tolist() == [1, 2, 3, 3, 2, 1] and pv.sum(axis=1).tolist() == [1, 2, 3, 3, 2, 1]
    assert rule("convolve").order == "multilinear"


def test_0d_inputs_are_length_one():
    deps = rule("convolve")(
        Unknown((3,), np.float64), Unknown((), np.float64), Unknown((3,), np.float64), mode="same"
    )
    assert np.array_equal(dense_pattern(deps[0], 3, 1), np.ones((3, 1), dtype=bool))
    assert np.array_equal(dense_pattern(deps[1], 3, 3), np.eye(3, dtype=bool))
