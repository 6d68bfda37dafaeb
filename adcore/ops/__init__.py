"""Every registered op, by attribute or by name: `adcore.ops.sin`, `adcore.ops["sin"]`.

The core catalogue's ops are attributes of this module from the start; ops that
plugins register are looked up in the registry on first access.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator

from adcore import core
from adcore.ops import elementwise, linalg, nn, plugin, reductions, shapes  # noqa: F401
from adcore.ops.plugin import CORE_OPS
from adcore.spec import OpSpec

globals().update({spec.name: spec for spec in CORE_OPS})
# the tracing core's operators call these (x + y is core.OPS.add), and their results are real
vars(core.OPS).update({spec.name: spec for spec in CORE_OPS})
core.REAL_OPS.update(CORE_OPS)


def _registry():
    from adcore.plugins import get_registry

    return get_registry()


def __getattr__(name: str) -> OpSpec:
    if name.startswith("__"):
        raise AttributeError(name)
    return _registry().op(name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_registry().ops))


class _OpsModule(types.ModuleType):
    """This module, indexable by op name and iterable over op names."""

    def __getitem__(self, name: str) -> OpSpec:
        return _registry().op(name)

    def __contains__(self, name: object) -> bool:
        return name in _registry().ops

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(_registry().ops))

    def __len__(self) -> int:
        return len(_registry().ops)


sys.modules[__name__].__class__ = _OpsModule
