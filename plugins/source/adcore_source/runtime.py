"""What generated derivative code calls, imported into every generated module as plain names.

- `unbroadcast(g, x)`: g summed back to x's shape (the rules' own helper).
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
- `method(attr)`: the function `lambda x, *args, **kwargs: x.attr(*args, **kwargs)`, one per name,
  to call a method of a value through call_vjp / call_jvp.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from adcore_reverse.zeros import MOVES, Masked, plain, total, unbroadcast_mask, zero_at

from adcore import ops
from adcore.extend.rules import unbroadcast
from adcore.spec import OpSpec

__all__ = [
    "Masked",
    "add_adjoint",
    "broadcast_like",
    "call_jvp",
    "call_vjp",
    "keep_zeros",
    "method",
    "plain",
    "unbroadcast",
    "zero_adjoint",
    "zero_tangent",
]


def broadcast_like(t: Any, y: Any) -> Any:
    """t broadcast to y's shape (t itself when it has it)."""
    shape = np.shape(y)
    if np.shape(t) == shape:
        return t
    return ops.broadcast_to(t, shape=shape)


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
def method(attr: str) -> Any:
    """The function calling method `attr` of its first argument (x.sum(axis=0) is method("sum")(x, axis=0))."""

    def call(x: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(x, attr)(*args, **kwargs)

    call.__name__ = call.__qualname__ = f"method_{attr}"
    return call


# --- tier 2: through the tape and the dual numbers ------------------------------------------------


def call_jvp(callee: Any, args: tuple, tangents: tuple, kwargs: dict) -> tuple[Any, Any]:
    """(callee(*args, **kwargs), its tangent) for `tangents` lined up with args (None: zero, or not
    differentiable); a container argument's tangent is a container of the same structure. Forward
    mode's dual numbers differentiate the call (adcore.jvp, backend "forward")."""
    import adcore

    fn = _differentiable(callee)
    arguments = _Arguments(args, kwargs)
    wanted = [pair for k, t in enumerate(tangents) if t is not None for pair in arguments.paired(k, t)]
    if not wanted:
        return callee(*args, **kwargs), None
    positions = [i for i, _ in wanted]

    def of_active(*active: Any) -> Any:
        a, kw = arguments.rebuilt(positions, active)
        return fn(*a, **kw)

    primals = tuple(arguments.leaves[i].value for i in positions)
    out, dout = adcore.jvp(of_active, primals, tuple(t for _, t in wanted), backend="forward")
    if fn is not callee:
        out = callee(*args, **kwargs)  # f's own function gives f's value (math.hypot's rounding)
    return out, dout


def call_vjp(callee: Any, args: tuple, kwargs: dict, active: tuple | None = None) -> tuple[Any, Any]:
    """(callee(*args, **kwargs), pullback): pullback(g) is one cotangent per argument, positional then
    keyword in kwargs' order, None for one with no float value (or not `active[k]`), a container's
    in its structure. g may be None (zero), Masked, or a container with None entries (zero). The
    reverse tape differentiates the call (adcore.vjp, backend "reverse"); the cotangents of `where`
    and of steps come Masked with their structural zeros, and a Masked g's zeros pass to the
    cotangents of an elementwise op or one that only moves entries (as on the tape)."""
    import adcore

    fn = _differentiable(callee)
    arguments = _Arguments(args, kwargs)
    positions = [
        i for i, leaf in enumerate(arguments.leaves) if leaf.float and (active is None or active[leaf.arg])
    ]
    if not positions:
        out = callee(*args, **kwargs)
        return out, lambda g: (None,) * (len(args) + len(kwargs))

    def of_active(*values: Any) -> Any:
        a, kw = arguments.rebuilt(positions, values)
        return fn(*a, **kw)

    out, vjp_fn = adcore.vjp(of_active, *(arguments.leaves[i].value for i in positions), backend="reverse")
    if fn is not callee:
        out = callee(*args, **kwargs)
    masking = _masking(fn)

    def pullback(g: Any) -> tuple:
        g_masked = g if g.__class__ is Masked else None
        cts = list(vjp_fn(_filled(plain(g) if g_masked is not None else g, out)))
        if masking is not None:
            cts = _with_structure(cts, masking, vjp_fn, out, g_masked)
        return arguments.per_argument(positions, cts)

    return out, pullback


class _Leaf:
    __slots__ = ("arg", "value", "float")

    def __init__(self, arg: int, value: Any) -> None:
        self.arg = arg
        self.value = value
        self.float = _is_float(value)


def _is_float(v: Any) -> bool:
    cls = v.__class__
    if cls is float or cls is complex:
        return True
    dtype = getattr(v, "dtype", None)
    return dtype is not None and getattr(dtype, "kind", "") in "fc" and not isinstance(v, type)


class _Arguments:
    """A call's arguments (positional, then keyword values) as leaves: the float ones are what a
    derivative can flow through; the rest (ints, None, strings, dtypes) stay as given."""

    def __init__(self, args: tuple, kwargs: dict) -> None:
        import optree

        self.leaves: list[_Leaf] = []
        self.specs: list[tuple[int, int, Any]] = []  # per argument: first leaf, leaf count, structure
        for k, a in enumerate((*args, *kwargs.values())):
            flat, spec = optree.tree_flatten(a, none_is_leaf=False, namespace="adcore")
            self.specs.append((len(self.leaves), len(flat), spec))
            self.leaves += [_Leaf(k, v) for v in flat]
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
        flat = [t] if n == 1 and spec.num_nodes == 1 else spec.flatten_up_to(t)
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


def _filled(g: Any, out: Any) -> Any:
    """g with a zero for None (g itself, or its entries), in out's structure (a plain tuple for a
    namedtuple's): the pullback needs a full cotangent."""
    if g is None:
        return zero_tangent(out)
    if isinstance(out, list | tuple):
        entries = [_filled(gi, oi) for gi, oi in zip(g, out, strict=True)]
        return out.__class__(*entries) if hasattr(out, "_fields") else out.__class__(entries)
    if isinstance(out, dict):
        return {k: _filled(g.get(k), v) for k, v in out.items()}
    return plain(g)


_MASKING: dict[Any, Any] = {}


def _masking(fn: Any) -> Any:
    """How fn's pullback treats structural zeros: "makes" (where, steps), "moves" (reshape, sum, ...),
    "elementwise", or None (they stop at it)."""
    try:
        return _MASKING[fn]
    except KeyError:
        pass
    except TypeError:  # unhashable
        return None
    from adcore_source.resolve import callee_kind

    callee = callee_kind(fn)
    kind = None
    if callee.masks:
        kind = "makes"
    elif (
        callee.kind in ("op", "template")
        and isinstance(callee.value, str)
        and callee.value in ops.registry().ops
    ):
        spec = ops.registry().ops[callee.value]
        kind = "moves" if spec.name in MOVES else "elementwise" if spec.elementwise else None
    _MASKING[fn] = kind
    return kind


def _with_structure(cts: list, masking: str, vjp_fn: Any, out: Any, g: Masked | None) -> list:
    """The cotangents with the structural zeros the tape would give them: their own (where, steps:
    the positions a pullback of ones leaves exactly zero) and g's, passed on as the tape passes them."""
    if isinstance(out, tuple | list | dict):
        return cts  # several outputs: no zeros are tracked (the tape tracks them per output node)
    if masking == "makes":
        reach = vjp_fn(np.ones_like(out) if hasattr(out, "shape") else 1.0)
        cts = [_masked_where_zero(ct, r) for ct, r in zip(cts, reach)]
    if g is None:
        return cts
    if masking == "moves":
        reach = vjp_fn(
            np.where(np.broadcast_to(g.zeros, np.shape(out)), 0.0, 1.0).astype(np.result_type(out))
        )
        return [_masked_where_zero(plain(ct), r) for ct, r in zip(cts, reach)]
    if masking in ("elementwise", "makes"):
        return [keep_zeros(g, ct) for ct in cts]
    return cts


def _masked_where_zero(ct: Any, reach: Any) -> Any:
    zeros = np.asarray(reach) == 0
    if not zeros.any():
        return ct
    return Masked(zero_at(ct, zeros), zeros)


# callees NumPy cannot dispatch on traced values: adcore's stand-in (resolve.Callee.fn), found once
_STAND_INS: dict[Any, Any] = {}


def _differentiable(callee: Any) -> Any:
    """What differentiates callee on traced values: itself, adcore's stand-in for a function NumPy
    does not dispatch (np.array), or the op of a `math` function (math.sin)."""
    try:
        return _STAND_INS[callee]
    except KeyError:
        pass
    except TypeError:  # unhashable
        return callee
    from adcore_source.resolve import callee_kind

    found = callee_kind(callee)
    fn = callee
    if found.kind == "op" and found.fn is not None:
        fn = found.fn
    elif found.kind == "template" and not isinstance(callee, np.ufunc | OpSpec):
        fn = ops.registry().op(found.value)
    _STAND_INS[callee] = fn
    return fn
