"""The plugin's hooks (entry point `special` in the "adcore" group): ops, rules, a case."""

from __future__ import annotations

from adcore import hookimpl
from adcore_special.cases import SPECIAL_CHAIN
from adcore_special.jvps import JVPS
from adcore_special.ops import OPS
from adcore_special.sympy_rules import SYMPY_RULES
from adcore_special.vjps import VJPS


@hookimpl
def adcore_register_ops(register) -> None:
    for spec in OPS:
        register(spec)


@hookimpl
def adcore_register_rules(register) -> None:
    for kind, table in (("vjp", VJPS), ("jvp", JVPS), ("sympy", SYMPY_RULES)):
        for op, rule in table.items():
            register(kind, op, rule)


@hookimpl
def adcore_register_cases(register) -> None:
    register(SPECIAL_CHAIN)
