"""What each backend can do, read off its class (adcore.backend.Backend's ability attributes):
the engine decides everything by these, and names no backend.

A report's column is a backend, or one of its variants: a backend with named option sets
(Backend.variants) is checked under each as a column of its own, `<backend>/<variant>`, every
check asking adcore's API with that variant's options (`api_options`) and reading its abilities off
the backend those options make (Backend.for_options). Every function here takes a column."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from adcore.backend import Backend
from adcore.errors import UnknownBackendError
from adcore.plugins import get_registry

VARIANT = "/"  # between a backend's name and its variant's in a column's name


def columns(names: Iterable[str]) -> list[str]:
    """The columns these backend (or column) names ask for, each once, in order: a backend with
    variants is one column per variant, `<backend>/<variant>`; any other, its name. Unknown
    names raise UnknownBackendError."""
    found: dict[str, None] = {}
    for name in names:
        base, _, variant = name.partition(VARIANT)
        be = get_registry().backend(base)
        variants = _variants(be)
        if variant and variant not in variants:
            raise UnknownBackendError(
                f"backend {be.name!r} has no variant {variant!r}; its columns: "
                f"{', '.join(be.name + VARIANT + v for v in variants) or be.name}"
            )
        chosen = [variant] if variant else list(variants)
        found.update(dict.fromkeys([f"{be.name}{VARIANT}{v}" for v in chosen] or [be.name]))
    return list(found)


def _variants(be: Backend) -> dict[str, dict[str, Any]]:
    return dict(getattr(be, "variants", {}))  # a duck-typed backend (not an adcore.Backend) has none


def _parts(column: str) -> tuple[str, dict[str, Any]]:
    """The backend's name and the options of the column's variant ({} for a plain backend)."""
    base, _, variant = column.partition(VARIANT)
    if not variant:
        return base, {}
    return base, dict(_variants(get_registry().backend(base))[variant])


def api_options(column: str) -> dict[str, Any]:
    """The keyword arguments that ask adcore's API for the column: `backend=` and its variant's options."""
    base, options = _parts(column)
    return {"backend": base, **options}


def backend(name: str) -> Backend:
    """The backend a column checks: a variant's is the one its options make (Backend.for_options)."""
    base, options = _parts(name)
    be = get_registry().backend(base)
    return be.for_options(options) if options else be


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
    then by name. A backend whose reference_priority is 0 (the default) is never tried: one that
    applies another's rules (a source transformation applying the tape's) would corroborate it,
    a wrong rule with it, and condemn the independent backends instead."""
    able = [name for name in names if backend(name).reference_priority > 0]
    return sorted(able, key=lambda name: (-backend(name).reference_priority, name))


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
