"""The reverse plugin's hooks: the contract of its rule kind, its VJP table and its backend."""

from __future__ import annotations

from adcore import hookimpl
from adcore.hookspecs import RuleKind
from adcore_reverse.backend import ReverseBackend
from adcore_reverse.vjps import VJPS

# The contract of the "vjp" rules this plugin brings: the cotangent of the output and the output,
# then the op's inputs -> the cotangent of this input (one rule per input, None where none flows).
VJP = RuleKind(("g", "ans"), per_input=True, column=0, doc="(g, ans, *inputs) -> this input's cotangent")

rule_kinds = {"vjp": VJP}  # declared as data: read when the plugin loads


@hookimpl
def adcore_register_rules(register) -> None:
    for op, rule in VJPS.items():
        register("vjp", op, rule)


@hookimpl
def adcore_register_backends(register) -> None:
    register(ReverseBackend())
