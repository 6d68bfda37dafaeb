"""The rule tables as a whole, for each kind the first-party backends need: no op left out,
no rule where the op declares no derivative."""

from __future__ import annotations

import pytest
from op_cases import has_differentiable_inputs

from adcore.plugins import get_registry

KINDS = ["vjp", "jvp"]


def plugin_ops(registry) -> dict:
    """The ops plugins registered: a custom_vjp / custom_jvp function's op (pseudo-plugin "user")
    has no samples, and its rules are the user's (adcore/custom.py)."""
    user = registry.plugins.get("user")
    return {name: op for name, op in registry.ops.items() if user is None or name not in user.ops}


def test_every_op_has_samples():
    # an op without samples would silently escape every per-op check
    assert [name for name, op in plugin_ops(get_registry()).items() if op.samples is None] == []


@pytest.mark.parametrize("kind", KINDS)
def test_every_differentiable_op_has_a_rule(kind):
    registry = get_registry()
    missing = [
        name
        for name, op in plugin_ops(registry).items()
        if has_differentiable_inputs(op)
        and name not in registry.rules[kind]
        and not op.traceable  # a traceable op's body is differentiated where it has no rule
    ]
    assert missing == []
    # the exemption is not vacuous: stop_gradient is in the catalogue and has no derivative at all
    assert not has_differentiable_inputs(registry.ops["stop_gradient"])


@pytest.mark.parametrize("kind", KINDS)
def test_no_rule_serves_a_non_differentiable_input(kind):
    # `where`'s condition must have None: a rule there would leak a derivative into a constant
    registry = get_registry()
    leaks = [
        (name, i)
        for name, rule in registry.rules[kind].items()
        if isinstance(rule, tuple)
        for i, entry in enumerate(rule)
        if entry is not None and not registry.ops[name].is_differentiable(i)
    ]
    assert leaks == []
