"""Tier 2: a call of any op or function adcore differentiates, its derivative computed at run time
by the registered rules (`call_vjp`, `call_jvp`, exported to generated code by runtime.py).

An op called with its inputs as plain values (np.matmul(x, w), np.sum(x, axis=0), adcore.ops.mean)
has its registered `vjp` / `jvp` rules applied directly, as the reverse backend's backward pass and
the forward backend's dual numbers apply them (the same cotangent dtype, the same structural
zeros); anything else (Python over ops, lists of values, traced arguments under an outer
transformation, custom rules) goes through the public API, adcore.vjp(backend="reverse") and
adcore.jvp(backend="forward"), which record and sweep a tape or run dual numbers for the one call.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from adcore_reverse.backward import cotangent_of
from adcore_reverse.zeros import MOVES, Masked, moved_zeros, plain, unbroadcast_mask, with_zeros, zero_at

from adcore import numpy_dispatch, ops
from adcore.core import concrete
from adcore.errors import AdcoreError
from adcore.registry import JointRules
from adcore.spec import OpSpec
from adcore_source.tier2_arguments import Arguments


def call_vjp(callee: Any, args: tuple, kwargs: dict, active: tuple | None = None) -> tuple[Any, Any]:
    """(callee(*args, **kwargs), pullback): pullback(g) is one cotangent per argument, positional then
    keyword in kwargs' order, None for one not `active[k]`, zeros for an active one nothing reaches
    (generated code uses it), a container's in its structure. `active` (a flag per argument, in that
    order) defaults to every argument with a float value: generated code leaves it out only when
    every argument is active. An active param (np.nan_to_num(x, nan=a)'s a) is refused by the tape
    (a typed error naming op and param), as in f, never taken as a constant: that would drop its
    derivative. g may be None (zero), Masked, or a container with None entries (zero). The
    cotangents of `where` and of steps come Masked with their structural zeros, and a Masked g's
    zeros pass on to the cotangents of an elementwise op or one that only moves entries, as on
    the tape."""
    fn = _differentiable(callee)
    arguments = Arguments(args, kwargs)
    positions = [
        i for i, leaf in enumerate(arguments.leaves) if leaf.float and (active is None or active[leaf.arg])
    ]
    if not positions:
        return callee(*args, **kwargs), lambda g: (None,) * (len(args) + len(kwargs))
    wanted = _wanted(arguments, positions, active)
    direct = _direct(fn, args, kwargs) if arguments.leaves[positions[-1]].arg < len(args) else None
    if direct is not None:  # the op's rules, applied here
        out = callee(*args, **kwargs)
        pullback = _rule_pullback(
            direct, out, arguments, positions, wanted, lambda: _taped(fn, arguments, positions)
        )
        return out, pullback if _masking(fn) == "makes" else _unmasked_for_plain_g(pullback)
    out, vjp_fn = _taped(fn, arguments, positions)
    if fn is not callee:
        out = callee(*args, **kwargs)  # f's own function gives f's value (math.fabs's float)
    masking = _masking(fn)

    def pullback(g: Any) -> tuple:
        g_masked = g if g.__class__ is Masked else None
        cts = list(vjp_fn(_filled(g, out)))
        if masking is not None and not isinstance(out, tuple | list | dict):
            cts = _with_structure(cts, masking, vjp_fn, out, g_masked)
        return _zeros_for_unreached(arguments.per_argument(positions, cts), arguments, wanted)

    return out, pullback


def _unmasked_for_plain_g(pullback: Any) -> Any:
    """pullback, its cotangents plain when g is: generated code treats the cotangents of a callee
    resolve does not list as masking (MASKING_OPS) as plain arrays, and arithmetic on a Masked (a
    tuple) would raise or repeat it. A rule's own structural zeros (a triangle solve_triangular
    does not read) are dropped so, where resolve does not know of them."""

    def unmasked(g: Any) -> tuple:
        cts = pullback(g)
        if g.__class__ is Masked or not any(ct.__class__ is Masked for ct in cts):
            return cts
        return tuple(plain(ct) for ct in cts)

    return unmasked


def _wanted(arguments: Arguments, positions: list[int], active: tuple | None) -> list[bool]:
    """Per argument, whether generated code reads its cotangent: flagged active, or (no flags)
    holding a float."""
    if active is not None:
        return [bool(a) for a in active]
    floats = {arguments.leaves[i].arg for i in positions}
    return [k in floats for k in range(len(arguments.values))]


def _zeros_for_unreached(cts: tuple, arguments: Arguments, wanted: list[bool]) -> tuple:
    """The cotangents with zeros for a wanted argument the derivative does not reach (an input the
    op does not differentiate, an int): the tape gives zeros there, and generated code computes
    with the cotangent of every active argument (None would raise, or read as an empty product)."""
    if not any(ct is None and w for ct, w in zip(cts, wanted)):
        return cts
    from adcore_source.runtime import zero_tangent

    return tuple(
        zero_tangent(v) if ct is None and w else ct for ct, w, v in zip(cts, wanted, arguments.values)
    )


def call_jvp(callee: Any, args: tuple, tangents: tuple, kwargs: dict) -> tuple[Any, Any]:
    """(callee(*args, **kwargs), its tangent) for `tangents` lined up with args (None: zero, or not
    differentiable; a container argument's tangent is a container like it, None entries zero);
    the tangent None when none is given."""
    fn = _differentiable(callee)
    arguments = Arguments(args, kwargs)
    wanted = [pair for k, t in enumerate(tangents) if t is not None for pair in arguments.paired(k, t)]
    if not wanted:
        return callee(*args, **kwargs), None
    direct = _direct(fn, args, kwargs) if arguments.leaves[wanted[-1][0]].arg < len(args) else None
    if direct is not None and all(_plain(t) for _, t in wanted):
        out = callee(*args, **kwargs)
        return out, _rule_tangent(direct, out, dict(wanted))
    import adcore

    positions = [i for i, _ in wanted]

    def of_active(*values: Any) -> Any:
        a, kw = arguments.rebuilt(positions, values)
        return fn(*a, **kw)

    primals = tuple(arguments.leaves[i].value for i in positions)
    out, dout = adcore.jvp(of_active, primals, tuple(t for _, t in wanted), backend="forward")
    if fn is not callee:
        out = callee(*args, **kwargs)
    return out, dout


# --- the rules applied directly ---------------------------------------------------------------------


class _Direct:
    """An op call whose rules apply directly: the op, its inputs (= the call's leading arguments),
    its params (the call's keywords)."""

    __slots__ = ("op", "inputs", "params")

    def __init__(self, op: OpSpec, inputs: tuple, params: dict) -> None:
        self.op, self.inputs, self.params = op, inputs, params


def _direct(fn: Any, args: tuple, kwargs: dict) -> _Direct | None:
    """The op call, if fn stands for an op (not variadic) called with its inputs positionally, plain
    values all, and its params by keyword; else None."""
    op = _op_of(fn)
    if op is None or len(args) != op.nin or not all(_plain(a) for a in args):
        return None
    if kwargs and (isinstance(fn, np.ufunc) or not set(kwargs) <= set(op.params)):
        return None
    return _Direct(op, args, kwargs)


def _numpy_op(fn: Any) -> OpSpec | None:
    if isinstance(fn, np.ufunc) or (getattr(fn, "__module__", None) or "").startswith("numpy"):
        try:
            return numpy_dispatch.numpy_op(fn)
        except TypeError:  # unhashable
            return None
    return None


_OPS: dict[Any, Any] = {}


def _op_of(fn: Any) -> OpSpec | None:
    """The op fn is or stands for, if it has `vjp` and `jvp` rules of its own (not variadic)."""
    try:
        return _OPS[fn]
    except KeyError:
        pass
    except TypeError:  # unhashable
        return None
    op = fn if isinstance(fn, OpSpec) else _numpy_op(fn)
    if op is not None and (op.variadic or not (_has_rules(op, "vjp") and _has_rules(op, "jvp"))):
        op = None
    _OPS[fn] = op
    return op


def _has_rules(op: OpSpec, kind: str) -> bool:
    """Whether op has `kind` rules of its own (registry.rule loads the plugins that may bring them)."""
    try:
        rules = ops.registry().rule(kind, op, "source")
    except AdcoreError:
        return False
    return rules.__class__ is tuple or rules.__class__ is JointRules


def _rule_pullback(
    call: _Direct, ans: Any, arguments: Arguments, positions: list[int], wanted_args: list[bool], taped: Any
) -> Any:
    """The pullback applying the op's vjp rules as adcore_reverse's backward pass does."""
    op, inputs, params = call.op, call.inputs, call.params
    rules = ops.registry().rules["vjp"][op.name]
    wanted = [i in positions for i in range(len(inputs))]

    def pullback(g: Any) -> tuple:
        if g is None:
            from adcore_source.runtime import zero_tangent

            g = zero_tangent(ans)
        g_plain = plain(g)
        if not _plain(g_plain):  # a traced cotangent (an outer transformation): through the tape
            out, vjp_fn = taped()
            cts = arguments.per_argument(positions, list(vjp_fn(g_plain)))
            return _zeros_for_unreached(cts, arguments, wanted_args)
        zeros = (
            _input_zeros(op, rules, g.zeros, ans, inputs, params, wanted) if g.__class__ is Masked else None
        )
        shares = rules.joint(g_plain, ans, *inputs, **params) if rules.__class__ is JointRules else None
        cts = []
        for i in positions:
            rule = rules[i]
            if rule is None:
                cts.append(None)
                continue
            gi = rule(g_plain, ans, *inputs, **params) if shares is None else shares[i]
            if zeros is not None:
                gi = with_zeros(gi, zeros[i])
            dtype = np.result_type(inputs[i])
            if getattr(gi, "dtype", None) is not dtype:
                gi = cotangent_of(gi, dtype)
            cts.append(gi)
        return _zeros_for_unreached(arguments.per_argument(positions, cts), arguments, wanted_args)

    return pullback


def _input_zeros(
    op: OpSpec, rules: Any, known_zero: Any, ans: Any, inputs: tuple, params: dict, wanted: list
):
    """Per input, the structural zeros its cotangent gets from the output's (adcore_reverse.zeros'
    input_zeros, for a call rather than a tape node)."""
    if op.name in MOVES:
        return moved_zeros(rules, known_zero, ans, inputs, params, wanted)
    if not op.elementwise:
        if not known_zero.all():
            return None  # positions no longer line up with the inputs'
        known_zero = np.ones((), bool)
    zeros = []
    for i, a in enumerate(inputs):
        shape = np.shape(a)
        mask = (
            np.broadcast_to(known_zero, shape)
            if known_zero.ndim == 0
            else unbroadcast_mask(known_zero, shape)
        )
        zeros.append((mask, False) if wanted[i] and mask.any() else None)
    return zeros


def _rule_tangent(call: _Direct, ans: Any, tangents: dict[int, Any]) -> Any:
    """The op's jvp rules applied to one tangent direction as the forward backend applies them to
    a batch of one: the shares summed, fitted to ans's shape and dtype."""
    op, inputs, params = call.op, call.inputs, call.params
    rules = ops.registry().rules["jvp"][op.name]
    batched = {i: np.asarray(t)[None] for i, t in tangents.items()}
    if rules.__class__ is JointRules:
        tangent = rules.joint([batched.get(i) for i in range(len(inputs))], ans, *inputs, **params)
    else:
        tangent = None
        for i, t in batched.items():
            if rules[i] is not None:
                share = rules[i](t, ans, *inputs, **params)
                tangent = share if tangent is None else tangent + share
        if tangent is None:
            return None
    shape = (1, *np.shape(ans))
    if np.shape(tangent) != shape:
        tangent = np.broadcast_to(tangent, shape)
    dtype = np.result_type(ans)
    if tangent.dtype != dtype:
        tangent = np.real(tangent) if tangent.dtype.kind == "c" and dtype.kind != "c" else tangent
        tangent = tangent.astype(dtype)
    return tangent[0]


def _plain(v: Any) -> bool:
    cls = v.__class__
    return (
        cls is np.ndarray
        or cls is float
        or cls is int
        or cls is bool
        or cls is complex
        or isinstance(v, np.generic)
    )


def _filled(g: Any, out: Any) -> Any:
    """g with a zero for None (g itself, or its entries), in out's structure (a plain tuple for a
    namedtuple's), structural zeros dropped: the pullback needs a full plain cotangent."""
    from adcore_source.runtime import zero_tangent

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

    attr = getattr(fn, "attr", None)  # runtime.method(attr): x.max() is np.max's
    numpy_function = getattr(np, attr, None) if isinstance(attr, str) else None
    callee = callee_kind(numpy_function if numpy_function is not None else fn)
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
        from adcore_source.runtime import keep_zeros

        return [keep_zeros(g, ct) for ct in cts]
    return cts


def _masked_where_zero(ct: Any, reach: Any) -> Any:
    zeros = np.asarray(concrete(reach)) == 0  # reach is traced under an outer transformation
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


# --- through the public API ---------------------------------------------------------------------------


def _taped(fn: Any, arguments: Arguments, positions: list[int]) -> tuple[Any, Any]:
    import adcore

    def of_active(*values: Any) -> Any:
        a, kw = arguments.rebuilt(positions, values)
        return fn(*a, **kw)

    return adcore.vjp(of_active, *(arguments.leaves[i].value for i in positions), backend="reverse")
