"""adcore.ops: every registered op by attribute or by name; iteration, `in`, len; clear misses."""

from __future__ import annotations

import pytest

import adcore
from adcore.plugins import get_registry


def test_attribute_and_item_are_the_same_op():
    assert adcore.ops.sin is adcore.ops["sin"]
    assert isinstance(adcore.ops.sin, adcore.OpSpec)
    assert adcore.ops.sin.name == "sin"


def test_contains():
    assert "sin" in adcore.ops
    assert "matmul" in adcore.ops
    assert "sine" not in adcore.ops
    assert 3 not in adcore.ops


def test_len_and_iteration_match_the_registry():
    names = list(adcore.ops)
    assert names == sorted(get_registry().ops)
    assert len(adcore.ops) == len(names)
    assert {"sin", "cos", "add", "sum", "matmul", "concatenate"} <= set(names)


def test_dir_lists_the_ops():
    assert {"sin", "sum", "concatenate"} <= set(dir(adcore.ops))


def test_unknown_op_by_item_is_a_key_error_suggesting_the_close_name():
    with pytest.raises(adcore.UnknownOpError) as info:
        adcore.ops["sine"]
    assert isinstance(info.value, KeyError)
    assert isinstance(info.value, adcore.AdcoreError)
    assert "'sine'" in str(info.value)
    assert "did you mean" in str(info.value)
    assert "'sin'" in str(info.value)


def test_unknown_op_by_attribute_is_an_attribute_error_suggesting_the_close_name():
    with pytest.raises(adcore.UnknownOpError) as info:
        _ = adcore.ops.sine
    assert isinstance(info.value, AttributeError)
    assert "'sin'" in str(info.value)


def test_hasattr_and_getattr_default_work_for_unknown_ops():
    assert not hasattr(adcore.ops, "sine")
    assert getattr(adcore.ops, "sine", None) is None


def test_unknown_op_without_a_close_name_has_no_suggestion():
    with pytest.raises(adcore.UnknownOpError) as info:
        adcore.ops["qqqqqqqq"]
    assert "did you mean" not in str(info.value)


def test_dunder_lookups_are_plain_attribute_errors():
    with pytest.raises(AttributeError) as info:
        _ = adcore.ops.__no_such_dunder__
    assert not isinstance(info.value, adcore.UnknownOpError)


def test_plugin_ops_appear_by_attribute_item_in_and_len(register_plugin):
    before = len(adcore.ops)

    class Plugin:
        @adcore.hookimpl
        def adcore_register_ops(self, register):
            register(adcore.OpSpec("ns_demo_op", lambda x: x + 1))

    register_plugin(Plugin(), "ns_demo")
    assert "ns_demo_op" in adcore.ops
    assert adcore.ops.ns_demo_op is adcore.ops["ns_demo_op"]
    assert adcore.ops.ns_demo_op(1.0) == 2.0
    assert len(adcore.ops) == before + 1
    assert "ns_demo_op" in list(adcore.ops)
    assert "ns_demo_op" in dir(adcore.ops)


def test_plugin_ops_disappear_when_the_plugin_is_removed(register_plugin):
    class Plugin:
        @adcore.hookimpl
        def adcore_register_ops(self, register):
            register(adcore.OpSpec("ns_gone_op", lambda x: x))

    register_plugin(Plugin(), "ns_gone")
    assert "ns_gone_op" in adcore.ops
    adcore.plugins.unregister_plugin("ns_gone")
    assert "ns_gone_op" not in adcore.ops
    with pytest.raises(adcore.UnknownOpError):
        adcore.ops["ns_gone_op"]
