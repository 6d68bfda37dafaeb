"""The adcore_register_optimizers hook and `adcore.optimizer`: by name, clashes, roll-back, errors."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
from adcore import plugins
from adcore.plugins import PluginWarning


class HalvingStep:
    """A toy optimizer: each step moves the params halfway to zero minus lr * grad."""

    def __init__(self, params, lr=1.0):
        self.params, self.lr = list(params), lr

    def step(self, grads):
        for p, g in zip(self.params, grads):
            p *= 0.5
            p -= self.lr * g


def _optimizer_plugin(*names: str):
    class OptimizerPlugin:
        @adcore.hookimpl
        def adcore_register_optimizers(self, register):
            for name in names:
                register(name, HalvingStep)

    return OptimizerPlugin()


def test_a_registered_optimizer_is_found_by_name_with_its_hyperparameters(register_plugin):
    register_plugin(_optimizer_plugin("halving"), "toy")
    assert "halving" in adcore.optimizers()
    w = np.array([4.0, -2.0])
    opt = adcore.optimizer("halving", [w], lr=0.5)
    opt.step([np.array([1.0, 1.0])])
    np.testing.assert_array_equal(w, [1.5, -1.5])
    assert plugins.get_registry().plugins["toy"].optimizers == ["halving"]


def test_an_unknown_optimizer_names_the_installed_ones_and_suggests(register_plugin):
    register_plugin(_optimizer_plugin("halving"), "toy")
    with pytest.raises(
        adcore.UnknownOptimizerError, match="did you mean 'halving'.*installed optimizers: .*halving"
    ):
        adcore.optimizer("halvign", [np.zeros(2)])
    assert isinstance(adcore.UnknownOptimizerError("x"), KeyError)


def test_a_second_plugin_registering_the_same_optimizer_is_rejected_naming_both(register_plugin):
    register_plugin(_optimizer_plugin("halving"), "first")
    with pytest.warns(PluginWarning, match="'second'.*optimizer 'halving'.*'first' already registered"):
        register_plugin(_optimizer_plugin("halving", "other"), "second")
    registry = plugins.get_registry()
    assert registry.optimizers["halving"] is HalvingStep
    assert "other" not in registry.optimizers  # the clashing plugin is rolled back whole
    assert registry.plugins["second"].optimizers == []


@pytest.mark.parametrize("name, factory", [("not an identifier", HalvingStep), ("fine", "not callable")])
def test_an_invalid_registration_is_reported_by_plugin_name(register_plugin, name, factory):
    class Bad:
        @adcore.hookimpl
        def adcore_register_optimizers(self, register):
            register(name, factory)

    with pytest.warns(PluginWarning, match="'bad'.*register\\(name, factory\\)"):
        register_plugin(Bad(), "bad")
    assert "bad" in plugins.failures()
