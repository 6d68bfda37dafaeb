"""The batching plugin's hooks: it declares the rule kind "batch" and registers the core ops' rules."""

from __future__ import annotations

from adcore import hookimpl
from adcore.hookspecs import RuleKind
from adcore_batching.rules import BATCH_RULES

BATCH = RuleKind(
    leading=("dims",),
    per_input=False,
    elementwise_by_flag=True,  # adcore.extend.batching.elementwise, from the op's flag
    column=40,
    doc="(dims, *inputs, **params) -> (out, out_dim): dims[i] is input i's batch axis or None; "
    "NotImplemented runs the op once per batch element",
    without="vmap runs it once per batch element (the loop rule: right, slower)",
)


@hookimpl
def adcore_register_kinds(register) -> None:
    register("batch", BATCH)


@hookimpl
def adcore_register_rules(register) -> None:
    for op, rule in BATCH_RULES.items():
        register("batch", op, rule)
