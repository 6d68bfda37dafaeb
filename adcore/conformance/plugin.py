"""Conformance's own plugin: the built-in composite cases, a part of the essential core plugin.

The cases live in this layer, above the registry; importing `adcore.conformance` hands this
plugin down (plugins.add_builtin), so the registry loads the cases only where conformance runs
and names no module above it. What it registers is the core's ("core" in `adcore plugins`).
"""

from __future__ import annotations

import sys

from adcore import hookspecs, plugins
from adcore.conformance.cases import BUILTIN_CASES


@hookspecs.hookimpl
def adcore_register_cases(register: hookspecs.RegisterCase) -> None:
    for case in BUILTIN_CASES:
        register(case)


plugins.add_builtin("conformance", sys.modules[__name__])
