"""The symbolic backend: f traced into sympy, differentiated exactly, compiled to NumPy, cached.

This module does not import sympy: the backend is registered whenever adcore loads its
plugins, and sympy is imported when the backend is first used.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adcore.backend import Backend
from adcore.errors import InvalidInputError
from adcore.tracer import Tracer

# The size guard: the most sympy nodes one traced expression may have (its tree, shared
# parts counted each time), and the most symbols a full trace may make. The logistic map's
# 8th iterate has 638 nodes, the 12th 10238; its derivative then takes about 20 ms to build.
DEFAULT_MAX_NODES = 100_000


class SymbolicBackend(Backend):
    """Exact derivatives: f is traced with sympy symbols, differentiated by the chain rule
    through its common subexpressions, and compiled to NumPy once per function and argument
    shapes and dtypes. Option `max_nodes`: the size guard on the traced expressions."""

    name = "symbolic"
    kinds = ("sympy",)

    def __init__(self) -> None:
        self._cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def value_and_jacobian(
        self,
        f: Callable[..., Any],
        args: tuple,
        argnums: Sequence[int],
        *,
        scalar_output: bool = False,
        max_nodes: int = DEFAULT_MAX_NODES,
    ) -> tuple[Any, tuple[Any, ...]]:
        return self.derivation(f, args, argnums, True, scalar_output, max_nodes).evaluate(args)

    def jacobian(self, f: Callable[..., Any], args: tuple, argnums: Sequence[int], **options: Any) -> tuple:
        """Like value_and_jacobian (same options), without computing f's value: None in its place."""
        options.setdefault("max_nodes", DEFAULT_MAX_NODES)
        return self.derivation(
            f, args, argnums, False, options.pop("scalar_output", False), **options
        ).evaluate(args)

    def derivation(self, f, args, argnums, want_value, scalar_output, max_nodes):
        """The compiled derivative for this call: from the cache, else traced and compiled now."""
        if type(max_nodes) is not int or max_nodes < 1:
            raise InvalidInputError(
                f"backend 'symbolic': max_nodes must be a positive int (the size guard on traced "
                f"expressions), got {max_nodes!r}"
            )
        from adcore_symbolic.derive import derive  # imports sympy, on first use only

        key = _cache_key(args, tuple(argnums), want_value, scalar_output)
        try:
            per_function = self._cache.setdefault(f, {})
        except TypeError:  # f cannot be weakly referenced: no caching
            per_function = {}
        derivation = per_function.get(key) if key is not None else None
        if derivation is None:
            derivation = derive(
                f, args, argnums, want_value=want_value, scalar_output=scalar_output, max_nodes=max_nodes
            )
            if key is not None:
                per_function[key] = derivation
        return derivation


def _cache_key(args: tuple, argnums: tuple, want_value: bool, scalar_output: bool) -> tuple | None:
    """What the compiled derivative depends on: float arrays by shape and dtype (they become
    symbols), any other argument by value; None if one cannot be hashed."""
    parts: list = [argnums, want_value, scalar_output]
    for a in args:
        dtype = getattr(a, "dtype", None)
        if isinstance(a, (np.ndarray, np.generic, Tracer)) and np.dtype(dtype).kind == "f":
            parts.append(("symbols", np.shape(a), np.dtype(dtype).str))
        elif isinstance(a, np.ndarray):
            parts.append(("constant", a.shape, a.dtype.str, a.tobytes()))
        else:
            try:
                hash(a)
            except TypeError:
                return None
            parts.append(("static", type(a), a))
    return tuple(parts)
