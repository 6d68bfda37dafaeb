"""Joint rules (adcore.hookspecs.Joint): a third-party variadic op's rule for all its inputs at once."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_forward.backend import JVP
from adcore_reverse.backend import VJP

import adcore
from adcore import hookimpl
from adcore.hookspecs import Joint, RuleKind
from adcore.registry import JointRules, PluginRecord, Registry


def _weighted_sum(*xs, weights=None):
    """sum_i weights[i] * xs[i]: a variadic op whose every input's share reads all the weights."""
    return sum(w * x for w, x in zip(weights, xs))


class _WeightedSumPlugin:
    def __init__(self) -> None:
        self.calls = {"vjp": 0, "jvp": 0}

    @hookimpl
    def adcore_register_ops(self, register) -> None:
        register(adcore.OpSpec("weighted_sum", _weighted_sum, variadic=True, params=("weights",)))

    @hookimpl
    def adcore_register_rules(self, register) -> None:
        def vjps(g, ans, *xs, weights=None):
            self.calls["vjp"] += 1
            return [w * g for w in weights]

        def jvps(ts, ans, *xs, weights=None):
            self.calls["jvp"] += 1
            return sum(w * t for w, t in zip(weights, ts) if t is not None)

        register("vjp", "weighted_sum", Joint(vjps))
        register("jvp", "weighted_sum", Joint(jvps))


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_a_third_party_variadic_op_differentiates_through_its_joint_rule_called_once(
    register_plugin, backend
):
    plugin = _WeightedSumPlugin()
    registry = register_plugin(plugin, "weighted_sum_plugin")
    op = registry.ops["weighted_sum"]
    x, y = np.array([1.0, 2.0]), np.array([3.0, -1.0])

    def f(x, y):
        return np.sum(op(x, np.sin(y), x * y, weights=(2.0, 3.0, 5.0)))

    gx, gy = adcore.grad(f, argnums=(0, 1), backend=backend)(x, y)
    np.testing.assert_allclose(gx, 2.0 + 5.0 * y)
    np.testing.assert_allclose(gy, 3.0 * np.cos(y) + 5.0 * x)
    kind = "vjp" if backend == "reverse" else "jvp"
    assert plugin.calls[kind] == 1  # one call for the three inputs


def test_a_joint_rule_is_kept_as_joint_rules_and_refused_by_a_kind_without_a_joint_contract():
    registry = Registry()
    registry.plugins["p"] = PluginRecord("p")
    registry.kinds.update(vjp=VJP, jvp=JVP, plain=RuleKind(("t",), per_input=True))
    registry.add_op(
        adcore.OpSpec("weighted_sum", _weighted_sum, variadic=True, params=("weights",)), plugin="p"
    )
    registry.add_rule(
        "vjp", "weighted_sum", Joint(lambda g, ans, *xs, weights=None: [g] * len(xs)), plugin="p"
    )
    rules = registry.rules["vjp"]["weighted_sum"]
    assert isinstance(rules, JointRules)
    assert rules.joint(1.0, None, 1.0, 2.0) == [1.0, 1.0]
    with pytest.raises(adcore.PluginError, match="one call|joint"):
        rules[0](1.0, None, 1.0)  # a backend must call .joint, not a rule per input
    with pytest.raises(adcore.PluginError, match="does not take"):
        registry.add_rule("plain", "weighted_sum", Joint(lambda t, *xs, weights=None: t), plugin="p")
    with pytest.raises(adcore.PluginError, match=r"\*args"):
        registry.add_rule("jvp", "weighted_sum", Joint(lambda ts, ans, x: ts), plugin="p")
