"""The sparsity plugin's hooks: the core ops' `sparsity` rules, its backend."""

from __future__ import annotations

from adcore import hookimpl
from adcore_sparsity.backend import SparsityBackend
from adcore_sparsity.rules import RULES


@hookimpl
def adcore_register_rules(register) -> None:
    for op, rule in RULES.items():
        register("sparsity", op, rule)


@hookimpl
def adcore_register_backends(register) -> None:
    register(SparsityBackend())
