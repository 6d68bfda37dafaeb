"""checkpoint: reverse mode keeps a function's inputs and output, and recomputes its inside when sweeping back.

`adcore.checkpoint(f)` is an op (adcore.custom's machinery: a variadic op over the leaves of
f's arguments, impl = f's body). Reverse mode runs the body one level down, on values, so
the tape gets one node that keeps f's inputs and output and none of f's intermediates; its
VJP rule runs f again under reverse mode on the kept inputs and pulls the cotangent back
through that fresh tape (docs/checkpoint.md). The recomputed output must equal the kept one,
bit for bit: otherwise f read state that changed in between (a global array written in
place, np.random) and the rule would differentiate another function, so it refuses; so it
does a write into an argument and a closure over a value being differentiated. Every other
backend differentiates the body (the op is traceable).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adcore import ops, plugins, tree
from adcore.backend import RECOMPUTING
from adcore.core import concrete, plain_numbers
from adcore.custom import _Call, _Custom
from adcore.custom_values import dtype_of
from adcore.errors import StateChangedError, UnknownBackendError, UnsupportedFunctionError, keywords_checked

_last = threading.local()  # .entry: (call, g, leaves, cotangents) of the rule's last question, or None


def _vjp(i: int, g: Any, ans: Any, *leaves: Any, call: _Call) -> Any:
    """The checkpointed op's VJP rule: leaf i's cotangent. The sweep asks for one node's leaves
    one after the other with the same g: the first question recomputes them all, kept until
    the next question (not on the node: a retained tape, vjp's or jacobian's, would keep
    every call's cotangents)."""
    last = getattr(_last, "entry", None)
    if (
        last is None
        or last[0] is not call
        or last[1] is not g
        or any(a is not b for a, b in zip(last[2], leaves))
    ):
        last = (call, g, leaves, _recompute(call, g, ans, leaves))  # (nested calls use the slot meanwhile)
        _last.entry = last
    if i == len(leaves) - 1:
        _last.entry = None
    return last[3][i]


class Checkpointed(_Custom):
    """A function whose reverse-mode derivative recomputes its inside (see `checkpoint`)."""

    kind = "checkpoint"
    rules = {"vjp": _vjp}
    closure_advice = (
        "its derivative would be lost, since a checkpointed function keeps only its arguments. "
        "Pass that value as an argument."
    )

    def __init__(self, fun: Callable[..., Any], static_argnums: int | Sequence[int] = ()) -> None:
        super().__init__(fun, nondiff_argnums=static_argnums)
        self.fun = _guarded(fun, self._label, self.nondiff_argnums)
        self._register()


@keywords_checked
def checkpoint(fun: Callable[..., Any] | None = None, *, static_argnums: int | Sequence[int] = ()) -> Any:
    """f, whose reverse-mode derivative keeps only f's inputs and output and runs f once more
    in the backward sweep to recompute the rest (torch.utils.checkpoint, jax.checkpoint).

    Use it as `checkpoint(f)`, `@checkpoint` or `@checkpoint(static_argnums=(1,))`; the
    arguments at `static_argnums` are passed through as they are (ints, flags, callables),
    the others may be arrays, numbers or pytrees of them. f returns one array.
    """
    if fun is None:
        return lambda f: Checkpointed(f, static_argnums)
    return Checkpointed(fun, static_argnums)


def _guarded(fun: Callable[..., Any], label: str, static: tuple[int, ...]) -> Callable[..., Any]:
    """fun as the checkpointed op's body, refusing a write into an argument (`x *= 2`): the body
    runs on the tape's own arrays, which other nodes keep too, so its arguments are read-only
    views here (a traced value refuses it). A closure over a value being differentiated is
    refused by every custom op's impl (custom._body), with this class's `closure_advice`."""

    @functools.wraps(fun)
    def body(*args: Any) -> Any:
        args = tuple(a if i in static else tree.map(_read_only, a) for i, a in enumerate(args))
        try:
            out = fun(*args)
        except ValueError as e:
            if "read-only" not in str(e):
                raise
            raise UnsupportedFunctionError(
                f"{label} writes into one of its arguments in place ({e}); a checkpointed function "
                "runs on arrays the tape keeps. Compute a new array instead (x = x * 2, not x *= 2)."
            ) from e
        if isinstance(out, np.ndarray) and not out.flags.writeable and out.base is not None:
            out = out.copy()  # f returned (a view of) its argument: the caller gets its own array
        return out

    return body


def _read_only(leaf: Any) -> Any:
    if leaf.__class__ is not np.ndarray:
        return leaf
    view = leaf.view()
    view.flags.writeable = False
    return view


def _recompute(call: _Call, g: Any, ans: Any, leaves: tuple) -> list:
    """Every leaf's cotangent: the gradient of <g, fun(leaves)> by reverse mode, fun run again
    on the kept leaves; its output checked against the kept one."""
    from adcore.api import grad  # the API layer sits above the ops this module registers

    fun, label = call.custom.fun, call.custom._label
    floats = [k for k, x in enumerate(leaves) if dtype_of(x).kind == "f"]
    outs: list = []

    def pairing(*xs: Any) -> Any:
        args = list(leaves)
        for k, x in zip(floats, xs):
            args[k] = x
        out = fun(*call.arguments(args))
        outs.append(out)
        # g * out pulls back to exactly g (times 1.0), so the cotangents are those of a vjp
        return ops.sum(g * out)

    zeros = [np.zeros(np.shape(x), dtype_of(x)) for x in leaves]
    if not floats:
        return zeros
    backend = plugins.get_registry().exact_backend("vjp")  # this is a vjp rule: the backend building VJPs
    if backend is None:
        raise UnknownBackendError(
            f"{label}: recomputing it needs a backend that builds VJPs exactly; none is installed"
        )
    token = RECOMPUTING.set(True)
    try:
        found = grad(pairing, argnums=tuple(range(len(floats))), backend=backend.name)(
            *(leaves[k] for k in floats)
        )
    finally:
        RECOMPUTING.reset(token)
    _check_same(label, concrete(outs[0]), concrete(ans))
    for k, ct in zip(floats, found):
        zeros[k] = ct
    return zeros


def _check_same(label: str, again: Any, kept: Any) -> None:
    """Refuse a recomputed output that is not the kept one (NaN where NaN was is the same)."""
    if np.shape(again) != np.shape(kept):
        how = f"of shape {np.shape(again)} instead of {np.shape(kept)}"
    elif plain_numbers(np.equal(again, kept)).all():  # one pass in the usual case
        return
    else:
        differ = plain_numbers(~(np.equal(again, kept) | (np.isnan(again) & np.isnan(kept))))
        if not differ.any():
            return
        how = f"{int(differ.sum())} of its {differ.size} values differ"
    raise StateChangedError(
        f"{label}: run again in the backward pass it gave another output than in the forward pass "
        f"({how}), so its derivative would be that of another function. It reads something that "
        "changed in between: an array written in place after the forward pass (a global or a "
        "closure), random numbers (np.random), a counter. Pass such values as arguments (draw "
        "random numbers outside and pass them in), or do not checkpoint it."
    )


__all__ = ["Checkpointed", "checkpoint"]
