"""The symbolic plugin's hooks: its rule kind's contract, sympy rule table and backend (no sympy import)."""

from __future__ import annotations

from adcore import hookimpl
from adcore.hookspecs import RuleKind
from adcore_symbolic.backend import SymbolicBackend
from adcore_symbolic.sympy_rules import SYMPY_RULES

# The contract of the "sympy" rules this plugin brings: sympy expressions for the op's inputs -> the
# output's expression (one callable per op).
SYMPY = RuleKind((), per_input=False, column=2, doc="(*input expressions) -> the output's expression")

rule_kinds = {"sympy": SYMPY}  # declared as data: read when the plugin loads


@hookimpl
def adcore_register_rules(register) -> None:
    for op, rule in SYMPY_RULES.items():
        register("sympy", op, rule)


@hookimpl
def adcore_register_backends(register) -> None:
    register(SymbolicBackend())
