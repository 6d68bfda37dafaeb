"""What the derivative in progress does with the code running now.

Modules ask before doing what only some backends can honour: a module's backward hooks fire
only where a VJP is run through the module (`backend_without_vjp`), and a layer that draws a
random mask or updates running statistics is right only where f is evaluated once for one
derivative (`repeats_f`) and not batched by vmap (`batched`). Each answers from adcore's record
of the derivatives in progress (`adcore.backend.running()`) and from the tracers among the values
the call is given; none changes anything.
"""

from __future__ import annotations

from typing import Any

import adcore
from adcore.backend import Backend, recomputing, running
from adcore.core import Trace, Tracer
from adcore.errors import AdcoreError

__all__ = [
    "backend_label",
    "backend_without_vjp",
    "batched",
    "batched_inside_derivative",
    "differentiated",
    "repeats_f",
]


def backend_label(backend: Backend) -> str:
    """How adcore.backends() and conformance name a backend: its name, and its variant where the
    options chose one ("source/forward")."""
    for variant, options in type(backend).variants.items():
        try:
            if adcore.get_backend(backend.name).for_options(options).builds == backend.builds:
                return f"{backend.name}/{variant}"
        except AdcoreError:
            continue
    return backend.name


def repeats_f() -> str | None:
    """The backend of a derivative in progress that evaluates f more than once for that one
    derivative (finite differences; forward mode's Jacobian in several chunks of tangents), or None.

    A random draw or a state update inside f happens once per evaluation there: every evaluation
    would draw another dropout mask (the derivative of no single function) or update running
    statistics again.
    """
    for entry in running():
        if entry.repeats:
            return backend_label(entry.backend)
    return None


def recomputed() -> bool:
    """Whether this call is adcore.checkpoint running again, for the backward pass, a call that already
    ran: its state updates were made then and must not be made twice."""
    return recomputing()


def _leaves(values: Any) -> list:
    return adcore.tree.leaves(values)


def _innermost_differentiating(values: Any) -> Trace | None:
    """The innermost transformation that differentiates one of the values (looking through vmap's
    batches, which only batch), or None where none is traced."""
    best: Trace | None = None
    for leaf in _leaves(values):
        while isinstance(leaf, Tracer):
            if not leaf.concrete_itself and (best is None or leaf._trace.level > best.level):
                best = leaf._trace
            leaf = leaf.value
    return best


def differentiated(values: Any) -> bool:
    """Whether any leaf of `values` is traced by a transformation that differentiates it."""
    return _innermost_differentiating(values) is not None


def batched(values: Any) -> bool:
    """Whether any leaf of `values` is (or holds) a batch of adcore.vmap."""
    for leaf in _leaves(values):
        while isinstance(leaf, Tracer):
            if leaf.concrete_itself:
                return True
            leaf = leaf.value
    return False


def batched_inside_derivative(values: Any) -> bool:
    """Whether a vmap nested inside a derivative batches one of the values (`grad(vmap(f))`): a
    custom rule's backward pass then runs on the batch, apart from the forward that ran it."""
    batch_level, differentiating = -1, _innermost_differentiating(values)
    for leaf in _leaves(values):
        while isinstance(leaf, Tracer):
            if leaf.concrete_itself:
                batch_level = max(batch_level, leaf._trace.level)
            leaf = leaf.value
    return differentiating is not None and batch_level > differentiating.level


def _trace_backend(trace: Trace) -> str | None:
    """The name of the backend a trace belongs to (a first-party plugin's package is adcore_<name>)."""
    if trace.backend is not None:
        return trace.backend
    package = type(trace).__module__.partition(".")[0]
    return package[len("adcore_") :] if package.startswith("adcore_") else None


def backend_without_vjp(values: Any = ()) -> str | None:
    """The backend of a derivative in progress that would differentiate a call on `values` without
    running a VJP through it, so a module's backward hooks could not fire there; or None where they
    fire (or nothing differentiates the call).

    The innermost transformation tracing one of the values decides: a backend that builds VJPs
    (reverse; forward-over-reverse's inner sweep) runs the call's VJP rule; any other (forward,
    symbolic, sparsity, adcore.jvp's forward) differentiates the call's body instead. Where no value
    is traced, the innermost derivative in progress decides (source/forward and numeric run f on
    plain values). An estimating derivative (finite differences) counts too: the hooks would fire
    once per evaluation, on perturbed values. (A Jacobian built in several exact passes fires them
    once per pass, on the same values, as one built from several pullbacks does.)
    """
    for entry in running():
        if entry.backend.estimates:
            return backend_label(entry.backend)
    trace = _innermost_differentiating(values)
    if trace is not None:
        name = _trace_backend(trace)
        try:
            builds = adcore.get_backend(name).builds if name is not None else None
        except AdcoreError:
            builds = None
        if builds == "vjp":
            return None
    active = running()
    if active and active[-1].backend.builds != "vjp":
        return backend_label(active[-1].backend)  # source/forward, where the trace is forward's
    if trace is not None:
        return name or type(trace).__name__
    return None
