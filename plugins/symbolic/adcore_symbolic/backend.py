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
from adcore.core import Tracer
from adcore.errors import InvalidInputError
from adcore.hookspecs import RuleKind
from adcore_symbolic.recording import Recording, Unkeyable, recorded, value_key

# The work budget: the most sympy nodes one derivative may build (its traced definitions,
# partial derivatives and adjoints: adcore_symbolic.budget), a few seconds of sympy's work,
# and the most symbols a full trace may make. The logistic map's derivative builds 42 a level.
DEFAULT_MAX_NODES = 100_000

# The most compiled derivatives kept per function (the oldest goes first): a static argument
# that differs on every call (a batch's indices) would otherwise keep every one.
ENTRIES_PER_FUNCTION = 64


# The contract of the "sympy" rules this plugin brings: sympy expressions for the op's inputs -> the
# output's expression (one callable per op).
SYMPY = RuleKind((), per_input=False, column=2, doc="(*input expressions) -> the output's expression")


class SymbolicBackend(Backend):
    """Exact derivatives: f is traced with sympy symbols, differentiated by the chain rule
    through its common subexpressions, and compiled to NumPy once per function and argument
    shapes and dtypes, reused while f does what it did then. Option `max_nodes`: the work
    budget, in sympy nodes built."""

    name = "symbolic"
    kinds = ("sympy",)
    rule_kinds = {"sympy": SYMPY}  # the contract of the kind it brings, as data
    reference_priority = 30  # exact and derived independently of the rule tables: the first reference
    # not an outer derivative: the tape rules it would differentiate compute masks from concrete values

    def __init__(self) -> None:
        # f -> {key: (recording, derivation)}: the derivation, and what f did when traced
        self._cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.derivations = 0  # how many times f was traced and compiled (tests count hits by it)

    def value_and_jacobian(
        self,
        f: Callable[..., Any],
        args: tuple,
        argnums: Sequence[int],
        *,
        want_value: bool = True,
        max_nodes: int = DEFAULT_MAX_NODES,
    ) -> tuple[Any, tuple[Any, ...]]:
        """f(*args) (None without want_value: the compiled program then skips it) and the Jacobians."""
        value, jacobians = self.derivation(f, args, argnums, want_value, max_nodes).evaluate(args)
        return (_numpys_value(f, args, value) if want_value else None), jacobians

    def derivation(self, f, args, argnums, want_value, max_nodes):
        """The compiled derivative for this call: a cached one if f, run again on shape-only
        tracers, does exactly what it did when traced (adcore_symbolic.recording); else traced
        and compiled now."""
        if type(max_nodes) is not int or max_nodes < 1:
            raise InvalidInputError(
                f"backend 'symbolic': max_nodes must be a positive int (the work budget, in sympy "
                f"nodes built), got {max_nodes!r}"
            )
        from adcore_symbolic.derive import derive  # imports sympy, on first use only

        key = _cache_key(args, tuple(argnums), want_value, max_nodes)
        try:
            per_function = self._cache.setdefault(f, {})
        except TypeError:  # f cannot be weakly referenced: no caching
            per_function = {}
        cached = per_function.get(key)
        if cached is not None and cached[0].replays(f, args):
            return cached[1]
        runs: list[Recording] = []
        derivation = derive(
            recorded(f, runs),
            args,
            argnums,
            want_value=want_value,
            max_nodes=max_nodes,
        )
        self.derivations += 1
        complete = [r for r in runs if r.complete]
        # f traced twice (elementwise, then in full) must have done the same both times
        per_function.pop(key, None)
        if complete and all(r.verifiable and r.same_run(complete[-1]) for r in complete):
            per_function[key] = (complete[-1], derivation)
            if len(per_function) > ENTRIES_PER_FUNCTION:
                del per_function[next(iter(per_function))]
        return derivation


def _numpys_value(f: Callable[..., Any], args: tuple, compiled: Any) -> Any:
    """f's own value, NumPy's bit for bit (the compiled program's can differ: sympy's cbrt and power
    in the last bits, a cofactor det near 0 by more, float_power's float64 of float32 inputs), where
    f computes the same twice; else (f draws random numbers) the compiled one, whose run the
    Jacobians belong to."""
    if isinstance(compiled, Tracer):
        return compiled
    first, second = _plain_value(f, args), _plain_value(f, args)
    if first is None or second is None or first.shape != second.shape or first.dtype != second.dtype:
        return compiled
    return first if np.array_equal(first, second, equal_nan=first.dtype.kind in "fc") else compiled


def _plain_value(f: Callable[..., Any], args: tuple) -> np.ndarray | None:
    """f(*args) on copies (f may write into x, and its layout changes NumPy's sums: order K); None
    for a traced value (an outer transformation's)."""
    value = f(*(a.copy(order="K") if isinstance(a, np.ndarray) else a for a in args))
    return None if isinstance(value, Tracer) else np.asarray(value)


def _cache_key(args: tuple, argnums: tuple, want_value: bool, max_nodes: int) -> tuple:
    """Which cached derivative to try: float arrays by shape and dtype (they become symbols),
    other arguments by content where they have one (0.0 and -0.0 differ), else by type; the
    recording then checks everything f read."""
    parts: list = [argnums, want_value, max_nodes]
    for a in args:
        dtype = getattr(a, "dtype", None)
        if isinstance(a, (np.ndarray, np.generic, Tracer)) and np.dtype(dtype).kind == "f":
            parts.append(("symbols", np.shape(a), np.dtype(dtype).str))
        else:
            try:
                parts.append(value_key(a))
            except Unkeyable:
                parts.append(("object", type(a)))
    return tuple(parts)
