"""Backend: the base class of every differentiator a plugin registers, and the contract it keeps."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from typing import Any, ClassVar, NamedTuple

import numpy as np

from adcore.core import Tracer
from adcore.errors import InvalidOutputError, NonScalarOutputError, UnsupportedByBackendError


class Derivatives(NamedTuple):
    """f's value (None when not asked for), one Jacobian per argnum and, from a backend asked
    to estimate its error (return_error=True), one error array per Jacobian, else None."""

    value: Any
    jacobians: tuple
    errors: tuple | None = None


class Running(NamedTuple):
    """A derivative the engine is computing: its backend, and whether it evaluates f more than
    once for it (finite differences, a Jacobian from several passes of tangents)."""

    backend: Backend
    repeats: bool


# The derivatives in progress in this context, outermost first: adcore.derivatives sets it around a
# backend's run of f (not around a pullback run later). Library code reads it with `running()` to
# refuse what cannot be right on a backend (adcore_nn: a module's backward hooks where no VJP runs).
RUNNING: ContextVar[tuple[Running, ...]] = ContextVar("adcore_running", default=())


def running() -> tuple[Running, ...]:
    """The derivatives whose f is running now in this context (thread, task), outermost first."""
    return RUNNING.get()


# True while adcore.checkpoint runs a function again for its backward pass: the call already ran
# (and made its state updates) in the forward, so library code skips them (BatchNorm's running stats).
RECOMPUTING: ContextVar[bool] = ContextVar("adcore_recomputing", default=False)


def recomputing() -> bool:
    """Whether this call is checkpoint's recomputation of a call that already ran."""
    return RECOMPUTING.get()


class Backend:
    """A differentiator. Subclasses set `name`, the rule `kinds` they need, and what they can
    do, as data; then implement the methods `builds` names.

    A tracing backend implements a small contract, and adcore.derivatives builds Jacobians,
    gradients, argnums, zeros, dtype casts and copies from it, once for every backend:

    - `builds = "jvp"`: `jvp(f, args, tangents)`, a batch of tangents per call; a Jacobian
      is built from chunks of the identity (best when inputs are few);
    - `builds = "vjp"`: `vjp(f, args, argnums)`, a pullback; a Jacobian is one pullback per
      output element, a gradient one pullback (best for scalar losses);
    - `builds = "jacobian"` (the default): `value_and_jacobian(f, args, argnums, **options)`
      answers directly (numeric, symbolic); `jvp`/`vjp`, when not implemented too, are then
      J·t and ctᵀJ.

    The function a backend is handed is the user's function inside the engine's wrapper (pytrees
    laid out flat, complex arguments split); a backend that works on the user's own code (source)
    finds it as `f.user_function` and swaps it with `f.with_user_function(g)` where f has them.

    A backend is handed checked float inputs (the argnums distinct, non-negative) and its
    results are checked and copied afterwards, so it may return views, read-only or cached
    arrays, and None for "no derivative flows here".
    """

    name: str = ""
    # the rule kinds it needs, and the contracts (adcore.hookspecs.RuleKind) of those it brings: a
    # backend with a new kind declares it here, and the registry learns it when the backend is
    # registered (its plugin's rules of that kind wait until then); the core names no kind
    kinds: tuple[str, ...] = ()
    rule_kinds: ClassVar[dict[str, Any]] = {}
    builds: str = "jacobian"
    # What it can do, as data: the conformance engine reads these and names no backend.
    # - estimates: its derivatives are estimates with an error bound (finite differences), compared
    #   within that bound and asked for with `estimate_options`; never the reference by themselves
    #   when an exact backend agrees
    estimates: bool = False
    estimate_options: ClassVar[dict[str, Any]] = {}
    # - reference_priority: among exact backends that agree with another, whose derivatives are the
    #   reference (highest first; ties by name): an independent exact derivation ranks highest
    reference_priority: int = 0
    # - outer_priority: it can take the outer derivative of a second derivative (differentiate
    #   through another backend's rules, which run on its tracers) when > 0; the highest that can
    #   take an op is the outer of every second-derivative check of that op
    outer_priority: int = 0
    # - pattern: its Jacobians are dependency patterns (1 where an output element may depend on an
    #   input element, else 0), not derivatives: compared as a superset of the others' non-zeros
    pattern: bool = False
    # - batches: its transformations run on vmap's batched values, so vmap can be nested around or
    #   inside them; for `builds = "vjp"`, adcore.derivatives then pulls a Jacobian's rows back in
    #   one vmapped sweep (`vmap(pullback)(rows)`) instead of one pullback per row
    batches: bool = False
    # - variants: named option sets that change how it works (source's mode="forward"/"reverse"),
    #   each checked by conformance as a column of its own, `<name>/<variant>`
    variants: ClassVar[dict[str, dict[str, Any]]] = {}

    def for_options(self, options: dict[str, Any]) -> Backend:
        """The backend that does the work for these options: itself, or a variant of it that builds
        another way (source's mode="forward" builds Jacobians from jvp, mode="reverse" from vjp)."""
        return self

    @property
    def can_be_outer(self) -> bool:
        """Whether it can differentiate another backend's derivative (outer_priority > 0)."""
        return self.outer_priority > 0

    def value_and_jacobian(self, f: Callable[..., Any], args: tuple, argnums: Sequence[int], **options: Any):
        """f(*args) and, per argnum, d f / d args[i] with shape out.shape + args[i].shape: a
        Derivatives, or a (value, jacobians) pair. A keyword-only `want_value`, if it takes one,
        is False when the caller does not need f(*args) (value None then)."""
        raise UnsupportedByBackendError(f"backend {self.name!r} does not implement value_and_jacobian")

    def jvp(self, f: Callable[..., Any], args: tuple, tangents: tuple) -> tuple[Any, Any]:
        """(f(*args), out_tangents): each tangent has a leading batch axis, shape (B,) + arg.shape,
        or is None for an argument that is not perturbed; out_tangents has shape (B,) + out.shape,
        or is None where the output does not depend on the inputs."""
        raise UnsupportedByBackendError(f"backend {self.name!r} does not implement jvp")

    def vjp(self, f: Callable[..., Any], args: tuple, argnums: Sequence[int]) -> tuple[Any, Callable]:
        """(f(*args), pullback): pullback(ct, final=False) gives one cotangent per argnum, or None
        where none flows; `final=True` says it will not be called again (free what it keeps).
        It must not convert ct (a tracer when the pullback is itself differentiated)."""
        raise UnsupportedByBackendError(f"backend {self.name!r} does not implement vjp")

    def __repr__(self) -> str:
        return f"<backend {self.name}>"


