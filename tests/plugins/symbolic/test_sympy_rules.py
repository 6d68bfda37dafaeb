"""Every registered op with a `sympy` rule agrees with the reverse backend on its sample
domains: the op's value traced through sympy, differentiated exactly and compiled, against
the hand-written VJP rules. Ops without a `sympy` rule are reported unsupported by name."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_symbolic.sympy_rules import NO_SYMPY_FORM
from op_cases import float_inputs, has_differentiable_inputs, op_cases

import adcore
from adcore.errors import MissingRuleError
from adcore.plugins import get_registry

# every op that has a sympy rule (test_every_core_op_has_a_sympy_rule: every core op has one)
CASES = [
    case
    for case in op_cases(np.float64)
    if has_differentiable_inputs(case.values[0]) and case.values[0].name in get_registry().rules["sympy"]
]


@pytest.mark.parametrize("op, sample", CASES)
def test_symbolic_agrees_with_reverse(op, sample):
    args, params = list(sample.args), sample.params
    for i in float_inputs(op, sample):

        def through_ops(x, i=i):
            return op(*args[:i], x, *args[i + 1 :], **params)

        try:
            value, (symbolic,) = adcore.get_backend("symbolic").value_and_jacobian(
                through_ops,
                (np.asarray(args[i]),),
                (0,),  # as the API passes it: an array
            )
        except MissingRuleError as e:  # a rule refusing some params by name (norm's 'nuc'): typed
            pytest.skip(str(e))
        reverse = adcore.jacobian(through_ops, backend="reverse")(args[i])
        assert symbolic.shape == reverse.shape
        np.testing.assert_allclose(symbolic, reverse, rtol=1e-12, atol=1e-12, err_msg=f"{op.name} input {i}")
        np.testing.assert_allclose(value, op.impl(*args, **params), rtol=1e-12, atol=1e-12)


def test_every_core_op_has_a_sympy_rule():
    # the core catalogue's ops; a plugin's op may bring no sympy rule (symbolic then refuses it
    # with MissingRuleError, which conformance counts as unsupported)
    registry = get_registry()
    missing = [
        n
        for n in registry.plugins["core"].ops
        if has_differentiable_inputs(registry.ops[n])
        and n not in registry.rules["sympy"]
        and n not in NO_SYMPY_FORM  # sympy cannot express them (eigh, svd, fft): refused, documented
    ]
    assert missing == []


class _OnlyVjp:
    """A third-party op with a VJP rule and no sympy rule."""

    @adcore.hookimpl
    def adcore_register_ops(self, register):
        register(adcore.OpSpec("vjp_only", lambda x: 3 * x, elementwise=True))

    @adcore.hookimpl
    def adcore_register_rules(self, register):
        register("vjp", "vjp_only", (lambda g, ans, x: 3 * g,))


class _WithSympyRule(_OnlyVjp):
    """The same op, with a sympy rule a third party adds through adcore_register_rules."""

    @adcore.hookimpl
    def adcore_register_rules(self, register):
        register("vjp", "vjp_only", (lambda g, ans, x: 3 * g,))
        register("sympy", "vjp_only", lambda x: 3 * x)


def test_an_op_without_a_rule_is_reported_unsupported_by_symbolic(register_plugin):
    register_plugin(_OnlyVjp(), "only_vjp")
    f = lambda x: adcore.numpy.sum(adcore.ops.vjp_only(x) * 2.0)  # noqa: E731
    x = np.array([1.5, 2.0])
    np.testing.assert_array_equal(adcore.grad(f, backend="reverse")(x), [6.0, 6.0])
    with pytest.raises(adcore.MissingRuleError) as info:
        adcore.grad(f, backend="symbolic")(x)
    message = str(info.value)
    for word in [
        "'vjp_only'",
        "'sympy'",
        "'symbolic'",
        "backends that can: numeric, reverse",
        "register('sympy'",
    ]:
        assert word in message, f"{word!r} not in {message!r}"
    assert not get_registry().supports(adcore.get_backend("symbolic"), get_registry().ops["vjp_only"])
    # nothing is left broken: the next call, on a supported op, works
    np.testing.assert_allclose(adcore.grad(lambda v: adcore.numpy.sum(v**2), backend="symbolic")(x), 2 * x)


def test_a_third_party_sympy_rule_makes_its_op_symbolic(register_plugin):
    register_plugin(_WithSympyRule(), "with_sympy")
    f = lambda x: adcore.numpy.sum(adcore.numpy.sin(adcore.ops.vjp_only(x)))  # noqa: E731
    x = np.array([0.5, -1.0])
    np.testing.assert_allclose(adcore.grad(f, backend="symbolic")(x), 3 * np.cos(3 * x), rtol=1e-15)
