"""Every registered op, by attribute or by name: `adcore.ops.sin`, `adcore.ops["sin"]`.

The core catalogue's ops are attributes of this module from the start; ops that
plugins register are looked up in the registry on first access.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

from adcore.errors import PluginError
from adcore.ops import (
    complex_parts,
    contractions,
    convolution,
    cumulative,
    decompositions,
    eig,
    elementwise,
    fft,
    linalg,
    nn,
    norms,
    rearrangements,
    reductions,
    remainders,
    shapes,
)
from adcore.spec import OpSpec

# The core catalogue: registered first of all by the essential plugin "core" (adcore.plugins).
CORE_OPS: tuple[OpSpec, ...] = tuple(
    {
        spec.name: spec
        for module in (
            elementwise,
            remainders,
            complex_parts,
            reductions,
            cumulative,
            linalg,
            shapes,
            rearrangements,
            nn,
            contractions,
            decompositions,
            norms,
            eig,
            fft,
            convolution,
        )
        for spec in vars(module).values()
        if isinstance(spec, OpSpec)
    }.values()
)
globals().update({spec.name: spec for spec in CORE_OPS})

# NumPy functions that are Python over the ops above (np.interp, np.split, np.linalg.svd, ...), from
# each module's NUMPY_FUNCTIONS: NumPy's function on a traced value runs it (adcore.array_tracer)
from adcore.ops import composite_linalg, composite_shapes, numpy_functions, numpy_gradient  # noqa: E402

NUMPY_FUNCTIONS: dict[Any, Callable[..., Any]] = {
    function: python
    for module in (
        composite_linalg,
        composite_shapes,
        eig,
        fft,
        linalg,
        numpy_functions,
        numpy_gradient,
        reductions,
    )
    for function, python in module.NUMPY_FUNCTIONS.items()
}


def _no_registry() -> Any:
    raise PluginError("adcore's registry is not loaded: `import adcore` loads it, then use adcore")


_get_registry: Callable[[], Any] = _no_registry


def use_registry(get_registry: Callable[[], Any]) -> None:
    """How to reach the registry of ops and rules, handed down by adcore.plugins (a layer above):
    plugins' ops, and the op a NumPy function stands for, are found through it."""
    global _get_registry
    _get_registry = get_registry


def registry() -> Any:
    """The registry of ops and rules (adcore.registry.Registry), built on first use."""
    return _get_registry()


# The registry as loaded so far, handed down by adcore.plugins each time it changes (None before the
# first load and after a reset): the op a NumPy function stands for is one dict get in it per call,
# and a miss asks registry().numpy_op, which may load more plugins
loaded_registry: Any = None


def use_loaded_registry(registry: Any) -> None:
    global loaded_registry
    loaded_registry = registry


def __getattr__(name: str) -> OpSpec:
    if name.startswith("__"):
        raise AttributeError(name)
    return registry().op(name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(registry().complete().ops))


class _OpsModule(types.ModuleType):
    """This module, indexable by op name and iterable over op names."""

    def __getitem__(self, name: str) -> OpSpec:
        return registry().op(name)

    def __contains__(self, name: object) -> bool:
        return name in registry().complete().ops

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(registry().complete().ops))

    def __len__(self) -> int:
        return len(registry().complete().ops)


sys.modules[__name__].__class__ = _OpsModule
