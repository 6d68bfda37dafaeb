"""The source backend: the user's function differentiated from its generated source.

`mode="reverse"` (the default) builds Jacobians from pullbacks, `mode="forward"` from tangents;
both answer jvp and vjp. `compile=True` (or "numba") jits the generated code where numba takes it.
"""

from __future__ import annotations

import functools
import os
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from adcore_forward.backend import ForwardBackend
from adcore_reverse.backend import ReverseBackend

import adcore
from adcore.backend import Backend
from adcore.errors import InvalidInputError
from adcore_source.resolve import callee_kind
from adcore_source.source_op import SourceFunction

_REVERSE, _FORWARD = ReverseBackend(), ForwardBackend()
MODES = ("reverse", "forward")
COMPILERS = (False, True, "numba")


class SourceBackend(Backend):
    """Source transformation (Tangent's way): f's Python source read, its derivative written as
    Python source from the registry's rules, and run (compiled with numba if asked)."""

    name = "source"
    kinds = ("vjp", "jvp")  # its templates are the reverse and forward rules
    builds = "vjp"
    reference_priority = 0  # an independent reading of the same rules: never the reference
    variants = {"reverse": {"mode": "reverse"}, "forward": {"mode": "forward"}}

    def for_options(self, options: dict[str, Any]) -> Backend:
        mode = options.get("mode", "reverse")
        if mode not in MODES:
            raise InvalidInputError(f"backend 'source': mode must be 'reverse' or 'forward', got {mode!r}")
        compile = options.get("compile", False)
        if compile not in COMPILERS:
            raise InvalidInputError(
                f"backend 'source': compile must be False, True or 'numba', got {compile!r}"
            )
        return _FORWARD_MODE if mode == "forward" else self

    def vjp(
        self,
        f: Callable[..., Any],
        args: tuple,
        argnums: Sequence[int],
        *,
        mode: str = "reverse",
        compile: Any = False,
    ) -> tuple[Any, Any]:
        return _REVERSE.vjp(swapped(f, compile, records=True), args, argnums)

    def jvp(
        self,
        f: Callable[..., Any],
        args: tuple,
        tangents: tuple,
        *,
        mode: str = "reverse",
        compile: Any = False,
    ) -> tuple[Any, Any]:
        return _FORWARD.jvp(swapped(f, compile, records=False), args, tangents)


class SourceForward(SourceBackend):
    """The source backend with mode="forward": Jacobians from tangents (best for few inputs)."""

    builds = "jvp"


_FORWARD_MODE = SourceForward()

# one SourceFunction per (user function, compile), kept while the user function lives
_functions: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def source_function(fn: Callable[..., Any], compile: Any, records: bool) -> SourceFunction:
    try:
        per_fn = _functions.setdefault(fn, {})
    except TypeError:  # fn cannot be weakly referenced: a new one each call
        return SourceFunction(fn, compile, records)
    sf = per_fn.get((compile, records))
    if sf is None:
        sf = per_fn[compile, records] = SourceFunction(fn, compile, records)
    return sf


def swapped(f: Callable[..., Any], compile: Any, records: bool) -> Callable[..., Any]:
    """The engine's wrapper with the user's function inside swapped for its SourceFunction; a
    function handed directly is swapped itself."""
    if isinstance(f, functools.partial) and hasattr(f.func, "with_user_function"):
        return functools.partial(swapped(f.func, compile, records), *f.args, **f.keywords)
    if hasattr(f, "with_user_function"):
        fn = f.user_function
        return f if _left_to_the_tape(fn) else f.with_user_function(source_function(fn, compile, records))
    return f if _left_to_the_tape(f) else source_function(f, compile, records)


def _left_to_the_tape(fn: Callable[..., Any]) -> bool:
    """Whether fn is run as it is by the mode's tape or dual numbers: an op (below), or adcore's own
    code, e.g. grad(f, backend="source") differentiated again: its rules, f's generated code, run on
    the outer derivative's tracers, so the outer derivative is of the generated code."""
    code = getattr(fn, "__code__", None)
    return _is_one_op(fn) or (code is not None and code.co_filename.startswith(_ADCORE_DIR))


_ADCORE_DIR = os.path.dirname(adcore.__file__) + os.sep


def _is_one_op(fn: Callable[..., Any]) -> bool:
    """Whether fn is an op or a NumPy function adcore maps to ops (np.sin, adcore.ops.sin): it has no
    source to read, and its generated derivative would be one call of its rules, which the tape or
    the dual numbers make as they run it. Remembered per function (asking reads its source)."""
    try:
        known = _one_op.get(fn)
    except TypeError:  # not weakly referable: asked each time
        return callee_kind(fn).kind in ("template", "op")
    if known is None:
        known = _one_op[fn] = callee_kind(fn).kind in ("template", "op")
    return known


_one_op: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
