"""The sparsity rules of the neural-network ops (adcore_sparsity/rules/nn.py): at every sample and
kink, against reverse mode's Jacobian, and by hand: softmax couples a fibre, relu's kink."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_sparsity.extend import Unknown
from adcore_sparsity.rules import RULES
from plugins.sparsity.rule_check import check_op, check_rule, dense_pattern

import adcore

NN = "sigmoid relu softplus softmax log_softmax logsumexp stop_gradient".split()


def global_pattern(name: str, x: np.ndarray, **params) -> np.ndarray:
    out = adcore.ops[name].impl(x, **params)
    (dep,) = RULES[name](Unknown(np.shape(out), out.dtype), Unknown(x.shape, x.dtype), **params)
    return dense_pattern(dep, np.size(out), x.size)


@pytest.mark.parametrize("name", NN)
def test_rule_holds_at_every_sample(name):
    assert check_op(name) > 0


@pytest.mark.parametrize(
    "name, order",
    [("sigmoid", "nonlinear"), ("relu", "linear"), ("softmax", "nonlinear"), ("logsumexp", "nonlinear")],
)
def test_orders(name, order):
    assert RULES[name].order == order and RULES[name].exact


def test_relu_at_its_kink():
    x = np.array([-1.0, 0.0, 1.0])
    check_rule("relu", (x,), {})
    (dep,) = RULES["relu"](adcore.ops["relu"].impl(x), x)
    np.testing.assert_array_equal(dense_pattern(dep, 3, 3), np.diag([False, False, True]))
    np.testing.assert_array_equal(global_pattern("relu", x), np.eye(3, dtype=bool))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_couples_each_fibre(name):
    x = np.zeros((2, 3))
    rows = np.kron(np.eye(2), np.ones((3, 3))) != 0
    np.testing.assert_array_equal(global_pattern(name, x, axis=-1), rows)
    columns = np.tile(np.eye(3), (2, 2)) != 0  # out[i, j] depends on x[:, j]
    np.testing.assert_array_equal(global_pattern(name, x, axis=0), columns)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_over_an_axis_of_one_is_constant(name):
    x = np.array([[0.5], [2.0]])
    assert not global_pattern(name, x, axis=1).any()
    check_rule(name, (x,), {"axis": 1})


def test_logsumexp_reduces_its_axes():
    x = np.zeros((2, 3))
    np.testing.assert_array_equal(global_pattern("logsumexp", x, axis=1), np.kron(np.eye(2), np.ones(3)) != 0)
    np.testing.assert_array_equal(
        global_pattern("logsumexp", x, axis=None, keepdims=True), np.ones((1, 6), bool)
    )


def test_stop_gradient_has_no_dependency():
    assert not global_pattern("stop_gradient", np.ones(4)).any()
