"""The plugin's hooks (entry point `scipy` in the "adcore" group): each SciPy module's ops, rules, cases."""

from __future__ import annotations

from importlib.util import find_spec

from adcore import hookimpl
from adcore_scipy.batch_rules import BATCH_RULES
from adcore_scipy.integrate import ops as integrate_ops
from adcore_scipy.integrate import rules as integrate_rules
from adcore_scipy.linalg import ops as linalg_ops
from adcore_scipy.linalg import rules as linalg_rules
from adcore_scipy.signal import ops as signal_ops
from adcore_scipy.signal import rules as signal_rules
from adcore_scipy.special import cases as special_cases
from adcore_scipy.special import ops as special_ops
from adcore_scipy.special import rules as special_rules
from adcore_scipy.stats import cases as stats_cases
from adcore_scipy.stats import ops as stats_ops
from adcore_scipy.stats import rules as stats_rules

OPS_MODULES = (special_ops, stats_ops, linalg_ops, signal_ops, integrate_ops)
RULE_MODULES = (special_rules, stats_rules, linalg_rules, signal_rules, integrate_rules)
CASE_MODULES = (special_cases, stats_cases, linalg_ops, signal_ops, integrate_ops)


def _sparsity_rules() -> dict:
    """The ops' `sparsity` rules, written in the sparsity plugin's rule form: none without that plugin
    (there is then no backend to read them, and this plugin still loads)."""
    if find_spec("adcore_sparsity") is None:
        return {}
    from adcore_scipy.sparsity_rules import SPARSITY_RULES

    return SPARSITY_RULES


@hookimpl
def adcore_register_ops(register) -> None:
    for module in OPS_MODULES:
        for spec in module.OPS:
            register(spec)


@hookimpl
def adcore_register_rules(register) -> None:
    for module in RULE_MODULES:
        for kind, table in (("vjp", module.VJPS), ("jvp", module.JVPS), ("sympy", module.SYMPY_RULES)):
            for op, rule in table.items():
                register(kind, op, rule)
    for op, rule in _sparsity_rules().items():
        register("sparsity", op, rule)
    for op, rule in BATCH_RULES.items():  # (adcore-batching declares the kind: without it, set aside)
        register("batch", op, rule)


@hookimpl
def adcore_register_cases(register) -> None:
    for module in CASE_MODULES:
        for case in module.CASES:
            register(case)
