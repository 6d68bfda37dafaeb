"""adcore.registry: ops, rule tables and backends, who registered each, clashes, checks, roll-back."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_forward.backend import JVP
from adcore_reverse.backend import VJP
from adcore_symbolic.backend import SYMPY

import adcore
from adcore.registry import PluginRecord, Registry


def _registry(*plugins: str) -> Registry:
    """A registry knowing the first-party kinds' contracts, as the backends that bring them declare."""
    registry = Registry()
    for name in plugins:
        registry.plugins[name] = PluginRecord(name)
    registry.kinds.update(vjp=VJP, jvp=JVP, sympy=SYMPY)
    return registry


def _unary(name: str = "twice", **kwargs) -> adcore.OpSpec:
    return adcore.OpSpec(name, lambda x: 2 * x, **kwargs)


class _Backend:
    def __init__(self, name: str, kinds: tuple[str, ...] = ("vjp",)) -> None:
        self.name = name
        self.kinds = kinds


# --- ops ---------------------------------------------------------------------------------


def test_add_op_records_the_op_and_its_plugin():
    registry = _registry("p")
    spec = _unary(numpy=(np.cumsum,))
    registry.add_op(spec, plugin="p")
    assert registry.op("twice") is spec
    assert registry.numpy_ops[np.cumsum] is spec
    assert registry.plugins["p"].ops == ["twice"]


def test_add_op_rejects_what_is_not_an_opspec():
    registry = _registry("p")
    with pytest.raises(adcore.PluginError, match="'p'.*OpSpec"):
        registry.add_op("twice", plugin="p")


def test_second_plugin_registering_an_op_is_rejected_naming_both():
    registry = _registry("first", "second")
    first = _unary()
    registry.add_op(first, plugin="first")
    with pytest.raises(adcore.PluginError) as info:
        registry.add_op(_unary(), plugin="second")
    message = str(info.value)
    assert "'first'" in message
    assert "'second'" in message
    assert "'twice'" in message
    assert registry.op("twice") is first


def test_the_same_plugin_registering_an_op_twice_is_rejected():
    registry = _registry("p")
    registry.add_op(_unary(), plugin="p")
    with pytest.raises(adcore.PluginError, match="already registered"):
        registry.add_op(_unary(), plugin="p")


def test_two_ops_mapping_the_same_numpy_function_clash_and_the_second_leaves_nothing_behind():
    registry = _registry("first", "second")
    first = _unary("hypot_a", numpy=(np.hypot,))
    registry.add_op(first, plugin="first")
    with pytest.raises(adcore.PluginError) as info:
        registry.add_op(_unary("hypot_b", numpy=(np.cumsum, np.hypot)), plugin="second")
    message = str(info.value)
    for word in ["'second'", "numpy.hypot", "'hypot_b'", "'first'", "ADCORE_BLOCK_PLUGINS=second"]:
        assert word in message, f"{word!r} not in {message!r}"
    assert registry.numpy_ops == {np.hypot: first}  # np.cumsum, checked first, was not taken either
    assert "hypot_b" not in registry.ops
    assert registry.plugins["second"].ops == []
    registry.add_op(_unary("hypot_b"), plugin="second")  # the op name itself was not taken
    assert registry.op("hypot_b").name == "hypot_b"


def test_one_op_listing_a_numpy_function_under_two_aliases_is_one_mapping():
    registry = _registry("p")
    spec = _unary("absolute", numpy=(np.abs, np.absolute))  # the same ufunc object
    registry.add_op(spec, plugin="p")
    assert registry.numpy_ops == {np.abs: spec}


def test_op_lookup_miss_keeps_the_closing_quote():
    # "no op named 'x" lost its quote on the way to the CLI (issue 15, class 12)
    with pytest.raises(adcore.UnknownOpError) as info:
        _registry().op("x")
    assert str(info.value) == "no op named 'x'"


def test_op_lookup_miss_suggests_close_names():
    registry = _registry("p")
    registry.add_op(_unary("sin"), plugin="p")
    with pytest.raises(adcore.UnknownOpError, match="did you mean 'sin'"):
        registry.op("sine")


# --- rules -------------------------------------------------------------------------------


def test_add_rule_records_the_rule_and_its_plugin():
    registry = _registry("ops", "rules")
    registry.add_op(_unary(), plugin="ops")
    rule = (lambda g, ans, x: 2 * g,)
    registry.add_rule("vjp", "twice", rule, plugin="rules")
    assert registry.rules["vjp"]["twice"] is rule
    assert registry.plugins["rules"].rules == [("vjp", "twice")]


