"""Every registered op's VJP against finite differences of its impl: a new op is checked with no new test."""

from __future__ import annotations

import numpy as np
import pytest
from op_cases import has_differentiable_inputs, op_cases, report

from adcore.conformance import check_dtype_kept, check_vjp
from adcore.plugins import get_registry


@pytest.mark.parametrize("op, sample", op_cases(np.float64))
def test_vjp_matches_finite_differences(op, sample):
    failures = check_vjp(op, sample, backend="reverse")
    assert failures == [], report(failures)


@pytest.mark.parametrize("op, sample", op_cases(np.float32))
def test_float32_in_float32_out(op, sample):
    failures = check_dtype_kept(op, sample, backend="reverse")
    assert failures == [], report(failures)


@pytest.mark.parametrize("op, sample", op_cases(np.float32))
def test_float32_vjp_is_loosely_right(op, sample):
    failures = check_vjp(op, sample, backend="reverse")
    assert failures == [], report(failures)


def test_every_op_has_samples():
    # an op without samples would silently escape every check above
    assert [name for name, op in get_registry().ops.items() if op.samples is None] == []


def test_every_differentiable_op_has_a_vjp_rule():
    registry = get_registry()
    missing = [
        name
        for name, op in registry.ops.items()
        if has_differentiable_inputs(op) and name not in registry.rules["vjp"]
    ]
    assert missing == []
    # the exemption is not vacuous: stop_gradient is in the catalogue and has no derivative at all
    assert not has_differentiable_inputs(registry.ops["stop_gradient"])


def test_no_vjp_rule_sends_a_cotangent_to_a_non_differentiable_input():
    # `where`'s condition must have None: a rule there would leak a derivative into a constant
    registry = get_registry()
    leaks = [
        (name, i)
        for name, rule in registry.rules["vjp"].items()
        if isinstance(rule, tuple)
        for i, entry in enumerate(rule)
        if entry is not None and not registry.ops[name].is_differentiable(i)
    ]
    assert leaks == []
