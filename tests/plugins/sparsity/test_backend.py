"""The sparsity backend: registered as `sparsity`, its dense 0/1 Jacobians through adcore.jacobian,
exact_for, the dense fallback's warning, typed errors, color()."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from adcore_sparsity import SparsityBackend, SparsityWarning

import adcore
from adcore import OpSpec
from adcore.core import _stack


def backend():
    return adcore.plugins.get_registry().backend("sparsity")


def test_registered_with_what_it_can_do():
    be = backend()
    assert "sparsity" in adcore.backends() and isinstance(be, SparsityBackend)
    assert (be.name, be.kinds, be.builds, be.pattern) == ("sparsity", ("sparsity",), "jacobian", True)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_jacobian_is_the_dense_01_pattern_in_the_arguments_dtype(dtype):
    x = np.arange(1.0, 7.0, dtype=dtype).reshape(2, 3)
    f = lambda x: np.sin(x[:, 1:]) * x[:, :1]  # noqa: E731
    jac = adcore.jacobian(f, backend="sparsity")(x)
    assert jac.dtype == dtype and jac.shape == (2, 2, 2, 3)
    assert set(np.unique(jac)) <= {0, 1}
    forward = adcore.jacobian(f, backend="forward")(x)
    np.testing.assert_array_equal(jac != 0, forward != 0)


def test_value_and_jacobian_over_several_argnums():
    x, y = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0])
    f = lambda x, y: x[:2] * y + x[2]  # noqa: E731
    value, (jx, jy) = backend().value_and_jacobian(f, (x, y), (0, 1))
    np.testing.assert_allclose(value, f(x, y))
    np.testing.assert_array_equal(jx, [[1, 0, 1], [0, 1, 1]])
    np.testing.assert_array_equal(jy, np.eye(2))
    jx2, jy2 = adcore.jacobian(f, argnums=(0, 1), backend="sparsity")(x, y)
    np.testing.assert_array_equal(jx2, jx)
    np.testing.assert_array_equal(jy2, jy)


def test_value_and_jacobian_local_is_a_backend_option():
    x = np.array([-1.0, 2.0, 0.5])
    f = lambda x: np.maximum(x, 0.0)  # noqa: E731
    _, (glob,) = backend().value_and_jacobian(f, (x,), (0,))
    value, (local,) = backend().value_and_jacobian(f, (x,), (0,), local=True)
    np.testing.assert_array_equal(glob, np.eye(3))
    np.testing.assert_array_equal(local, np.diag([0.0, 1.0, 1.0]))
    np.testing.assert_allclose(value, [0.0, 2.0, 0.5])


def test_exact_for_is_each_rules_claim():
    be = backend()
    rules = adcore.plugins.get_registry().rules["sparsity"]
    assert be.exact_for("sin") is True
    assert all(be.exact_for(name) is bool(rule.exact) for name, rule in rules.items())
    assert not be.exact_for("no_such_op")


def running_sum(x):
    return np.cumsum(x, axis=-1)


def blur_plugin(name):
    class Plugin:
        @adcore.hookimpl
        def adcore_register_ops(self, register):
            register(OpSpec(name, running_sum, nin=1))

        @adcore.hookimpl
        def adcore_register_rules(self, register):
            register("jvp", name, (lambda t, ans, x: adcore.ops.cumsum(t, axis=-1),))

    return Plugin()


def test_an_op_without_a_rule_is_dense_with_one_warning_naming_op_and_plugin(register_plugin):
    register_plugin(blur_plugin("thirdparty_blur"), "blurs")
    be, x = backend(), np.arange(1.0, 6.0)
    f = lambda x: adcore.ops.thirdparty_blur(x[1:]) * 2.0  # noqa: E731
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = be.jacobian_pattern(f, (x,), 0).toarray()
        be.jacobian_pattern(f, (x,), 0)
    ours = [w for w in caught if issubclass(w.category, SparsityWarning)]
    assert len(ours) == 1, [str(w.message) for w in ours]
    assert "thirdparty_blur" in str(ours[0].message) and "'blurs'" in str(ours[0].message)
    want = np.zeros((4, 5), dtype=bool)
    want[:, 1:] = True
    np.testing.assert_array_equal(got, want)
    assert be.exact_for("thirdparty_blur") is False
    forward = adcore.jacobian(f, backend="forward")(x) != 0
    assert not (forward & ~got).any()


def test_an_elementwise_op_without_a_rule_gets_the_elementwise_pattern(register_plugin):
    class Plugin:
        @adcore.hookimpl
        def adcore_register_ops(self, register):
            register(OpSpec("thirdparty_cube", lambda x: x**3, nin=1, elementwise=True))

    register_plugin(Plugin(), "cubes")
    with warnings.catch_warnings():
        warnings.simplefilter("error", SparsityWarning)
        got = backend().jacobian_pattern(lambda x: adcore.ops.thirdparty_cube(x), (np.ones(4),), 0)
    np.testing.assert_array_equal(got.toarray(), np.eye(4, dtype=bool))
    assert backend().exact_for("thirdparty_cube") is True


def test_a_traceable_op_without_a_rule_is_traced_through_its_body(register_plugin):
    def body(x):
        return adcore.ops.getitem(x, index=slice(None, None, -1)) * x

    class Plugin:
        @adcore.hookimpl
        def adcore_register_ops(self, register):
            register(OpSpec("thirdparty_mirror", body, nin=1, traceable=True))

    register_plugin(Plugin(), "mirrors")
    with warnings.catch_warnings():
        warnings.simplefilter("error", SparsityWarning)
        got = backend().jacobian_pattern(lambda x: adcore.ops.thirdparty_mirror(x), (np.ones(5),), 0)
    np.testing.assert_array_equal(got.toarray(), np.eye(5, dtype=bool) | np.eye(5, dtype=bool)[::-1])
    assert backend().exact_for("thirdparty_mirror") is False


def test_a_rule_that_breaks_is_a_plugin_error_naming_the_op(register_plugin):
    from adcore_sparsity.extend import SparsityRule

    class Plugin:
        @adcore.hookimpl
        def adcore_register_ops(self, register):
            register(OpSpec("thirdparty_bad", lambda x: x[:2], nin=1))

        @adcore.hookimpl
        def adcore_register_rules(self, register):
            register("sparsity", "thirdparty_bad", SparsityRule(lambda ans, x: (np.eye(3),)))

    register_plugin(Plugin(), "bads")
    with pytest.raises(adcore.PluginError, match="thirdparty_bad.*'bads'"):
        backend().jacobian_pattern(lambda x: adcore.ops.thirdparty_bad(x), (np.ones(3),), 0)


# --- typed errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "x, error",
    [
        (np.ones(3, dtype=complex), adcore.ComplexValueError),
        (np.arange(3), adcore.InvalidInputError),
        (np.ones(3, dtype=bool), adcore.InvalidInputError),
    ],
    ids=["complex", "int", "bool"],
)
def test_a_non_float_argument_is_a_typed_error(x, error):
    with pytest.raises(error, match="argument 0"):
        backend().jacobian_pattern(np.sin, (x,), 0)


@pytest.mark.parametrize(
    "f",
    [lambda x: (x, x), lambda x: "x", lambda x: x > 0, lambda x: None],
    ids=["tuple", "str", "comparison", "none"],
)
def test_an_output_that_is_not_one_array_is_a_typed_error(f):
    with pytest.raises(adcore.InvalidOutputError):
        backend().jacobian_pattern(f, (np.ones(3),), 0)


def test_a_bad_argnum_and_a_bad_coloring_kind_are_typed_errors():
    with pytest.raises(adcore.InvalidInputError, match="argnum"):
        backend().jacobian_pattern(np.sin, (np.ones(3),), 1)
    with pytest.raises(adcore.InvalidInputError, match="coloring kind"):
        backend().color(np.eye(3, dtype=bool), "diagonal")


def test_the_next_call_works_after_every_error():
    depth = len(_stack())
    for x, f in [
        (np.ones(2, dtype=complex), np.sin),
        (np.ones(2), lambda x: (x,)),
        (np.ones(2), lambda x: 1 / 0),
    ]:
        with pytest.raises((adcore.AdcoreError, ZeroDivisionError)):
            backend().jacobian_pattern(f, (x,), 0)
        assert len(_stack()) == depth
    np.testing.assert_array_equal(backend().jacobian_pattern(np.cos, (np.ones(2),), 0).toarray(), np.eye(2))


# --- coloring ---------------------------------------------------------------------------------


def test_color_delegates_to_the_coloring_module():
    pytest.importorskip("adcore_sparsity.coloring")
    be, n = backend(), 30
    x = np.linspace(0.0, 1.0, n)
    tri = be.jacobian_pattern(
        lambda x: np.concatenate([x[:1], x[:-2] - 2 * x[1:-1] + x[2:], x[-1:]]), (x,), 0
    )
    coloring = be.color(tri, "column")
    assert coloring.kind == "column" and coloring.ncolors == 3 and coloring.lower_bound == 3
    arrow = be.jacobian_pattern(lambda x: np.concatenate([np.sum(x, keepdims=True), x[1:] ** 2]), (x,), 0)
    assert be.color(arrow, "row").ncolors == 2
    hess = be.hessian_pattern(lambda x: np.sum(np.sin(x[:-1] + x[1:])), (x,), 0)
    star = be.color(hess, "star")
    assert star.kind == "star" and star.ncolors <= 4