def check_output(value: Any, backend: str, scalar: bool) -> None:
    """The output must be one array of numbers (not bools, strings or objects); for `grad`, a scalar one.

    adcore.derivatives checks every backend's output with it once; a backend that must refuse
    an output before working on it (symbolic, before sympy) may call it too."""
    if not isinstance(value, (Tracer, np.ndarray, np.generic, float, int)):
        raise InvalidOutputError(
            f"backend {backend!r}: the function returned {type(value).__name__}; it must return an "
            "array, or a pytree of arrays (dicts, lists, tuples, classes registered with adcore.tree)"
        )
    kind = "b" if isinstance(value, bool) else np.dtype(getattr(value, "dtype", float)).kind
    if kind == "b":
        raise InvalidOutputError(
            f"backend {backend!r}: the function returned a bool (a comparison?), which has no derivative; "
            "return a number, e.g. anp.where(x > 0, a, b) picks between differentiable values"
        )
    if kind not in "fiuc":
        raise InvalidOutputError(
            f"backend {backend!r}: the function returned an array of dtype {value.dtype}; it must return "
            "numbers (a float array)"
        )
    if scalar:
        check_scalar(getattr(value, "shape", ()))


def check_scalar(shape: tuple[int, ...]) -> None:
    """grad's output must be a scalar, or hold one (shape (1,), (1, 1): unambiguous, as autograd
    and torch take it; adcore.derivatives gives its gradient the argument's shape)."""
    if shape != () and math.prod(shape) != 1:
        raise NonScalarOutputError(
            f"grad needs a function with a scalar output (or one of size 1), this one returned shape {shape}; "
            "use adcore.jacobian (or differentiate) for array outputs, or reduce the output (sum, mean)"
        )
