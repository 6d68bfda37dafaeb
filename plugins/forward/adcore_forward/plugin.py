"""The forward plugin's hooks: its JVP table and its backend."""

from __future__ import annotations

from adcore import hookimpl
from adcore_forward.backend import ForwardBackend
from adcore_forward.jvps import JVPS


@hookimpl
def adcore_register_rules(register) -> None:
    for op, rule in JVPS.items():
        register("jvp", op, rule)


@hookimpl
def adcore_register_backends(register) -> None:
    register(ForwardBackend())
