"""The "sympy" rule table itself, which the modules of this package fill, one module per
module of the core catalogue (adcore/ops/), and sympy and the backend's functions, imported
when a rule first runs (`each` and `reduce_with` are adcore.extend's): the rule forms are in
the package's docstring."""

from __future__ import annotations

from typing import Any

from adcore.extend import LazyModule

sp = LazyModule("sympy")
fn = LazyModule("adcore_symbolic.functions")

SYMPY_RULES: dict[str, Any] = {}
# ops sympy has no form of, with why: they get no rule (the backend reports them unsupported)
NO_SYMPY_FORM: dict[str, str] = {}


def defsympy(op: str, rule: Any) -> None:
    """The op's output built from its inputs' sympy expressions."""
    if op in SYMPY_RULES:
        raise ValueError(f"op {op!r} has two sympy rules in adcore_symbolic.sympy_rules")
    SYMPY_RULES[op] = rule