def test_rule_for_an_unknown_op_is_rejected():
    registry = _registry("p")
    with pytest.raises(adcore.PluginError, match="'p'.*unknown op 'nope'"):
        registry.add_rule("vjp", "nope", (lambda g, ans, x: g,), plugin="p")


def test_second_rule_of_the_same_kind_for_an_op_is_rejected_naming_both():
    registry = _registry("a", "b")
    registry.add_op(_unary(), plugin="a")
    registry.add_rule("vjp", "twice", (lambda g, ans, x: 2 * g,), plugin="a")
    with pytest.raises(adcore.PluginError) as info:
        registry.add_rule("vjp", "twice", (lambda g, ans, x: 2 * g,), plugin="b")
    assert "'a'" in str(info.value)
    assert "'b'" in str(info.value)


def test_rules_of_different_kinds_for_one_op_coexist():
    registry = _registry("p")
    registry.add_op(_unary(), plugin="p")
    registry.add_rule("vjp", "twice", (lambda g, ans, x: 2 * g,), plugin="p")
    registry.add_rule("jvp", "twice", (lambda t, ans, x: 2 * t,), plugin="p")
    assert set(registry.rules) >= {"vjp", "jvp"}


@pytest.mark.parametrize(
    "rule",
    [
        (lambda g, ans, x: g,),
        (None,),
        (lambda g, ans, x, axis=None: g,),  # a param as keyword is not an input
        (lambda g, ans, x, extra=1.0: g,),  # a defaulted extra positional may take the slot
        (lambda *args: args[0],),
    ],
    ids=["exact", "none", "param-keyword", "defaulted", "varargs"],
)
def test_rules_that_fit_the_op_are_accepted(rule):
    registry = _registry("p")
    registry.add_op(_unary(params=("axis",)), plugin="p")
    registry.add_rule("vjp", "twice", rule, plugin="p")
    assert registry.rules["vjp"]["twice"] is rule


@pytest.mark.parametrize(
    ("rule", "words"),
    [
        ((lambda g, x: g,), ["takes 2", "must take 3"]),  # forgot `ans`
        ((lambda g, ans, x, y: g,), ["takes 4", "must take 3"]),
        ((lambda g, ans, x: g, lambda g, ans, x: g), ["2 entries", "1 input"]),
        (("not callable",), ["not callable"]),
        (42, ["tuple with one callable", "per input"]),
        # hookspecs.adcore_register_rules: a non-variadic op's rule is a tuple, one entry per input
        (lambda g, ans, x: g, ["tuple"]),
    ],
    ids=["too-few", "too-many", "tuple-too-long", "entry-not-callable", "not-a-rule", "bare-callable"],
)
def test_rules_that_do_not_fit_the_op_are_rejected(rule, words):
    registry = _registry("p")
    registry.add_op(_unary(), plugin="p")
    with pytest.raises(adcore.PluginError) as info:
        registry.add_rule("vjp", "twice", rule, plugin="p")
    message = str(info.value)
    assert "'p'" in message
    assert "'twice'" in message
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"
    assert "twice" not in registry.rules["vjp"]


def test_binary_op_rule_takes_both_inputs():
    registry = _registry("p")
    registry.add_op(adcore.OpSpec("mul2", np.multiply, nin=2), plugin="p")
    with pytest.raises(adcore.PluginError, match="must take 4"):
        registry.add_rule("vjp", "mul2", (lambda g, ans, x: g, lambda g, ans, x: g), plugin="p")
    registry.add_rule("vjp", "mul2", (lambda g, ans, x, y: g * y, None), plugin="p")


def test_rule_of_a_kind_without_leading_arguments():
    registry = _registry("p")
    registry.add_op(_unary(), plugin="p")
    registry.add_rule(
        "sympy", "twice", lambda x: 2 * x, plugin="p"
    )  # the sympy kind has no leading arguments
    with pytest.raises(adcore.PluginError, match="must take 1"):
        registry.add_rule("brand_new_kind", "twice", (lambda a, b: a,), plugin="p")


def test_variadic_op_rule_must_take_argnum_first_and_inputs_as_varargs():
    registry = _registry("p")
    registry.add_op(adcore.OpSpec("cat2", np.concatenate, variadic=True, params=("axis",)), plugin="p")
    with pytest.raises(adcore.PluginError, match=r"\*args"):
        registry.add_rule("vjp", "cat2", lambda i, g, ans, x: g, plugin="p")
    with pytest.raises(adcore.PluginError, match="one callable"):
        registry.add_rule("vjp", "cat2", (lambda i, g, ans, *xs: g,), plugin="p")
    registry.add_rule("vjp", "cat2", lambda i, g, ans, *xs, axis=0: g, plugin="p")


