"""f's call as the generated functions take it: positional and keyword arguments bound by f's own
signature (defaults filled), the vararg as one tuple, the keyword-only ones after; the active
call positions as the emitters count parameters; a functools.partial's bound arguments put back."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from adcore_source.errors import SourceTransformError


def active_params(fn: Any, active: tuple[int, ...]) -> tuple:
    """The positions of the active call arguments as the emitters take them: fn's positional
    parameters, and its vararg (one tuple parameter) for a position past them."""
    params = _positional_names(fn)
    vararg = _vararg(fn)
    out: list[int] = []
    for i in active:
        if i < len(params):
            out.append(i)
        elif vararg is not None:
            out.append(len(params))
        else:
            raise SourceTransformError(f"adcore-source: {fn.__name__} takes no positional argument {i}")
    return tuple(dict.fromkeys(out))


@functools.lru_cache(maxsize=1024)
def _signature(fn: Any) -> inspect.Signature:
    return inspect.signature(fn, follow_wrapped=False)


def _positional_names(fn: Any) -> list[str]:
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in _signature(fn).parameters.values() if p.kind in kinds]


def _vararg(fn: Any) -> str | None:
    kinds = [p for p in _signature(fn).parameters.values() if p.kind is inspect.Parameter.VAR_POSITIONAL]
    return kinds[0].name if kinds else None


class Caller:
    """f's call (positional and keyword arguments, defaults) as the generated functions take it:
    f's parameters in order, the vararg as one tuple, the keyword-only ones, then the tangents."""

    def __init__(self, fn: Any, generated: Callable, active: tuple[int, ...]) -> None:
        self.fn, self.generated, self.active = fn, generated, active
        self.signature = _signature(fn)
        self.params = [p for p in self.signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
        self.simple = all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in self.params)
        self.n_positional = len(_positional_names(fn))

    def arguments(self, args: tuple, kwargs: dict) -> list:
        if self.simple and not kwargs and len(args) == len(self.params):
            return list(args)
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        if any(p.kind is p.VAR_KEYWORD for p in self.signature.parameters.values()):
            raise SourceTransformError(
                f"adcore-source: {self.fn.__name__} takes **kwargs, which it cannot take"
            )
        return [bound.arguments[p.name] for p in self.params]

    def fwd(self, *args: Any, **kwargs: Any) -> Any:
        return self.generated(*self.arguments(args, kwargs))

    def jvp(self, args: tuple, tangents: tuple, kwargs: dict) -> Any:
        arguments = self.arguments(tuple(args), kwargs)
        if any(i >= self.n_positional for i in self.active):  # the vararg's: one tuple of tangents
            tangents = self.vararg_tangents(arguments, tangents)
        return self.generated(*arguments, *tangents)

    def vararg_tangents(self, arguments: list, tangents: tuple) -> tuple:
        out, rest = [], []
        for i, t in zip(self.active, tangents):
            (out if i < self.n_positional else rest).append((i, t))
        varargs = arguments[self.n_positional]
        from adcore_source.runtime import zero_tangent

        given = dict(rest)
        n = self.n_positional
        tangent = tuple(given[n + k] if n + k in given else zero_tangent(v) for k, v in enumerate(varargs))
        return (*[t for _, t in out], tangent)

    def backward(self, bwd: Callable) -> Callable:
        if not any(i >= self.n_positional for i in self.active):
            return bwd
        n = self.n_positional

        def bwd_by_argument(saved: Any, g: Any) -> tuple:
            adjoints = tuple(bwd(saved, g))
            first, by_vararg = [a for i, a in zip(self.active, adjoints) if i < n], adjoints[-1]
            return (
                *first,
                *((None if by_vararg is None else by_vararg[i - n]) for i in self.active if i >= n),
            )

        return bwd_by_argument


def unwrapped(fn: Any) -> tuple[Any, functools.partial | None]:
    """fn, or a functools.partial's function and the partial (its bound arguments are f's constants)."""
    if isinstance(fn, functools.partial):
        inner, outer = unwrapped(fn.func)
        if outer is not None:
            fn = functools.partial(inner, *outer.args, *fn.args, **{**outer.keywords, **fn.keywords})
        return inner, fn
    if not callable(fn) or not hasattr(fn, "__code__"):
        raise SourceTransformError(
            f"adcore-source: {fn!r} is not a Python function (a class instance or builtin); "
            "differentiate a function that calls it"
        )
    return fn, None


def shifted(active: tuple[int, ...], bound: functools.partial | None) -> tuple[int, ...]:
    return tuple(active) if bound is None else tuple(i + len(bound.args) for i in active)
