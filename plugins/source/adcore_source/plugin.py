"""The source plugin's hook: its backend (its rules are the reverse and forward plugins')."""

from __future__ import annotations

from adcore import hookimpl
from adcore_source.backend import SourceBackend


@hookimpl
def adcore_register_backends(register) -> None:
    register(SourceBackend())
