"""The flat derivative engine the API calls: options, argnums, input and output checks, and the
backend calls, on flat tuples of arrays (pytrees are adcore.api's business, above this)."""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from adcore.backend import Backend
from adcore.backend import check_output as check_output
from adcore.core import Tracer
from adcore.errors import InvalidArgnumsError, InvalidInputError, InvalidValueError
from adcore.plugins import get_registry


class Derivatives(NamedTuple):
    """f's value (None when not asked for), one Jacobian per argnum and, from a backend asked
    to estimate its error (return_error=True), one error array per Jacobian, else None."""

    value: Any
    jacobians: tuple
    errors: tuple | None


class Estimate(NamedTuple):
    """A derivative an estimating backend returned with its estimated absolute error, entry by
    entry (return_error=True); a tuple of each for a tuple argnums. Unpacks as `d, err = ...`."""

    derivative: Any
    error: Any


def get_backend(name: str) -> Backend:
    """The installed backend called `name` (UnknownBackendError lists the installed ones)."""
    if not isinstance(name, str):
        installed = ", ".join(sorted(get_registry().backends)) or "none"
        raise InvalidInputError(
            f"backend must be the name of an installed backend, a str such as backend='reverse', got "
            f"{type(name).__name__} {name!r}; installed backends: {installed}"
        )
    return get_registry().backend(name)


