"""adcore.extend.partials: an elementwise op's partials, stated once, give both kinds of rule, with
values worked out by hand; the core's elementwise table is the one both backends' rules come from."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
from adcore.extend import jvp_rules, over, vjp_rules
from adcore.extend.elementwise_partials import PARTIALS
from adcore.plugins import get_registry


def test_a_unary_partial_multiplies_and_an_over_partial_divides():
    (jvp,) = jvp_rules(lambda ans, x: 3 * x)
    (vjp,) = vjp_rules(lambda ans, x: 3 * x)
    x, ans = np.array([1.0, 2.0]), None
    np.testing.assert_array_equal(jvp(np.ones((1, 2)), ans, x), [[3.0, 6.0]])
    np.testing.assert_array_equal(vjp(np.array([1.0, 2.0]), ans, x), [3.0, 12.0])
    (over_vjp,) = vjp_rules(over(lambda ans, x: x))
    np.testing.assert_array_equal(over_vjp(np.array([1.0, 1.0]), ans, x), [1.0, 0.5])


def test_a_binary_op_lifts_tangents_and_unbroadcasts_cotangents():
    jvps, vjps = jvp_rules(1, -1), vjp_rules(1, -1)  # subtract
    x, y = np.ones((2, 3)), np.ones(3)
    ans = x - y
    t = np.ones((4, 3))  # 4 directions of y
    assert jvps[1](t, ans, x, y).shape == (4, 1, 3)  # broadcasts to (4, 2, 3) under the output
    np.testing.assert_array_equal(jvps[1](t, ans, x, y), -np.ones((4, 1, 3)))
    g = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(vjps[0](g, ans, x, y), g)
    np.testing.assert_array_equal(vjps[1](g, ans, x, y), -g.sum(axis=0))


def test_none_is_no_rule_and_params_reach_a_partial_that_takes_them():
    assert vjp_rules(None, None) == (None, None)
    (vjp,) = vjp_rules(lambda ans, x, n=1: n * x)
    np.testing.assert_array_equal(vjp(np.ones(2), None, np.array([1.0, 2.0]), n=5), [5.0, 10.0])
    (plain,) = vjp_rules(lambda ans, x: x)  # an op's params, if any, are not passed on
    np.testing.assert_array_equal(plain(np.ones(2), None, np.array([1.0, 2.0]), n=5), [1.0, 2.0])


def test_three_inputs_take_the_general_form():
    vjps = vjp_rules(lambda ans, a, b, c: b * c, lambda ans, a, b, c: a * c, 2.0)
    a, b, c = np.array(2.0), np.array(3.0), np.ones(2)
    assert [float(np.asarray(r(np.ones(2), None, a, b, c)).sum()) for r in vjps] == [6.0, 4.0, 4.0]


@pytest.mark.parametrize("op", ["sin", "multiply", "log"])
def test_the_core_table_is_what_both_backends_differentiate_by(op):
    registry = get_registry()
    assert op in PARTIALS
    for kind in ("vjp", "jvp"):
        # each rule of these ops was compiled from the one table, not written twice
        assert all(r.__code__.co_filename == "<string>" for r in registry.rules[kind][op] if r)
    x = np.array([0.5, 1.5])
    for backend in ("reverse", "forward"):
        d = adcore.jacobian(
            lambda v: getattr(np, op)(v, v) if op == "multiply" else getattr(np, op)(v), backend=backend
        )(x)
        expected = {"sin": np.cos(x), "multiply": 2 * x, "log": 1 / x}[op]
        np.testing.assert_allclose(np.diag(d), expected, rtol=1e-15)


@pytest.mark.parametrize(
    "outer, inner", [("reverse", "reverse"), ("forward", "reverse"), ("forward", "forward")]
)
def test_a_second_derivative_nests_through_the_partials(outer, inner):
    x = np.array([0.3, 0.7])
    d2 = adcore.grad(
        lambda v: adcore.grad(lambda w: np.sum(np.sin(w)), backend=inner)(v).sum(), backend=outer
    )(x)
    np.testing.assert_allclose(d2, -np.sin(x), rtol=1e-14)
