"""The user's function as one op of the registry whose rules are its generated derivative code.

The source backend swaps the user's function inside the engine's wrapper (pytrees laid out flat,
has_aux) for a SourceFunction, then lets the reverse or forward backend run the wrapper: the
wrapper's few ops are traced as usual, and the user's function is one op whose impl is the
generated forward sweep, whose "vjp" rule is the generated adjoint sweep and whose "jvp" rule is
the generated tangent code. So argnums, pytrees, has_aux, Jacobians, Hessians and vmap come from
the machinery every backend shares; only the function's body is differentiated from its source.
"""

from __future__ import annotations

import inspect
import itertools
import re
import weakref
from typing import Any, NamedTuple

import numpy as np

import adcore
import adcore.numpy as anp
from adcore import plugins
from adcore.core import Tracer, bind
from adcore.errors import InvalidOutputError
from adcore.hookspecs import Joint
from adcore.spec import OpSpec

_numbers = itertools.count()


class GeneratedCall:
    """One call's static part, the op's one param: the function, which positional arguments are
    differentiated (their traced leaves are the op's inputs), the others, and what the forward sweep
    left for the adjoint sweep."""

    __slots__ = (
        "function",
        "active",
        "parts",
        "arguments",
        "kwargs",
        "saved",
        "saved_for",
        "out_def",
        "sweeps",
    )

    def __init__(self, function: SourceFunction, active: tuple, parts: tuple, arguments: list, kwargs: dict):
        self.function, self.active, self.parts = function, active, parts
        self.arguments, self.kwargs = arguments, kwargs  # the static ones in place, the active ones None
        self.saved: Any = None
        self.saved_for: tuple = ()  # the inputs the forward sweep ran on
        self.out_def: Any = None  # the output's structure: None for one array
        self.sweeps: tuple | None = None  # (fwd, bwd) the forward sweep ran: its record is theirs

    def args_of(self, leaves: tuple) -> list:
        """Every positional argument, the differentiated ones rebuilt from the op's inputs."""
        args = list(self.arguments)
        for i, values in zip(self.active, self.per_argument(leaves)):
            args[i] = values
        return args

    def per_argument(self, leaves: tuple, fill: Any = None) -> list:
        """Each active argument's pytree, its traced leaves from `leaves` and its other leaves (an
        int in a dict of parameters) as they were, or `fill(leaf)` where given."""
        out, start = [], 0
        for part in self.parts:
            full = list(part.leaves) if fill is None else [fill(x) for x in part.leaves]
            for k in part.traced:
                full[k] = leaves[start]
                start += 1
            out.append(adcore.tree.unflatten(part.treedef, full))
        return out

    def leaves_of(self, values: tuple) -> list:
        """The adjoint sweep's result (a pytree per active argument, None for zero) as the op's inputs'
        cotangents, leaf for leaf."""
        out = []
        for value, part in zip(values, self.parts):
            if value is None:
                out += [None] * len(part.traced)
                continue
            leaves = adcore.tree.flatten(value)[0]
            if len(leaves) != len(part.leaves):
                raise InvalidOutputError(
                    f"backend 'source': the adjoint of an argument of {self.function.fn.__name__!r} has "
                    f"{len(leaves)} leaves, its argument {len(part.leaves)} (a bug in adcore-source)"
                )
            out += [leaves[k] for k in part.traced]
        return out


class _Part(NamedTuple):
    """An active argument: its structure, its leaves, and which of them are traced."""

    treedef: Any
    leaves: list
    traced: tuple


