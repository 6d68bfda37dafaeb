"""The gradient checker: it passes right rules, catches wrong ones, and its finite differences are accurate."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
from adcore.conformance import check_dtype_kept, check_vjp, numeric_jacobian
from adcore.plugins import PluginWarning
from adcore.spec import OpSpec, Sample

X = np.array([0.5, -1.2, 2.0])


def _plugin(ops: list[OpSpec], vjps: dict[str, tuple]) -> object:
    """A throwaway plugin registering `ops` and their "vjp" rules (pluggy wants a hashable object)."""

    class Plugin:
        @adcore.hookimpl
        def adcore_register_ops(self, register):
            for spec in ops:
                register(spec)

        @adcore.hookimpl
        def adcore_register_rules(self, register):
            for name, rule in vjps.items():
                register("vjp", name, rule)

    return Plugin()


def _cube_plugin() -> object:
    """Two ops computing x**3: one with the right VJP (3 x**2 g), one with a wrong one (2 x g)."""
    return _plugin(
        [OpSpec("cube_right", lambda x: x**3), OpSpec("cube_wrong", lambda x: x**3)],
        {"cube_right": (lambda g, ans, x: g * 3 * x * x,), "cube_wrong": (lambda g, ans, x: g * 2 * x,)},
    )


def test_a_wrong_rule_is_caught_and_its_right_twin_passes(register_plugin):
    registry = register_plugin(_cube_plugin(), "cubes")
    sample = Sample((X,))

    assert check_vjp(registry.ops["cube_right"], sample) == []
    failures = check_vjp(registry.ops["cube_wrong"], sample)
    assert {(f.op, f.argnum, f.check) for f in failures} == {
        ("cube_wrong", 0, "jacobian"),
        ("cube_wrong", 0, "dot_product"),
    }
    jacobian = next(f for f in failures if f.check == "jacobian")
    # 2x differs from (x**3)' = 3x**2 on all three diagonal entries (x is nowhere 0), and
    # the largest gap is at x = 2: 4 against 12
    assert "3 of 9 entries differ" in jacobian.message
    assert "worst at (2, 2)" in jacobian.message


def test_the_wrong_rule_is_caught_at_0d_too(register_plugin):
    registry = register_plugin(_cube_plugin(), "cubes")
    failures = check_vjp(registry.ops["cube_wrong"], Sample((np.array(2.0),)))
    assert [f.check for f in failures] == ["jacobian", "dot_product"]
    assert check_vjp(registry.ops["cube_right"], Sample((np.array(2.0),))) == []


def test_the_dot_product_test_catches_a_rule_only_right_for_one_hot_cotangents(register_plugin):
    # g * g equals g for the cotangent 1 a Jacobian sweep seeds a scalar output with, so
    # the Jacobian is right; the random cotangent of the dot-product test exposes it.
    plugin = _plugin(
        [OpSpec("sum_cubes", lambda x: np.sum(x**3))],
        {"sum_cubes": (lambda g, ans, x: g * g * 3 * x * x,)},
    )
    registry = register_plugin(plugin, "sum_cubes")
    failures = check_vjp(registry.ops["sum_cubes"], Sample((X,)))
    assert [(f.argnum, f.check) for f in failures] == [(0, "dot_product")]


def test_a_rule_for_a_non_differentiable_input_is_rejected_at_load(register_plugin):
    # x * s with s declared constant: a rule sending g * x to s must not load at all
    plugin = _plugin(
        [OpSpec("scale_leaky", np.multiply, nin=2, differentiable=(0,))],
        {"scale_leaky": (lambda g, ans, x, s: g * s, lambda g, ans, x, s: g * x)},
    )
    with pytest.warns(PluginWarning, match="not differentiable"):
        registry = register_plugin(plugin, "scales")
    assert "scale_leaky" not in registry.ops
    assert "input 1" in registry.plugins["scales"].error


def test_a_sealed_non_differentiable_input_passes(register_plugin):
    plugin = _plugin(
        [OpSpec("scale_sealed", np.multiply, nin=2, differentiable=(0,))],
        {"scale_sealed": (lambda g, ans, x, s: g * s, None)},
    )
    registry = register_plugin(plugin, "scales")
    assert check_vjp(registry.ops["scale_sealed"], Sample((X, np.array([3.0, -1.0, 0.5])))) == []


def test_a_dtype_promoting_impl_is_caught(register_plugin):
    plugin = _plugin(
        [OpSpec("double_f64", lambda x: np.asarray(x, dtype=np.float64) * 2)],
        {"double_f64": (lambda g, ans, x: g * 2,)},
    )
    registry = register_plugin(plugin, "double")
    failures = check_dtype_kept(registry.ops["double_f64"], Sample((X.astype(np.float32),)))
    assert [(f.argnum, f.check) for f in failures] == [(0, "dtype")]
    assert "'value': 'float64'" in failures[0].message  # the impl above casts to float64
    assert check_dtype_kept(adcore.ops.sin, Sample((X.astype(np.float32),))) == []


def test_a_raising_rule_is_reported_not_raised(register_plugin):
    def broken(g, ans, x):
        raise RuntimeError("rule exploded")

    registry = register_plugin(_plugin([OpSpec("explodes", np.sin)], {"explodes": (broken,)}), "explodes")
    failures = check_vjp(registry.ops["explodes"], Sample((X,)))
    assert [f.check for f in failures] == ["error"]
    assert "RuntimeError: rule exploded" in failures[0].message


def test_float32_is_checked_loosely_because_float32_rounding_is_1e_7():
    sample = Sample((X.astype(np.float32),))
    assert check_vjp(adcore.ops.sin, sample) == []
    # float32 cos(x) is off by ~eps32 = 1.2e-7 relative, far above an rtol of 1e-12
    tight = check_vjp(adcore.ops.sin, sample, rtol=1e-12, atol=0.0)
    assert "jacobian" in {f.check for f in tight}


def test_0d_and_empty_inputs_are_checked():
    assert check_vjp(adcore.ops.sin, Sample((np.array(0.7),))) == []
    assert check_vjp(adcore.ops.sin, Sample((np.zeros(0),))) == []
    assert check_vjp(adcore.ops.sum, Sample((np.zeros((0, 3)),), {"axis": 0})) == []


# --- numeric_jacobian, the reference every check compares against ---------------------


def test_numeric_jacobian_of_a_linear_map_is_its_matrix():
    a = np.array([[1.0, -2.0, 0.5], [3.0, 0.0, 4.0]])
    # the derivative of x -> A x is A; central differences are exact on linear maps up to rounding
    np.testing.assert_allclose(numeric_jacobian(lambda x: a @ x, X), a, rtol=1e-9, atol=1e-12)


def test_numeric_jacobian_of_cube_is_diag_3x2():
    x = np.array([[0.5, -1.2], [2.0, 3.0]])
    jac = numeric_jacobian(lambda x: x**3, x)
    assert jac.shape == (2, 2, 2, 2)
    expected = np.einsum("ij,ik,jl->ijkl", 3 * x**2, np.eye(2), np.eye(2))  # (x**3)' = 3x**2, elementwise
    np.testing.assert_allclose(jac, expected, rtol=1e-9, atol=1e-12)


def test_numeric_jacobian_shapes_for_0d_and_empty():
    jac = numeric_jacobian(np.sin, np.array(0.3))
    assert jac.shape == ()  # 0-d in, 0-d out: a 0-d Jacobian
    np.testing.assert_allclose(jac, np.cos(0.3), rtol=1e-9)  # sin' = cos
    assert numeric_jacobian(np.sin, np.zeros(0)).shape == (0, 0)
    assert numeric_jacobian(np.sum, np.zeros((0, 2))).shape == (0, 2)


def test_numeric_jacobian_step_scales_with_x():
    # log'(x) = 1/x. At x = 1e8 an absolute step of 6e-6 is below half the float64 spacing
    # there (1.5e-8 is the spacing, so x + h rounds badly); a step relative to |x| is not.
    np.testing.assert_allclose(numeric_jacobian(np.log, np.array(1e8)), 1e-8, rtol=1e-8)
