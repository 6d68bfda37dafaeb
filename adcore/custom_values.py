"""The values custom rules and checkpoint hand back, checked before they are used: a fwd's or jvp
rule's `out` against the function's value, and one cotangent (or tangent) per leaf of the
differentiated arguments, of that leaf's shape and dtype. A wrong one is a typed error naming
the function, the rule and the argument."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adcore import tree
from adcore.core import Tracer
from adcore.errors import InvalidOutputError, InvalidValueError


def check_agrees(label: str, who: str, pair: str, out: Any, ans: Any) -> None:
    """The out of fwd (or of the jvp rule) must be the function's value, the body's, which every
    backend computes: a mismatch (a pair in the wrong order, a body that overflows where the
    rule does not) is refused. Values are compared where both are plain (first order)."""
    if np.shape(out) != np.shape(ans):
        raise InvalidOutputError(
            f"{label}: {who}'s out has shape {np.shape(out)}, the function's value {np.shape(ans)}; "
            f"{who} must return {pair}, out being the function's value"
        )
    if isinstance(out, Tracer) or isinstance(ans, Tracer):
        return
    tol = 1e-3 if dtype_of(ans) == np.float32 else 1e-7  # loose: fwd may compute it another way
    with np.errstate(invalid="ignore", over="ignore"):
        difference = np.abs(np.subtract(out, ans, dtype=float))
        close = difference <= tol * (1.0 + np.abs(ans))
        if not (close.all() and np.isfinite(difference).all()):
            # an infinity agrees only with itself (1000 is not close to inf), nan with nan
            close = (close & np.isfinite(difference)) | (out == ans) | (np.isnan(out) & np.isnan(ans))
    if not close.all():
        raise InvalidValueError(
            f"{label}: {who}'s out differs from the function's value (the body's), by up to "
            f"{largest_difference(out, ans)}; every backend takes the value from the body, so {who} must "
            f"return {pair} with out equal to it. Make the body compute what {who} does."
        )


def checked_pair(label: str, who: str, pair: Any, what: str, types: tuple = (tuple,)) -> tuple:
    """What fwd (`what`: "(out, residuals)") or a jvp rule ("(out, tangent_out)") returned, which
    must be a pair."""
    if not isinstance(pair, types) or len(pair) != 2:
        raise InvalidOutputError(f"{label}: {who} returned {describe(pair)}; it must return a pair {what}")
    return pair


def checked_cotangents(label: str, cts: Any, count: int) -> Any:
    """What bwd returned, which must hold one cotangent per differentiated argument."""
    if not isinstance(cts, (tuple, list)) or len(cts) != count:
        raise InvalidOutputError(
            f"{label}: bwd returned {describe(cts)}; it must return a tuple with one cotangent per "
            f"differentiated argument ({count}, nondiff_argnums excluded), e.g. (g_x,) for one"
        )
    return cts


def largest_difference(a: Any, b: Any) -> str:
    with np.errstate(invalid="ignore", over="ignore"):
        return f"{float(np.nanmax(np.abs(np.subtract(a, b, dtype=float)), initial=0.0)):.3g}"


def leaf_cotangents(label: str, who: str, what: str, values: Sequence, call: Any, leaves: tuple) -> list:
    """`values` (one per differentiated argument, in its structure) as one array per leaf,
    each of its leaf's shape and dtype; None stands for zeros."""
    out: list = []
    positions = [i for i in range(len(values) + len(call.nondiff)) if i not in call.nondiff]
    for k, (value, td) in enumerate(zip(values, call.treedefs)):
        where = f"{label}: {who}'s {what} {k} (for argument {positions[k]})"
        try:
            parts = [None] * td.num_leaves if value is None else td.flatten_up_to(value)
        except (ValueError, TypeError) as e:
            raise InvalidOutputError(
                f"{where} has structure {tree.structure(value)}, the argument has {td}: {e}"
            ) from None
        for j, part in enumerate(parts):
            out.append(leaf_value(part, leaves[len(out)], functools.partial(_path, td, where, j)))
    return out


def _path(treedef: Any, prefix: str, j: int) -> str:
    """How a message names leaf j (worked out only for one: optree's accessors are slow)."""
    return tree.paths(treedef, prefix)[j]


def leaf_value(value: Any, leaf: Any, where: Callable[[], str]) -> Any:
    """One leaf's cotangent (or tangent): zeros for None, a Python number in the leaf's dtype;
    else it must have the leaf's shape and, for a float leaf, its dtype (`where()` names it)."""
    dtype, shape = dtype_of(leaf), np.shape(leaf)
    if value is None:
        return np.zeros(shape, dtype)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = np.asarray(value, dtype=dtype)
    if not isinstance(value, (np.ndarray, np.generic, Tracer)):
        raise InvalidOutputError(f"{where()} is {describe(value)}; it must be an array like its argument")
    if np.shape(value) != shape:
        raise InvalidValueError(f"{where()} has shape {np.shape(value)}; its argument has shape {shape}")
    if dtype.kind == "f" and value.dtype != dtype:
        raise InvalidValueError(
            f"{where()} has dtype {value.dtype}; its argument has dtype {dtype} (a derivative keeps its "
            "argument's dtype)"
        )
    return value


def dtype_of(value: Any) -> np.dtype:
    return value.dtype if isinstance(value, (np.ndarray, np.generic, Tracer)) else np.result_type(value)


def describe(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    if isinstance(value, (np.ndarray, np.generic, Tracer)):
        return f"an array of shape {np.shape(value)}"
    return f"{type(value).__name__} {value!r:.60}"
