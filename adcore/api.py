"""The public API: differentiate, grad, jacobian, value_and_grad, vjp, backends."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adcore.backend import Backend
from adcore.errors import InvalidArgnumsError, InvalidInputError
from adcore.plugins import get_registry
from adcore.tracer import Tracer

Argnums = int | Sequence[int]


def backends() -> list[str]:
    """Names of the installed backends."""
    return sorted(get_registry().backends)


def get_backend(name: str) -> Backend:
    """The installed backend called `name` (UnknownBackendError lists the installed ones)."""
    return get_registry().backend(name)


def differentiate(f: Callable[..., Any], backend: str = "reverse", argnums: Argnums = 0, **options: Any):
    """d f / d args[argnums]: a function returning an array of shape f(...).shape + arg.shape.

    With a tuple `argnums` it returns a tuple, one derivative per argument. Options pass
    through to the backend. The derivative keeps each argument's dtype.
    """
    be = _prepare(f, backend)

    @functools.wraps(f)
    def derivative(*args: Any, **kwargs: Any) -> Any:
        _, jacs = _value_and_jacobian(f, be, args, kwargs, argnums, options, scalar=False)
        return jacs[0] if isinstance(argnums, int) else jacs

    return derivative


jacobian = differentiate


def grad(f: Callable[..., Any], argnums: Argnums = 0, backend: str = "reverse", **options: Any):
    """The gradient of a scalar-valued f (NonScalarOutputError otherwise)."""
    be = _prepare(f, backend)

    @functools.wraps(f)
    def gradient(*args: Any, **kwargs: Any) -> Any:
        _, jacs = _value_and_jacobian(f, be, args, kwargs, argnums, options, scalar=True)
        return jacs[0] if isinstance(argnums, int) else jacs

    return gradient


def value_and_grad(f: Callable[..., Any], argnums: Argnums = 0, backend: str = "reverse", **options: Any):
    """Like `grad`, returning (f(...), gradient) from one evaluation of f."""
    be = _prepare(f, backend)

    @functools.wraps(f)
    def both(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        value, jacs = _value_and_jacobian(f, be, args, kwargs, argnums, options, scalar=True)
        return value, (jacs[0] if isinstance(argnums, int) else jacs)

    return both


def vjp(f: Callable[..., Any], *primals: Any, backend: str = "reverse", **options: Any):
    """(f(*primals), vjp_fn): vjp_fn(cotangent) returns one cotangent per primal, as a tuple."""
    be = _prepare(f, backend)
    args = tuple(_float_input(x, i) for i, x in enumerate(primals))
    out, pullback = be.vjp(f, args, **options)

    def vjp_fn(cotangent: Any) -> tuple:
        return tuple(_like(g, x) for g, x in zip(pullback(cotangent), args))

    return out, vjp_fn


def _prepare(f: Callable[..., Any], backend: str) -> Backend:
    if not callable(f):
        raise InvalidInputError(f"expected a function to differentiate, got {type(f).__name__} {f!r}")
    return get_backend(backend)


def _value_and_jacobian(f, be, args, kwargs, argnums, options, scalar):
    nums = _argnums(argnums, len(args))
    args = list(args)
    for i in nums:
        args[i] = _float_input(args[i], i)
    fn = functools.partial(f, **kwargs) if kwargs else f
    value, jacs = be.value_and_jacobian(fn, tuple(args), nums, scalar_output=scalar, **options)
    return value, tuple([_like(j, args[i]) for j, i in zip(jacs, nums)])


def _argnums(argnums: Argnums, nargs: int) -> tuple[int, ...]:
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


def _float_input(x: Any, i: int) -> Any:
    """A float array (or tracer) for argument i; integers and other types are an error."""
    dtype = x.dtype if isinstance(x, (Tracer, np.ndarray)) else None
    if dtype is None:
        try:
            x = np.asarray(x)
        except Exception as e:
            raise InvalidInputError(f"argument {i} ({type(x).__name__}) is not an array") from e
        dtype = x.dtype
    if dtype.kind != "f":
        raise InvalidInputError(
            f"argument {i} has dtype {dtype}: derivatives are taken with respect to float32 or "
            "float64 arrays only (integers have no derivative). Pass it as np.asarray(x, float), "
            "or leave it out of argnums."
        )
    return x


def _like(jac: Any, arg: Any) -> Any:
    """The derivative as an ndarray of the argument's dtype (a tracer when nested)."""
    if isinstance(jac, Tracer) or (jac.__class__ is np.ndarray and jac.dtype == arg.dtype):
        return jac
    return np.asarray(jac, dtype=arg.dtype)
