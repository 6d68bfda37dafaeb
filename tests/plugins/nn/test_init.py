"""adcore_nn.init: torch.nn.init's formulas and bounds, in place into NumPy arrays, from a generator."""

from __future__ import annotations

import math

import numpy as np
import pytest
from adcore_nn import init

from adcore.errors import InvalidInputError, InvalidValueError


def rng(seed=0):
    return np.random.default_rng(seed)


def assert_uniform(w, bound):
    """w looks like U(-bound, bound): inside the bound, reaching near it, mean 0 and variance bound**2/3."""
    n = w.size
    assert np.all(np.abs(w) <= np.asarray(bound, w.dtype))
    assert np.abs(w).max() > 0.99 * bound
    assert abs(w.mean()) < 5 * bound / math.sqrt(3 * n)
    assert w.var() == pytest.approx(bound**2 / 3, rel=0.03)


def assert_normal(w, std, mean=0.0):
    n = w.size
    assert abs(w.mean() - mean) < 5 * std / math.sqrt(n)
    assert w.std() == pytest.approx(std, rel=0.03)


def test_calculate_gain_is_torchs_table():
    assert init.calculate_gain("linear") == 1
    assert init.calculate_gain("conv2d") == 1
    assert init.calculate_gain("sigmoid") == 1
    assert init.calculate_gain("tanh") == 5.0 / 3
    assert init.calculate_gain("relu") == math.sqrt(2.0)
    assert init.calculate_gain("leaky_relu") == math.sqrt(2.0 / (1 + 0.01**2))
    assert init.calculate_gain("leaky_relu", math.sqrt(5)) == math.sqrt(2.0 / 6)
    assert init.calculate_gain("selu") == 0.75
    with pytest.raises(InvalidValueError, match="unsupported nonlinearity 'swish'"):
        init.calculate_gain("swish")
    with pytest.raises(InvalidValueError, match="negative_slope"):
        init.calculate_gain("leaky_relu", True)


def test_fans_of_linear_and_conv_weights():
    assert init._calculate_fan_in_and_fan_out(np.zeros((5, 3))) == (3, 5)
    assert init._calculate_fan_in_and_fan_out(np.zeros((8, 4, 3, 2))) == (24, 48)
    with pytest.raises(InvalidValueError, match="fewer than 2 dimensions"):
        init._calculate_fan_in_and_fan_out(np.zeros(3))


def test_kaiming_uniform_bound_is_gain_times_sqrt_3_over_fan():
    w = np.empty((300, 200), np.float32)
    out = init.kaiming_uniform_(w, a=math.sqrt(5), generator=rng())
    assert out is w and w.dtype == np.float32
    gain = math.sqrt(2.0 / (1 + 5))
    assert_uniform(w, gain * math.sqrt(3.0 / 200))
    w = np.empty((300, 20, 3, 3))
    init.kaiming_uniform_(w, mode="fan_out", nonlinearity="relu", generator=rng(1))
    assert_uniform(w, math.sqrt(2.0) * math.sqrt(3.0 / (300 * 9)))


def test_kaiming_normal_std_is_gain_over_sqrt_fan():
    w = np.empty((400, 250))
    init.kaiming_normal_(w, nonlinearity="relu", generator=rng())
    assert_normal(w, math.sqrt(2.0) / math.sqrt(250))


def test_xavier_bounds():
    w = np.empty((300, 200))
    init.xavier_uniform_(w, gain=2.0, generator=rng())
    assert_uniform(w, 2.0 * math.sqrt(6.0 / 500))
    init.xavier_normal_(w, generator=rng(2))
    assert_normal(w, math.sqrt(2.0 / 500))


def test_uniform_normal_constant_zeros_ones():
    w = np.empty((100_000,), np.float32)
    init.uniform_(w, -0.5, 2.5, generator=rng())
    assert w.min() >= -0.5 and w.max() <= 2.5 and w.mean() == pytest.approx(1.0, abs=0.02)
    init.normal_(w, 3.0, 0.5, generator=rng())
    assert_normal(w, 0.5, mean=3.0)
    assert np.all(init.constant_(w, 0.25) == np.float32(0.25))
    assert np.all(init.zeros_(w) == 0) and np.all(init.ones_(w) == 1)
    assert w.dtype == np.float32


def test_a_generator_gives_reproducible_draws_and_manual_seed_reseeds_the_default():
    a, b = np.empty((4, 3)), np.empty((4, 3))
    init.kaiming_uniform_(a, generator=rng(7))
    init.kaiming_uniform_(b, generator=rng(7))
    np.testing.assert_array_equal(a, b)
    init.manual_seed(3)
    init.normal_(a)
    init.manual_seed(3)
    init.normal_(b)
    np.testing.assert_array_equal(a, b)
    init.normal_(b)
    assert not np.array_equal(a, b)
    seeded = init.manual_seed(5)
    assert init.default_generator() is seeded


def test_bad_targets_and_generators_are_typed_errors_and_the_next_call_works():
    with pytest.raises(InvalidInputError, match="uniform_: fills a float32 or float64 numpy array"):
        init.uniform_(np.zeros(3, np.int64))
    with pytest.raises(InvalidInputError, match="normal_: fills"):
        init.normal_([0.0, 1.0])
    frozen = np.zeros(3)
    frozen.flags.writeable = False
    with pytest.raises(InvalidInputError, match="read-only"):
        init.zeros_(frozen)
    with pytest.raises(InvalidInputError, match="numpy.random.Generator"):
        init.uniform_(np.zeros(3), generator=np.random.RandomState(0))
    with pytest.raises(InvalidValueError, match="mode 'fan_avg'"):
        init.kaiming_uniform_(np.zeros((2, 2)), mode="fan_avg")
    with pytest.raises(InvalidInputError, match="seed must be an int"):
        init.manual_seed(1.5)
    assert np.all(init.ones_(np.zeros(3)) == 1)


def test_zero_element_arrays_warn_as_torch():
    with pytest.warns(UserWarning, match="zero-element"):
        init.kaiming_uniform_(np.zeros((0, 3)))
