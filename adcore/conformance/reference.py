"""The reference every backend is compared with, chosen from the backends' own results.

The first exact backend (in reference_priority order) corroborated by another exact one, or by
the estimating backend's estimate within its error; if none is, the estimate itself, with its
error as extra tolerance; failing that, the first exact backend, uncorroborated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from adcore.conformance import tolerances
from adcore.conformance.abilities import estimates, patterns, reference_order
from adcore.conformance.results import Results


@dataclass
class Reference:
    """The derivatives every backend is compared with, where they came from, and their error."""

    jacobians: tuple[np.ndarray, ...]
    source: str
    errors: tuple[Any, ...] = ()

    def error(self, i: int) -> Any:
        return self.errors[i] if self.errors else 0.0


@dataclass
class JacobianEstimate:
    jacobians: tuple[np.ndarray, ...]
    errors: tuple[np.ndarray, ...]
    backend: str  # the estimating backend, named in the reference's source


def choose_reference(exact: dict[str, tuple], estimate: JacobianEstimate | None) -> Reference | None:
    """The first backend in `exact` (in reference order) corroborated by another or by the
    estimate; else the estimate; else the first backend of `exact`, uncorroborated."""
    names = reference_order(exact)
    for name in names:
        agreeing = [
            other
            for other in names
            if other != name and agree(exact[name], exact[other], tolerances.CONSENSUS)
        ]
        if agreeing:
            return Reference(exact[name], f"{name} = {' = '.join(agreeing)}")
        if estimate is not None and agree(
            exact[name], estimate.jacobians, tolerances.ESTIMATE["float64"], estimate.errors
        ):
            return Reference(exact[name], f"{name} = {estimate.backend}")
    if estimate is not None:
        return Reference(
            estimate.jacobians, f"{estimate.backend} (its own estimate, ± its error)", estimate.errors
        )
    if names:
        return Reference(exact[names[0]], f"{names[0]} (uncorroborated: no other backend computed it)")
    return None


def agree(a: tuple, b: tuple, tolerance: tolerances.Tolerance, errors: tuple = ()) -> bool:
    """Whether the derivatives `a` agree with `b` (and `b`'s errors) within `tolerance`."""
    for i, (x, y) in enumerate(zip(a, b)):
        x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
        if x.shape != y.shape:
            return False
        error = errors[i] if errors else 0.0
        if not np.all((x == y) | (np.abs(x - y) <= tolerances.allowed(y, tolerance, error))):
            return False
    return True


def reference_for(
    results: Results, backends: Iterable[str], supported: Callable[[str], bool], *, every: bool = False
) -> Reference | None:
    """The reference Jacobians of `results.call` (a float64 call) from the installed backends, as
    choose_reference picks it, computing no more than it takes: the exact backends in reference
    order until the first that computed agrees with another, the estimate only if none does
    (`every`: all of them, the source then naming every exact backend that agrees)."""
    candidates = [name for name in backends if supported(name) and not patterns(name)]  # no derivatives
    exact: dict[str, tuple] = {}
    for name in reference_order(b for b in candidates if not estimates(b)):
        try:
            exact[name] = results.jacobians(name)[0]
        except Exception:
            continue
        first = next(iter(exact))
        agreeing = [o for o in exact if o != first and agree(exact[first], exact[o], tolerances.CONSENSUS)]
        if agreeing and not every:
            return Reference(exact[first], f"{first} = {' = '.join(agreeing)}")
    estimate = None
    for name in (b for b in candidates if estimates(b)):
        try:
            estimate = JacobianEstimate(*results.jacobians(name), name)
            break
        except Exception:
            continue
    return choose_reference(exact, estimate)
