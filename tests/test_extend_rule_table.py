"""adcore.extend.RuleTable: the one table form both first-party rule tables (vjp, jvp) are."""

from __future__ import annotations

import pytest
from adcore_forward.jvps import JVPS
from adcore_reverse.vjps import VJPS

from adcore.extend import RuleTable


def test_an_op_is_in_a_table_once():
    table = RuleTable("VJP", "my_plugin.vjps")
    table.add("my_op", (None,))
    assert table == {"my_op": (None,)}
    with pytest.raises(ValueError, match="op 'my_op' has two VJP rules in my_plugin.vjps"):
        table.add("my_op", (None,))
    assert table["my_op"] == (None,)  # the first entry stays


def test_the_reverse_and_forward_tables_are_rule_tables():
    assert isinstance(VJPS, RuleTable) and (VJPS.kind, VJPS.package) == ("VJP", "adcore_reverse.vjps")
    assert isinstance(JVPS, RuleTable) and (JVPS.kind, JVPS.package) == ("JVP", "adcore_forward.jvps")
    assert "sin" in VJPS and "sin" in JVPS
