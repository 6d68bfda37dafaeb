"""A tier-2 call's arguments as pytree leaves: which are floats a derivative can flow through, the
call rebuilt with some leaves replaced (traced), and per-leaf cotangents gathered per argument."""

from __future__ import annotations

from typing import Any

import numpy as np
import optree


class Leaf:
    __slots__ = ("arg", "value", "float")

    def __init__(self, arg: int, value: Any) -> None:
        self.arg = arg
        self.value = value
        self.float = is_float(value)


def is_float(v: Any) -> bool:
    cls = v.__class__
    if cls is float or cls is complex:
        return True
    dtype = getattr(v, "dtype", None)
    return dtype is not None and getattr(dtype, "kind", "") in "fc" and not isinstance(v, type)


class Arguments:
    """A call's arguments (positional, then keyword values) as leaves: the float ones are what a
    derivative can flow through; the rest (ints, None, strings, dtypes) stay as given."""

    def __init__(self, args: tuple, kwargs: dict) -> None:
        self.leaves: list[Leaf] = []
        self.specs: list[tuple[int, int, Any]] = []  # per argument: first leaf, leaf count, structure
        self.values = (*args, *kwargs.values())
        for k, a in enumerate(self.values):
            if a.__class__ in _LEAVES:  # (most arguments: one array, no container to walk)
                self.specs.append((len(self.leaves), 1, _LEAF))
                self.leaves.append(Leaf(k, a))
                continue
            flat, spec = optree.tree_flatten(a, none_is_leaf=False, namespace="adcore")
            self.specs.append((len(self.leaves), len(flat), spec))
            self.leaves += [Leaf(k, v) for v in flat]
        self.nargs, self.keys = len(args), list(kwargs)

    def rebuilt(self, positions: list[int], values: tuple) -> tuple[tuple, dict]:
        """(args, kwargs) with the leaves at `positions` replaced by `values`."""
        current = [leaf.value for leaf in self.leaves]
        for i, v in zip(positions, values):
            current[i] = v
        built = [spec.unflatten(current[start : start + n]) for start, n, spec in self.specs]
        return tuple(built[: self.nargs]), dict(zip(self.keys, built[self.nargs :]))

    def paired(self, k: int, t: Any) -> list[tuple[int, Any]]:
        """(leaf position, tangent) for argument k's float leaves, from its tangent t (a container
        like the argument, None entries for zero)."""
        start, n, spec = self.specs[k]
        flat = [t] if n == 1 and spec.num_nodes == 1 else spec.flatten_up_to(shaped_as(t, self.values[k]))
        return [
            (start + j, tj) for j, tj in enumerate(flat) if tj is not None and self.leaves[start + j].float
        ]

    def per_argument(self, positions: list[int], cts: list) -> tuple:
        """One cotangent per argument from the cotangents of the leaves at `positions`."""
        per_leaf: list[Any] = [None] * len(self.leaves)
        for i, ct in zip(positions, cts):
            per_leaf[i] = ct
        result = []
        for start, n, spec in self.specs:
            entries = per_leaf[start : start + n]
            result.append(None if all(e is None for e in entries) else spec.unflatten(entries))
        return tuple(result)


_LEAVES = frozenset({np.ndarray, float, int, complex, bool})  # leaves of every pytree namespace
_LEAF = optree.tree_structure(0.0, none_is_leaf=False, namespace="adcore")


def shaped_as(t: Any, value: Any) -> Any:
    """A tangent container t in value's container types (a plain tuple for a namedtuple's fields)."""
    if isinstance(value, list | tuple) and isinstance(t, list | tuple):
        entries = [shaped_as(ti, vi) for ti, vi in zip(t, value, strict=True)]
        return value.__class__(*entries) if hasattr(value, "_fields") else value.__class__(entries)
    if isinstance(value, dict) and isinstance(t, dict):
        return {k: shaped_as(t.get(k), v) for k, v in value.items()}
    return t
