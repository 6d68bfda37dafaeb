"""The core op catalogue as a plugin: essential, registered before any other."""

from __future__ import annotations

from adcore.hookspecs import hookimpl
from adcore.ops import elementwise, linalg, nn, reductions, shapes
from adcore.spec import OpSpec

CORE_OPS: tuple[OpSpec, ...] = tuple(
    {
        spec.name: spec
        for module in (elementwise, reductions, linalg, shapes, nn)
        for spec in vars(module).values()
        if isinstance(spec, OpSpec)
    }.values()
)


@hookimpl
def adcore_register_ops(register) -> None:
    for spec in CORE_OPS:
        register(spec)
