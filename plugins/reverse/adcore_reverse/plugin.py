"""The reverse plugin's hooks: its VJP table and its backend."""

from __future__ import annotations

from adcore import hookimpl
from adcore_reverse.backend import ReverseBackend
from adcore_reverse.vjps import VJPS


@hookimpl
def adcore_register_rules(register) -> None:
    for op, rule in VJPS.items():
        register("vjp", op, rule)


@hookimpl
def adcore_register_backends(register) -> None:
    register(ReverseBackend())