def prepare(f: Callable[..., Any], backend: str, method: str, options: dict) -> Backend:
    """The backend, once f is known to be callable and the options to be the backend's own."""
    if not callable(f):
        raise InvalidInputError(f"expected a function to differentiate, got {type(f).__name__} {f!r}")
    be = get_backend(backend)
    if options:
        params = inspect.signature(getattr(be, method)).parameters.values()
        if any(p.kind is p.VAR_KEYWORD for p in params):  # passed on, as the base jvp does
            params = inspect.signature(be.value_and_jacobian).parameters.values()
        takes_any = any(p.kind is p.VAR_KEYWORD for p in params)  # the backend checks them itself
        known = sorted(p.name for p in params if p.kind is p.KEYWORD_ONLY and p.name != "scalar_output")
        unknown = [] if takes_any else sorted(set(options) - set(known))
        if unknown:
            close = difflib.get_close_matches(unknown[0], known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise InvalidInputError(
                f"backend {backend!r} has no option {unknown[0]!r}{hint}. Its options: {', '.join(known) or 'none'}."
            )
    return be


def value_and_jacobian(
    be: Backend,
    f: Callable[..., Any],
    args: tuple,
    argnums: tuple[int, ...],
    *,
    scalar: bool,
    want_value: bool,
    options: dict,
) -> Derivatives:
    """f(*args) (None unless want_value) and d f / d args[i] for each i in argnums, each a fresh
    array of its argument's dtype with shape out.shape + args[i].shape.

    argnums are non-negative positions (normalize_argnums); a position named twice is
    differentiated once and its derivative given at each place it was named, as JAX does: a
    backend asked for the same argument twice would split (or double) its derivative.
    """
    unique = tuple(dict.fromkeys(argnums))
    args = list(args)
    for i in unique:
        args[i] = float_input(args[i], f"argument {i}")
    call = be.value_and_jacobian if want_value else be.jacobian
    out, *arrays = call(f, tuple(args), unique, scalar_output=scalar, **options)
    place = {i: k for k, i in enumerate(unique)}
    jacobians, *errors = (tuple(_like(each[place[i]], args[i]) for i in argnums) for each in arrays)
    return Derivatives(_fresh(out) if want_value else None, jacobians, errors[0] if errors else None)


def jvp(be: Backend, f: Callable[..., Any], args: tuple, tangents: tuple, options: dict) -> tuple[Any, Any]:
    """(f(*args), J·tangents) for checked args and tangents (float_input, check_tangent)."""
    out, tangent_out = be.jvp(f, args, tangents, **options)
    return _fresh(out), _like(tangent_out, np.asarray(out) if not isinstance(out, Tracer) else out)


def vjp(be: Backend, f: Callable[..., Any], args: tuple, options: dict) -> tuple[Any, Callable[[Any], tuple]]:
    """(f(*args), pullback) for checked args (float_input); pullback(ct), for a ct checked by
    check_cotangent, gives one fresh cotangent per argument, in its dtype."""
    out, pullback_ = be.vjp(f, args, **options)

    def pullback(cotangent: Any) -> tuple:
        return tuple(_like(g, x) for g, x in zip(pullback_(cotangent), args))

    return _fresh(out), pullback


def normalize_argnums(argnums: int | Sequence[int], nargs: int) -> tuple[int, ...]:
    """argnums as a tuple of non-negative positions, checked against the call's arguments."""
    nums = (argnums,) if type(argnums) is int else argnums
    if not isinstance(nums, (tuple, list)) or not nums or any(type(i) is not int for i in nums):
        raise InvalidArgnumsError(f"argnums must be an int or a non-empty tuple of ints, got {argnums!r}")
    positions = []
    for i in nums:
        if not -nargs <= i < nargs:
            raise InvalidArgnumsError(
                f"argnums {argnums!r} is out of range: the function was called with {nargs} positional "
                f"argument(s), so argnums must lie in [{-nargs}, {nargs - 1}]"
            )
        positions.append(i % nargs)
    return tuple(positions)


def float_input(x: Any, where: str) -> Any:
    """A float array (or tracer) for the input `where` names; integers and other types are an error."""
    dtype = x.dtype if isinstance(x, (Tracer, np.ndarray)) else None
    if dtype is None:
        try:
            x = np.asarray(x)
        except Exception as e:
            raise InvalidInputError(f"{where} ({type(x).__name__}) is not an array") from e
        dtype = x.dtype
    if dtype.kind != "f":
        raise InvalidInputError(
            f"{where} has dtype {dtype}: derivatives are taken with respect to float32 or "
            "float64 arrays only (integers have no derivative). Pass it as np.asarray(x, float), "
            "or leave it out of argnums."
        )
    return x


def check_tangent(t: Any, x: Any, where: str) -> Any:
    """The tangent for the primal `where` names: its shape and dtype, or a clear error."""
    if isinstance(t, (int, float)):
        t = np.asarray(t, dtype=x.dtype)
    elif not isinstance(t, (Tracer, np.ndarray, np.generic)):
        raise InvalidInputError(f"jvp: the tangent of {where} ({type(t).__name__}) is not an array")
    if np.shape(t) != np.shape(x):
        raise InvalidInputError(
            f"jvp: the tangent of {where} has shape {np.shape(t)} but its primal has shape {np.shape(x)}; "
            "a tangent is a direction in the primal's space, so the shapes must match"
        )
    if t.dtype != x.dtype:
        raise InvalidInputError(
            f"jvp: the tangent of {where} has dtype {t.dtype} but its primal has dtype {x.dtype}; "
            f"pass the tangent as np.asarray(t, {x.dtype})"
        )
    return t


def check_cotangent(cotangent: Any, out: Any, where: str = "f's output") -> Any:
    """vjp_fn's cotangent for the output `where` names: real numbers of the output's shape."""
    if not isinstance(cotangent, Tracer):
        given = cotangent
        cotangent = np.asarray(cotangent)
        if cotangent.dtype.kind not in "fiu":
            raise InvalidInputError(
                f"vjp_fn: the cotangent must be real numbers, got {type(given).__name__} of dtype "
                f"{cotangent.dtype} for {where}; pass an array of its dtype ({np.result_type(out)})"
            )
    if np.shape(cotangent) != np.shape(out):
        raise InvalidValueError(
            f"vjp_fn: the cotangent has shape {np.shape(cotangent)} but {where} has shape "
            f"{np.shape(out)}; a cotangent weighs each output element, so pass one of shape {np.shape(out)}"
        )
    return cotangent


def _like(jac: Any, arg: Any) -> Any:
    """The derivative as a fresh, writable ndarray of the argument's dtype (a tracer when nested).

    Always a copy: a backend may hand back a read-only broadcast, a view of the caller's own
    array (d/dx sum(w * x) is w) or an array it keeps for the next call (a compiled constant);
    the caller must be able to write into what it gets (g *= lr) without changing any of them.
    """
    if isinstance(jac, Tracer):
        return jac
    return np.array(jac, dtype=arg.dtype, copy=True)


def _fresh(value: Any) -> Any:
    """f's value as the caller may keep and write into: an ndarray is copied, since f may have
    returned its input itself (lambda x: x); scalars and tracers are immutable."""
    return value.copy() if isinstance(value, np.ndarray) else value
