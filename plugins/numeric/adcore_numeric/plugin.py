"""The numeric plugin's hook: its backend (it needs no rules)."""

from __future__ import annotations

from adcore import hookimpl
from adcore_numeric.backend import NumericBackend


@hookimpl
def adcore_register_backends(register) -> None:
    register(NumericBackend())
