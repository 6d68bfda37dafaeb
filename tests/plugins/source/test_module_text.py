"""adcore_source.module_text: the generated module's import lines are one text for the same
imports, whatever order (set iteration order, which varies with PYTHONHASHSEED) they come in."""

from __future__ import annotations

import itertools

from adcore_source.module_text import _import_block


def test_one_name_imported_under_two_aliases_is_in_one_order() -> None:
    imports = [
        ("adcore.ops", "sum", "ops_sum"),
        ("adcore.ops", "sum", "fn"),
        ("adcore.ops", "add", "ops_add"),
    ]
    imports += [("math", None, "math"), ("adcore.ops", "Op", "Op")]
    blocks = {tuple(_import_block(list(order))) for order in itertools.permutations(imports)}
    assert blocks == {
        ("import math", "", "from adcore.ops import Op, add as ops_add, sum as fn, sum as ops_sum")
    }
