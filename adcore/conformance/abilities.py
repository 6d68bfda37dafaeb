"""What each backend can do, read off its class (adcore.backend.Backend's ability attributes):
the engine decides everything by these, and names no backend."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from adcore.backend import Backend
from adcore.plugins import get_registry


def backend(name: str) -> Backend:
    return get_registry().backend(name)


def estimates(name: str) -> bool:
    """Whether the backend's derivatives are estimates with an error bound (Backend.estimates):
    compared within that bound, never a reference by themselves when an exact one agrees."""
    return backend(name).estimates


def estimate_options(name: str) -> dict[str, Any]:
    """The options that ask an estimating backend for its best estimate and its error bound."""
    return dict(backend(name).estimate_options)


def patterns(name: str) -> bool:
    """Whether the backend's Jacobians are dependency patterns (Backend.pattern): checked as sets
    against the reference's non-zeros (adcore.conformance.pattern), never a reference or an outer."""
    return backend(name).pattern


def exact_for(name: str, op: str) -> bool:
    """Whether a pattern backend claims its pattern of `op` is exact (no larger than the Jacobian's
    non-zeros at generic points): its `exact_for(op)`, False where it has none."""
    claims = getattr(backend(name), "exact_for", None)
    return bool(claims(op)) if claims is not None else False


def reference_order(names: Iterable[str]) -> list[str]:
    """`names` in the order they are tried as the reference: highest reference_priority first,
    then by name."""
    return sorted(names, key=lambda name: (-backend(name).reference_priority, name))


def outers(names: Iterable[str]) -> list[str]:
    """The backends among `names` that can take the outer derivative of a second derivative,
    preferred first (highest outer_priority, then by name)."""
    able = [name for name in names if backend(name).can_be_outer and not patterns(name)]
    return sorted(able, key=lambda name: (-backend(name).outer_priority, name))


def products(name: str) -> tuple[str, ...]:
    """The products with the Jacobian the backend computes itself ("vjp", "jvp"), which the
    dot-product test checks: what its derivatives are built from (Backend.builds)."""
    return tuple(kind for kind in ("vjp", "jvp") if backend(name).builds == kind)


def batches(name: str) -> bool:
    """Whether the backend's transformations nest with vmap's, either way round (Backend.batches):
    its derivatives are checked batched too (vmap(grad(f)) against a loop of grad(f))."""
    return bool(getattr(backend(name), "batches", False))
