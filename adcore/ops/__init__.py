"""Every registered op, by attribute or by name: `adcore.ops.sin`, `adcore.ops["sin"]`.

The core catalogue's ops are attributes of this module from the start; ops that
plugins register are looked up in the registry on first access.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator

from adcore import core
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
# the tracing core's operators call these (x + y is core.OPS.add)
vars(core.OPS).update({spec.name: spec for spec in CORE_OPS})

# NumPy functions that are Python over the ops above (np.interp, np.split, np.linalg.svd, ...):
# each module registers them in core.NUMPY_FUNCTIONS when imported, after the ops it calls exist
from adcore.ops import composite_linalg, composite_shapes, numpy_functions  # noqa: E402, F401


def _registry():
    return core.get_registry()  # set by adcore.plugins, a layer above this one


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
