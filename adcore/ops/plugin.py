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


@hookimpl
def adcore_register_cases(register) -> None:
    # imported here, not at the top: the cases are written with adcore.numpy, which needs this
    # module's CORE_OPS, and the registry (not `import adcore`) is what needs them
    from adcore.conformance.cases import BUILTIN_CASES

    for case in BUILTIN_CASES:
        register(case)
