"""The plugin's hooks (entry point `kernels` in the "adcore" group): ops, rules, a case, optimizers."""

from __future__ import annotations

from importlib.util import find_spec

from adcore import hookimpl
from adcore_kernels.batch_rules import BATCH_RULES
from adcore_kernels.cases import SMALL_CNN
from adcore_kernels.jvps import JVPS
from adcore_kernels.ops import OPS
from adcore_kernels.optim import OPTIMIZERS
from adcore_kernels.sympy_rules import SYMPY_RULES
from adcore_kernels.vjps import VJPS


def _sparsity_rules() -> dict:
    """The ops' `sparsity` rules, written in the sparsity plugin's rule form: none without that plugin
    (there is then no backend to read them, and this plugin still loads)."""
    if find_spec("adcore_sparsity") is None:
        return {}
    from adcore_kernels.sparsity_rules import SPARSITY_RULES

    return SPARSITY_RULES


@hookimpl
def adcore_register_ops(register) -> None:
    for spec in OPS:
        register(spec)


@hookimpl
def adcore_register_rules(register) -> None:
    for kind, table in (
        ("vjp", VJPS),
        ("jvp", JVPS),
        ("sympy", SYMPY_RULES),
        ("sparsity", _sparsity_rules()),
        ("batch", BATCH_RULES),  # (adcore-batching declares the kind: without it, set aside)
    ):
        for op, rule in table.items():
            register(kind, op, rule)


@hookimpl
def adcore_register_cases(register) -> None:
    register(SMALL_CNN)


@hookimpl
def adcore_register_optimizers(register) -> None:
    for name, factory in OPTIMIZERS.items():
        register(name, factory)