def test_rule_lookup_miss_names_the_op_the_backend_and_the_backends_that_can():
    registry = _registry("p")
    registry.add_op(_unary(), plugin="p")
    registry.add_rule("jvp", "twice", (lambda t, ans, x: 2 * t,), plugin="p")
    registry.add_backend(_Backend("rev", ("vjp",)), plugin="p")
    registry.add_backend(_Backend("fwd", ("jvp",)), plugin="p")
    rules = registry.rule("vjp", registry.op("twice"), "rev")  # raises where a derivative would flow
    with pytest.raises(adcore.MissingRuleError) as info:
        rules[0]
    assert isinstance(info.value, NotImplementedError)
    message = str(info.value)
    for word in ["'twice'", "'vjp'", "'rev'", "backends that can: fwd", "register('vjp', 'twice', rule)"]:
        assert word in message, f"{word!r} not in {message!r}"


def test_a_missing_rule_of_one_kind_is_raised_at_once():
    registry = _registry("p")
    registry.add_op(_unary(), plugin="p")
    with pytest.raises(adcore.MissingRuleError, match="'twice' has no 'sympy' rule"):
        registry.rule("sympy", registry.op("twice"), "symbolic")
    registry.rule("vjp", registry.op("twice"), "rev")  # the registry still answers after the error


def test_a_missing_rule_at_an_input_that_is_not_differentiable_is_none():
    registry = _registry("p")
    registry.add_op(adcore.OpSpec("pick", np.where, nin=3, differentiable=(1, 2)), plugin="p")
    rules = registry.rule("vjp", registry.op("pick"), "rev")
    assert rules[0] is None
    with pytest.raises(adcore.MissingRuleError, match="'pick'"):
        rules[2]


def test_a_traceable_op_without_a_rule_has_none_and_every_backend_supports_it():
    # spec.OpSpec.traceable: the trace differentiates the body instead of refusing
    registry = _registry("p")
    registry.add_op(_unary(traceable=True), plugin="p")
    assert registry.rule("vjp", registry.op("twice"), "rev") is None
    assert registry.rule("sympy", registry.op("twice"), "symbolic") is None
    assert registry.supports(_Backend("both", ("jvp", "vjp")), registry.op("twice"))


def test_a_rule_of_a_traceable_op_is_used_when_there_is_one():
    registry = _registry("p")
    registry.add_op(_unary(traceable=True), plugin="p")
    rule = (lambda g, ans, x: 2 * g,)
    registry.add_rule("vjp", "twice", rule, plugin="p")
    assert registry.rule("vjp", registry.op("twice"), "rev") is rule


def test_a_variadic_rule_is_stored_per_input_with_the_position_bound():
    # registry.normalized: every trace reads rules[i](leading..., *inputs) for every op
    registry = _registry("p")
    spec = adcore.OpSpec("cat2", np.concatenate, variadic=True, params=("axis",), differentiable=(0, 2))
    registry.add_op(spec, plugin="p")
    registry.add_rule("vjp", "cat2", lambda i, g, ans, *xs, axis=0: (i, g, len(xs), axis), plugin="p")
    rules = registry.rule("vjp", spec, "rev")
    assert rules[2]("g", "ans", "x0", "x1", "x2", axis=1) == (2, "g", 3, 1)
    assert rules[1] is None  # not differentiable: the trace needs no check of its own


def test_a_rule_of_a_kind_that_is_not_per_input_is_stored_as_given():
    registry = _registry("p")
    registry.add_op(adcore.OpSpec("cat2", np.concatenate, variadic=True, params=("axis",)), plugin="p")
    rule = lambda *xs, axis=0: xs[0]  # noqa: E731
    registry.add_rule("sympy", "cat2", rule, plugin="p")
    assert registry.rules["sympy"]["cat2"] is rule


def test_supports_checks_every_kind_a_backend_needs():
    registry = _registry("p")
    registry.add_op(_unary(), plugin="p")
    registry.add_rule("jvp", "twice", (lambda t, ans, x: 2 * t,), plugin="p")
    assert registry.supports(_Backend("fwd", ("jvp",)), registry.op("twice"))
    assert not registry.supports(_Backend("both", ("jvp", "vjp")), registry.op("twice"))


# --- backends ----------------------------------------------------------------------------


def test_add_backend_records_it():
    registry = _registry("p")
    backend = _Backend("mine")
    registry.add_backend(backend, plugin="p")
    assert registry.backend("mine") is backend
    assert registry.plugins["p"].backends == ["mine"]


@pytest.mark.parametrize(
    "backend", [object(), _Backend(""), _Backend(None)], ids=["no-attr", "empty", "none"]
)
def test_backend_without_a_name_is_rejected(backend):
    registry = _registry("p")
    with pytest.raises(adcore.PluginError, match="'p'.*no name"):
        registry.add_backend(backend, plugin="p")


