"""The plugin's hook (entry point `nn` in the "adcore" group): composite conformance cases only."""

from __future__ import annotations

from adcore import hookimpl
from adcore_nn.cases import CASES


@hookimpl
def adcore_register_cases(register) -> None:
    for case in CASES:
        register(case)
