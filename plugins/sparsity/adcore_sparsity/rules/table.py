"""The "sparsity" rule table itself, which the modules of this package fill, one module per
module of the core catalogue (adcore/ops/): the rule form is adcore_sparsity.extend's."""

from __future__ import annotations

from adcore_sparsity.extend import SparsityRule

RULES: dict[str, SparsityRule] = {}


def defsparsity(op: str, rule: SparsityRule) -> None:
    """The sparsity rule of `op` (one per op)."""
    if op in RULES:
        raise ValueError(f"op {op!r} has two sparsity rules in adcore_sparsity.rules")
    RULES[op] = rule