class SourceFunction:
    """fn whose derivatives come from its generated source: call it as fn, under any trace."""

    def __init__(self, fn: Any, compile: bool | str = False, records: bool = True) -> None:
        # records: its impl is the generated forward sweep, which keeps what the adjoint sweep needs;
        # for forward mode, whose rule computes tangents from the inputs alone, fn itself
        self.fn, self.compile, self.records = fn, compile, records
        try:
            self.signature: inspect.Signature | None = inspect.signature(fn)
        except (TypeError, ValueError):
            self.signature = None
        stem = re.sub(r"\W", "_", getattr(fn, "__qualname__", "") or "function")
        self.op = OpSpec(
            name=f"source_{stem}_{next(_numbers)}",
            impl=_forward_sweep,
            variadic=True,
            params=("call",),
            traceable=True,  # a backend with no rule of its kinds (symbolic) differentiates the impl
            doc=f"{getattr(fn, '__name__', fn)!r} differentiated by adcore-source",
        )
        plugins.add_user_op(self.op, {"vjp": Joint(_adjoint_sweep), "jvp": Joint(_tangents)})
        weakref.finalize(self, plugins.forget_user_op, self.op.name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs and self.signature is not None:  # keyword arguments in their positions
            bound = self.signature.bind(*args, **kwargs)
            args, kwargs = bound.args, bound.kwargs
        active, parts, leaves, arguments = [], [], [], list(args)
        for i, arg in enumerate(args):
            flat, td = adcore.tree.flatten(arg)
            # differentiated: the traced leaves of an argument; a plain one (the data X) is a
            # constant to every trace, and its adjoint would be computed only to be dropped
            traced = tuple(k for k, x in enumerate(flat) if isinstance(x, Tracer))
            if traced:
                active.append(i)
                parts.append(_Part(td, [None if k in traced else x for k, x in enumerate(flat)], traced))
                leaves += [flat[k] for k in traced]
                arguments[i] = None
        call = GeneratedCall(self, tuple(active), tuple(parts), arguments, kwargs)
        if not leaves:  # nothing to differentiate: the function itself
            return self.fn(*args, **kwargs)
        out = bind(self.op, *leaves, call=call)
        if call.out_def is None:
            return out
        return _rebuilt(out, call.out_def)


def _is_float(x: Any) -> bool:
    if isinstance(x, Tracer):
        return True
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        return isinstance(x, float)
    return np.dtype(dtype).kind in "fc"


# --- the op's impl and rules ------------------------------------------------------------------


def _forward_sweep(*leaves: Any, call: GeneratedCall) -> Any:
    """The impl: the generated forward sweep; what the adjoint sweep needs is kept on the call (in
    forward mode, f itself: nothing to keep)."""
    from adcore_source import generate  # (lazily: it loads the transformation's modules)

    if not call.function.records:  # on copies: f may write into its parameters, which the engine froze
        generate.forward_function(call.function.fn, call.active, call.function.compile)  # refuses first
        copies = tuple(x.copy(order="K") if x.__class__ is np.ndarray else x for x in leaves)
        return _one_array(call.function.fn(*call.args_of(copies), **call.kwargs), call)

    call.sweeps = generate.reverse_functions(call.function.fn, call.active, call.function.compile)
    out, call.saved = call.sweeps[0](*call.args_of(leaves), **call.kwargs)
    call.saved_for = leaves
    return _one_array(out, call)


def _adjoint_sweep(g: Any, ans: Any, *leaves: Any, call: GeneratedCall) -> list:
    """The "vjp" rule: the generated adjoint sweep, for every input at once."""
    from adcore_source import generate

    fwd, bwd = call.sweeps or generate.reverse_functions(call.function.fn, call.active, call.function.compile)
    saved, call.saved = call.saved, None  # the adjoint sweep may use up what it is given (its stacks)
    if saved is None or not _same(call.saved_for, leaves):
        # a second pullback; or the sweep ran on other values than the rule is given (the primals of
        # an outer trace's tracers, under a Hessian): it must run on these, or their derivative is lost
        _, saved = fwd(*call.args_of(leaves), **call.kwargs)
    adjoints = bwd(saved, g if call.out_def is None else _rebuilt(g, call.out_def))
    return call.leaves_of(tuple(adjoints))


def _zero_tangent(leaf: Any) -> Any:
    """The tangent of a leaf no trace differentiates: zeros of its shape, in its dtype if a float."""
    return np.zeros_like(leaf, dtype=np.result_type(leaf) if _is_float(leaf) else float)


def _same(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _tangents(ts: list, ans: Any, *leaves: Any, call: GeneratedCall) -> Any:
    """The "jvp" rule: the generated tangent code, once per tangent direction of the batch."""
    from adcore_source import generate

    jvp = generate.forward_function(call.function.fn, call.active, call.function.compile)
    args = call.args_of(leaves)
    batch = next(np.shape(t)[0] for t in ts if t is not None)
    rows = []
    for b in range(batch):
        seeds = [anp.zeros_like(x) if t is None else t[b] for t, x in zip(ts, leaves)]
        tangents = call.per_argument(seeds, fill=_zero_tangent)
        _, tangent_out = jvp(tuple(args), tuple(tangents), call.kwargs)
        rows.append(_one_array(tangent_out, call, check=False))
    return anp.stack(rows)


# --- one array out -----------------------------------------------------------------------------


class _OutDef:
    """A pytree output laid out as one vector: its structure, each float leaf's shape, and the
    other leaves (has_aux's aux: ints, strings) as they were."""

    __slots__ = ("treedef", "shapes", "static")

    def __init__(self, treedef: Any, shapes: list, static: dict) -> None:
        self.treedef, self.shapes, self.static = treedef, shapes, static


def _one_array(out: Any, call: GeneratedCall, check: bool = True) -> Any:
    """An op returns one array: a pytree output is its float leaves ravelled and joined (out_def
    says how); the first call (check) records the layout, the tangents' calls follow it."""
    if call.out_def is None and isinstance(out, (np.ndarray, np.generic, float, Tracer)):
        return out
    leaves, treedef = adcore.tree.flatten(out)
    if check:
        floats = [k for k, x in enumerate(leaves) if _is_float(x)]
        static = {k: x for k, x in enumerate(leaves) if k not in set(floats)}
        call.out_def = _OutDef(treedef, [(k, np.shape(leaves[k])) for k in floats], static)
    parts = [anp.ravel(leaves[k]) for k, _ in call.out_def.shapes]
    if not parts:
        raise InvalidOutputError(
            f"backend 'source': {getattr(call.function.fn, '__name__', 'the function')} returned "
            f"{type(out).__name__} with no float array in it; return arrays of numbers"
        )
    return parts[0] if len(parts) == 1 else anp.concatenate(parts)


def _rebuilt(vector: Any, out_def: _OutDef) -> Any:
    leaves, start = dict(out_def.static), 0
    for k, shape in out_def.shapes:
        size = int(np.prod(shape))
        leaves[k] = anp.reshape(vector[start : start + size], shape)
        start += size
    return adcore.tree.unflatten(out_def.treedef, [leaves[k] for k in range(len(leaves))])
