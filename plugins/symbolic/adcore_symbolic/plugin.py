"""The symbolic plugin's hooks: sympy rule table and backend (no sympy import)."""

from __future__ import annotations

from adcore import hookimpl
from adcore_symbolic.backend import SymbolicBackend
from adcore_symbolic.sympy_rules import SYMPY_RULES


@hookimpl
def adcore_register_rules(register) -> None:
    for op, rule in SYMPY_RULES.items():
        register("sympy", op, rule)


@hookimpl
def adcore_register_backends(register) -> None:
    register(SymbolicBackend())
