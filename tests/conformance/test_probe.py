"""What check_grads differentiates: pytree leaves and outputs flattened and named, large leaves
seen along orthonormal directions (the Jacobian in t is J V)."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
import adcore.numpy as anp
from adcore.conformance.probe import JointProbe, Probe, flatten
from adcore.errors import InvalidInputError


def test_a_large_leaf_is_seen_along_orthonormal_directions_whose_jacobian_is_j_v():
    x, small = np.linspace(-1.0, 1.0, 100), np.array([0.5, 2.0])
    flat, leaves, names, _ = flatten(lambda x, s: anp.sum(x**2) * anp.sum(s), (x, small))
    probe = Probe.build(flat, leaves, names, full=64, directions=8, rng=np.random.default_rng(0))
    basis = probe.bases[0]
    assert basis.shape == (100, 8) and np.allclose(basis.T @ basis, np.eye(8))
    assert probe.bases[1] is None  # two elements: entry by entry
    call = probe.call()
    assert call.args[0].shape == (8,) and call.args[1] is leaves[1]
    assert call.fn(*call.args) == np.sum(x**2) * 2.5  # at t = 0 the probe is f itself
    jt, js = adcore.jacobian(call.fn, argnums=(0, 1), backend="reverse")(*call.args)
    # d/dt of sum((x + V t)^2) * 2.5 at t = 0 is 2.5 * 2 x V; d/ds is sum(x^2) per entry
    np.testing.assert_allclose(jt, 5.0 * x @ basis, rtol=1e-12)
    np.testing.assert_allclose(js, np.full(2, np.sum(x**2)), rtol=1e-12)
    assert probe.at(0, (3,)) == "argument 0 along random direction 3" and probe.at(1, (1,)) == "argument 1[1]"


def test_a_pytree_output_is_joined_and_each_entry_named_by_its_path():
    flat, leaves, names, outputs = flatten(
        lambda p: {"b": p["w"][0] * 2.0, "a": anp.reshape(p["w"], (2, 2)) * 1.0}, ({"w": np.arange(4.0)},)
    )
    assert names == ["argument 0['w']"]
    joined = flat(*leaves)  # leaves in sorted key order: out['a'] (4 entries), then out['b']
    np.testing.assert_array_equal(joined, [0.0, 1.0, 2.0, 3.0, 0.0])
    assert outputs.name((3,)) == "out['a'][1, 1]" and outputs.name((4,)) == "out['b']"


def test_an_integer_leaf_is_refused_by_its_path():
    with pytest.raises(InvalidInputError, match=r"argument 0\['n'\] has dtype int64"):
        flatten(lambda p: p["x"] * p["n"], ({"x": np.ones(2), "n": np.arange(2)},))


def test_a_joint_probe_moves_every_leaf_along_shared_directions_whose_jacobian_is_the_gradient_times_v():
    x, y = np.array([1.0, 2.0]), np.array(3.0)
    flat, leaves, _, _ = flatten(lambda x, y: anp.sum(x * x) * y, (x, y))
    probe = JointProbe.build(flat, leaves, directions=2, rng=np.random.default_rng(0))
    call = probe.call()
    (jt,) = adcore.jacobian(call.fn, argnums=(0,), backend="reverse")(*call.args)
    gradient = np.concatenate([2 * x * y, [np.sum(x * x)]])  # d/dx, d/dy of sum(x^2) y
    np.testing.assert_allclose(jt, gradient @ probe.basis, rtol=1e-12)
    assert probe.at(0, (1,)) == "every argument along joint random direction 1"