def test_backend_clash_names_both_plugins():
    registry = _registry("a", "b")
    registry.add_backend(_Backend("mine"), plugin="a")
    with pytest.raises(adcore.PluginError) as info:
        registry.add_backend(_Backend("mine"), plugin="b")
    assert "'a'" in str(info.value)
    assert "'b'" in str(info.value)
    assert "'mine'" in str(info.value)


def test_a_reserved_backend_name_is_refused_to_every_other_plugin_even_before_its_owner_loads():
    registry = Registry(reserved={("backend", "reverse"): "reverse"})
    for name in ("impostor", "reverse"):
        registry.plugins[name] = PluginRecord(name)
    with pytest.raises(adcore.PluginError) as info:
        registry.add_backend(_Backend("reverse"), plugin="impostor")
    message = str(info.value)
    for word in ["'impostor'", "first-party plugin 'reverse'", "ADCORE_BLOCK_PLUGINS=impostor"]:
        assert word in message, f"{word!r} not in {message!r}"
    assert registry.backends == {}
    real = _Backend("reverse")
    registry.add_backend(real, plugin="reverse")
    assert registry.backend("reverse") is real


def test_backend_lookup_miss_lists_the_installed_ones():
    registry = _registry("p")
    registry.add_backend(_Backend("beta"), plugin="p")
    registry.add_backend(_Backend("alpha"), plugin="p")
    with pytest.raises(adcore.UnknownBackendError) as info:
        registry.backend("gamma")
    assert isinstance(info.value, KeyError)
    assert "'gamma'" in str(info.value)
    assert "installed backends: alpha, beta" in str(info.value)


def test_backend_lookup_miss_with_none_installed_says_none():
    with pytest.raises(adcore.UnknownBackendError, match="installed backends: none"):
        _registry().backend("reverse")


def test_unknown_backend_message_is_not_quoted_like_a_key():
    with pytest.raises(adcore.UnknownBackendError) as info:
        _registry().backend("x")
    assert str(info.value).startswith("no backend named")


# --- roll-back ---------------------------------------------------------------------------


def test_remove_plugin_undoes_everything_it_registered_and_nothing_else():
    registry = _registry("keep", "drop")
    kept = _unary("kept", numpy=(np.sin,))
    registry.add_op(kept, plugin="keep")
    registry.add_op(_unary("dropped", numpy=(np.cumsum,)), plugin="drop")
    registry.add_rule("vjp", "dropped", (lambda g, ans, x: g,), plugin="drop")
    registry.add_rule("vjp", "kept", (lambda g, ans, x: g,), plugin="keep")
    registry.add_backend(_Backend("dropped_backend"), plugin="drop")

    registry.remove_plugin("drop")

    assert "dropped" not in registry.ops
    assert "dropped" not in registry.rules["vjp"]
    assert "dropped_backend" not in registry.backends
    assert np.cumsum not in registry.numpy_ops
    assert registry.numpy_ops[np.sin] is kept
    assert registry.op("kept") is kept
    assert "kept" in registry.rules["vjp"]
    record = registry.plugins["drop"]
    assert (record.ops, record.rules, record.backends) == ([], [], [])


def test_after_remove_plugin_the_names_are_free_again():
    registry = _registry("drop", "next")
    registry.add_op(_unary(), plugin="drop")
    registry.add_backend(_Backend("mine"), plugin="drop")
    registry.remove_plugin("drop")
    registry.add_op(_unary(), plugin="next")
    registry.add_backend(_Backend("mine"), plugin="next")
    assert registry.plugins["next"].ops == ["twice"]


def test_a_miss_looks_for_named_functions_again_only_after_an_import(monkeypatch):
    # np.shape on a tracer misses on every call: it must not resolve every pending name each time
    import sys

    import adcore.registry as registry_module

    registry = _registry("p")
    spec = adcore.OpSpec("twice", lambda x: 2 * x, numpy=("adcore_test_later_module.twice",))
    registry.add_op(spec, plugin="p")
    resolved = []
    resolve = registry_module._resolve
    monkeypatch.setattr(registry_module, "_resolve", lambda name: resolved.append(name) or resolve(name))
    assert registry.numpy_op(np.shape) is None
    assert registry.numpy_op(np.shape) is None
    assert registry.numpy_op(np.ndim) is None
    assert resolved == ["adcore_test_later_module.twice"]  # looked for once
    module = type(sys)("adcore_test_later_module")
    module.twice = lambda x: 2 * x
    monkeypatch.setitem(sys.modules, module.__name__, module)
    assert registry.numpy_op(module.twice) is spec  # found once its module is imported
    assert registry.numpy_names == {}
