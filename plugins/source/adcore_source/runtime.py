"""What generated derivative code calls, imported into every generated module as plain names
(tier 2, `call_vjp`/`call_jvp`, lives in tier2.py).

- `unbroadcast(g, x)`: g summed back to x's shape (the rules' own helper; refused for a list x).
- `broadcast_like(t, y)`: t broadcast to y's shape (a tangent of one input of add, say).
- `zero_tangent(v)` / `zero_adjoint(v)`: zeros of v's shape and dtype (0.0 for a Python float,
  containers of zeros for containers).
- `add_adjoint(a, b)`: a + b for adjoints, None being zero, containers added entry by entry, and
  structural zeros kept (a position is one only where it is one in both).
- `call_vjp(callee, args, kwargs)` -> (out, pullback) and `call_jvp(callee, args, tangents, kwargs)`
  -> (out, dout): tier 2, any op or function adcore differentiates, through the reverse tape and the
  forward dual numbers at run time (adcore.vjp / adcore.jvp), so the derivative is the rules'.
- `Masked`, `plain(g)`, `keep_zeros(g, c)`: structural zeros (adcore_reverse.zeros). A pullback of
  `where` or a step (maximum, clip, relu, abs, ...) returns `Masked(cotangent, zeros)`: the
  positions that cannot reach the output. Generated reverse code applies an elementwise template
  to `plain(g)` and wraps the result in `keep_zeros(g, ...)`, which zeroes those positions of it,
  so a `0 * inf` there (log's `g / x` at x = 0) gives 0, as on the tape, not nan.
- `attribute(attr)`: the function `lambda x: x.attr`, one per name (a namedtuple's field of an
  active value, e.eigenvalues, through call_vjp / call_jvp).
- `method(attr)`: the function `lambda x, *args, **kwargs: x.attr(*args, **kwargs)`, one per name,
  to call a method of a value through call_vjp / call_jvp.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from adcore_reverse.zeros import Masked, plain, total, unbroadcast_mask, zero_at

from adcore import ops
from adcore.extend import rules
from adcore_source.errors import SourceTransformError

__all__ = [
    "Masked",
    "add_adjoint",
    "attribute",
    "broadcast_like",
    "keep_zeros",
    "method",
    "plain",
    "unbroadcast",
    "zero_adjoint",
    "zero_tangent",
]


def unbroadcast(g: Any, x: Any) -> Any:
    """g summed back to x's shape, as the rules sum it (adcore.extend.unbroadcast). A list or tuple x
    is refused: its `+` and `*` concatenate and repeat, which no elementwise derivative describes."""
    shape = getattr(x, "shape", None)
    if shape is None:
        if x.__class__ is list or x.__class__ is tuple:
            raise _sequence_arithmetic()
        shape = ()
    if g.__class__ is Masked:  # a tier-2 pullback's structural zeros: summed as the tape sums them
        return _unbroadcast_masked(g, x, shape)
    if getattr(g, "shape", ()) == shape:  # the common case, at the cost of two lookups (loops of scalars)
        return g
    return rules.unbroadcast(g, x)


def _unbroadcast_masked(g: Masked, x: Any, shape: tuple) -> Any:
    """A Masked g summed back to x's shape: a position of x stays a structural zero only where every
    broadcast copy of it is one (adcore_reverse.zeros.unbroadcast_mask, as on the tape)."""
    cotangent_shape = np.shape(g.cotangent)
    if cotangent_shape == shape:
        return g
    zeros = unbroadcast_mask(np.broadcast_to(g.zeros, cotangent_shape), shape)
    summed = rules.unbroadcast(g.cotangent, x)
    return Masked(summed, zeros) if zeros.any() else summed


def broadcast_like(t: Any, y: Any) -> Any:
    """t broadcast to y's shape: t itself when it has it, else a new array (writable: generated code
    may write into a tangent); refused for a list or tuple t (see unbroadcast)."""
    if t.__class__ is list or t.__class__ is tuple:
        raise _sequence_arithmetic()
    shape = np.shape(y)
    if np.shape(t) == shape:
        return t
    if isinstance(t, np.ndarray | np.generic | float | int | complex):
        dtype = np.result_type(y)  # the output's dtype, as the forward backend fits a share to it
        return np.array(np.broadcast_to(t, shape), dtype=dtype if dtype.kind in "fc" else None)
    return ops.broadcast_to(t, shape=shape)  # a traced tangent (an outer transformation)


def _sequence_arithmetic() -> SourceTransformError:
    return SourceTransformError(
        "the source transformation cannot take `+` or `*` of a list or tuple holding values with a "
        "derivative (a concatenation or repetition, not arithmetic): build the list with append or "
        "extend, or make it an array first (np.array, np.concatenate)",
        construct="+ or * of a list",
    )


def zero_tangent(v: Any) -> Any:
    """Zeros like v: its shape and dtype; a Python number's zero is 0.0 (0j for a complex);
    a list, tuple or dict of zeros for one of values."""
    cls = v.__class__
    if cls is float or cls is int or cls is bool:
        return 0.0
    if cls is complex:
        return 0j
    if cls is list:
        return [zero_tangent(x) for x in v]
    if cls is tuple:
        return tuple(zero_tangent(x) for x in v)
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        return cls(*(zero_tangent(x) for x in v))
    if cls is dict:
        return {k: zero_tangent(x) for k, x in v.items()}
    if v is None:
        return None
    if isinstance(v, np.generic):
        return v.dtype.type(0)
    return np.zeros_like(v)


zero_adjoint = zero_tangent  # the same zeros, named for the adjoint sweep (bx = zero_adjoint(x))


def add_adjoint(a: Any, b: Any) -> Any:
    """a + b for adjoints: None is zero; lists, tuples and dicts add entry by entry (not concatenate);
    a Masked position stays structurally zero only where it is in both."""
    if a is None:
        return b
    if b is None:
        return a
    cls = a.__class__
    if cls is list:
        return [add_adjoint(x, y) for x, y in zip(a, b, strict=True)]
    if cls is dict:
        return {k: add_adjoint(a.get(k), b.get(k)) for k in {**a, **b}}
    if isinstance(a, tuple) and cls is not Masked:
        entries = [add_adjoint(x, y) for x, y in zip(a, b, strict=True)]
        return cls(*entries) if hasattr(a, "_fields") else tuple(entries)
    return total(a, b)


def keep_zeros(g: Any, c: Any) -> Any:
    """c, an elementwise op's cotangent computed from plain(g), with g's structural zeros (if g is
    Masked): those positions set to 0 in c, and c Masked with them, as the tape's backward pass does."""
    if g.__class__ is not Masked:
        return c
    shape = np.shape(c)
    mask = (
        g.zeros
        if g.zeros.shape == shape
        else unbroadcast_mask(np.broadcast_to(g.zeros, np.shape(g.cotangent)), shape)
    )
    if c.__class__ is Masked:
        return Masked(zero_at(c.cotangent, mask), c.zeros | mask)
    return Masked(zero_at(c, mask), mask)


@functools.cache
def attribute(attr: str) -> Any:
    """The function reading attribute `attr` of its argument (e.eigenvalues is attribute("eigenvalues")(e)),
    to read an attribute of an active value through call_vjp / call_jvp (a namedtuple's field, x.T)."""

    def get(x: Any) -> Any:
        return getattr(x, attr)

    get.__name__ = get.__qualname__ = f"attribute_{attr}"
    return get


def called(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """fn(*args, **kwargs), for a callee that has a derivative itself (an adcore_nn Module, a callable
    pytree): the call goes through the tape with the callee as its first argument, so the derivative
    reaches its leaves too."""
    return fn(*args, **kwargs)


@functools.cache
def method(attr: str) -> Any:
    """The function calling method `attr` of its first argument (x.sum(axis=0) is method("sum")(x, axis=0))."""

    def call(x: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(x, attr)(*args, **kwargs)

    call.__name__ = call.__qualname__ = f"method_{attr}"
    call.attr = attr  # type: ignore[attr-defined]  (tier2 reads it: x.max() is np.max's structural zeros)
    return call
