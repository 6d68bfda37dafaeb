"""The sparsity plugin's hooks: its rule kind's contract, the core ops' `sparsity` rules, its backend."""

from __future__ import annotations

from adcore import hookimpl
from adcore.hookspecs import RuleKind
from adcore_sparsity.backend import SparsityBackend
from adcore_sparsity.rules import RULES

# The contract of the "sparsity" rules this plugin brings: the output (a shape-and-dtype stand-in in
# a global pattern), then the op's inputs -> one dependency pattern per input (None, DENSE or a
# sparse matrix): a SparsityRule (adcore_sparsity.extend). An op flagged elementwise needs none.
SPARSITY = RuleKind(
    ("ans",),
    per_input=False,
    elementwise_by_flag=True,
    column=3,
    doc="(ans, *inputs) -> one pattern per input",
)

rule_kinds = {"sparsity": SPARSITY}  # declared as data: read when the plugin loads


@hookimpl
def adcore_register_rules(register) -> None:
    for op, rule in RULES.items():
        register("sparsity", op, rule)


@hookimpl
def adcore_register_backends(register) -> None:
    register(SparsityBackend())
