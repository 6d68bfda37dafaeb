"""custom_vjp and custom_jvp: a Python function with its own derivative rule, registered as an op.

JAX's contracts. `@custom_vjp` with `f.defvjp(fwd, bwd)`: `fwd(*args) -> (out, residuals)`,
`bwd(*nondiff, residuals, g) -> one cotangent per differentiated argument`. `@custom_jvp` with
`@f.defjvp`: `rule(*nondiff, primals, tangents) -> (out, tangent_out)`.

Under the hood each definition is a variadic op in the registry (docs/custom-rules.md): its
inputs are the leaves of the differentiated arguments, its one param (`call`) the function
itself, the static arguments and the arguments' structure, its impl the body. A custom_vjp op
has a "vjp" rule built from fwd and bwd; a custom_jvp op has a "jvp" rule (the user's rule,
pushed forward along the whole batch of tangent directions) and a "vjp" rule that transposes
it (reverse mode of `t -> rule(primals, t)[1]`, which is linear in t). A backend with no rule
of its kind differentiates the body (the op is `traceable`).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import re
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from adcore import ops, plugins, tree
from adcore.api import value_and_grad
from adcore.batch_trace import OVERRIDDEN_BODY_RULES, BatchTracer
from adcore.core import Tracer, frozen_value, plain_numbers
from adcore.custom_batching import batch_rule
from adcore.custom_values import (
    check_agrees,
    checked_cotangents,
    checked_pair,
    dtype_of,
    leaf_cotangents,
    leaf_value,
)
from adcore.errors import (
    BatchedConversionError,
    InvalidArgnumsError,
    InvalidInputError,
    InvalidOutputError,
    InvalidValueError,
    MissingRuleError,
    UnknownBackendError,
    UnsupportedFunctionError,
    keywords_checked,
)
from adcore.spec import OpSpec

_numbers = itertools.count()
# The levels of the tracers standing for tangents while a custom_jvp rule is pushed forward or
# transposed. A rule may call its own function on a tangent (`return f(p), f(t)` for a linear f,
# as JAX allows); that call differentiates f's body, as JAX's linearization does, where f's rule
# would be pushed forward again, and again, without end.
_tangent_levels: ContextVar[frozenset[int]] = ContextVar("adcore_tangent_levels", default=frozenset())


@dataclass(eq=False)
class _Call:
    """One call's static part, the op's one param: the custom function (its body and rules),
    the nondiff arguments, the differentiated arguments' structure; and the last cotangents
    computed for it (see `_cotangents`).

    The op's impl and rules are module functions that read the function from here, so the
    registry holds no reference to it (it can be freed, and its op with it), while a tape
    node that still needs it holds it through this object.
    """

    custom: _Custom
    static: tuple
    treedefs: tuple
    cached: tuple | None = field(default=None, repr=False)

    @property
    def nondiff(self) -> tuple[int, ...]:
        return self.custom.nondiff_argnums

    def differentiated(self, leaves: Sequence[Any]) -> list:
        """The differentiated arguments, rebuilt from the op's inputs."""
        out, start = [], 0
        for td in self.treedefs:
            out.append(tree.unflatten(td, leaves[start : start + td.num_leaves]))
            start += td.num_leaves
        return out

    def arguments(self, leaves: Sequence[Any]) -> list:
        """Every positional argument of the body, the static ones back in their places."""
        args = self.differentiated(leaves)
        for i, value in sorted(zip(self.nondiff, self.static)):
            args.insert(i, value)
        return args


class _Custom:
    """What custom_vjp and custom_jvp share: the body, `nondiff_argnums`, and calling the op."""

    kind = ""  # "custom_vjp" or "custom_jvp", for messages
    # what a body closing over a value being differentiated loses, and what to do instead
    closure_advice = (
        "its rule covers its arguments only, so that value's derivative would be lost. Pass the value "
        "as an argument, with its cotangent from bwd (its tangent in the jvp rule)."
    )
    rules: dict[str, Callable[..., Any]] = {}  # the op's rules by kind: the same for every function

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: Sequence[int] = ()) -> None:
        if not callable(fun):
            raise InvalidInputError(f"{self.kind} decorates a function, got {type(fun).__name__} {fun!r}")
        nondiff = (nondiff_argnums,) if type(nondiff_argnums) is int else tuple(nondiff_argnums)
        if any(type(i) is not int or i < 0 for i in nondiff) or len(set(nondiff)) != len(nondiff):
            raise InvalidArgnumsError(
                f"{self.kind} {_name(fun)!r}: nondiff_argnums must be distinct non-negative ints, "
                f"got {nondiff_argnums!r}"
            )
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(sorted(nondiff))
        try:
            self._signature: inspect.Signature | None = inspect.signature(fun)
        except (TypeError, ValueError):
            self._signature = None
        self.op: OpSpec | None = None  # registered by the first defvjp / defjvp

    @property
    def _label(self) -> str:
        return f"{self.kind} function {_name(self.fun)!r}"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        op = self.op
        if op is None:
            # as JAX: calling it before its rule is given is an error, not a silent body derivative
            how = "f.defvjp(fwd, bwd)" if self.kind == "custom_vjp" else "@f.defjvp on a rule"
            raise MissingRuleError(f"{self._label} has no rule yet: give it one with {how} before calling it")
        if _on_a_tangent(args, kwargs):
            return self.fun(*args, **kwargs)
        args = self._positional(args, kwargs)
        nondiff = self.nondiff_argnums
        if nondiff and nondiff[-1] >= len(args):
            raise InvalidArgnumsError(
                f"{self._label}: nondiff_argnums {nondiff} name an argument beyond the {len(args)} it was "
                "called with"
            )
        leaves, treedefs = [], []
        for i, arg in enumerate(args):
            if i in nondiff:
                continue
            flat, td = tree.flatten(arg)
            try:
                tree.check_leaves(flat, td, f"argument {i} of {self._label}")
            except InvalidInputError as e:
                raise InvalidInputError(f"{e}; or name it in nondiff_argnums, as a static argument") from None
            leaves += flat
            treedefs.append(td)
        # copied: the rules run the body (or fwd, bwd) again in the backward pass, after the caller
        # may have written into an index array or appended to a list it passed here
        static = tuple(frozen_value(args[i]) for i in nondiff)
        traced = [
            i for i, value in zip(nondiff, static) if any(isinstance(x, Tracer) for x in tree.leaves(value))
        ]
        for i in traced:  # a static argument vmap batches: each example has its own, so vmap loops
            batched = [x for x in tree.leaves(args[i]) if isinstance(x, BatchTracer)]
            if batched:
                raise BatchedConversionError(
                    batched[0]._trace,
                    f"a batched value as argument {i} of {self._label} (in nondiff_argnums)",
                )
        if traced:
            raise InvalidInputError(
                f"{self._label}: argument {traced[0]} is in nondiff_argnums but holds a value being "
                "differentiated; a static argument has no derivative, so it would be lost. Take it out "
                "of nondiff_argnums (and give its cotangent or tangent in the rule)."
            )
        call = _Call(self, static, tuple(treedefs))
        return op(*leaves, call=call)

    def _positional(self, args: tuple, kwargs: dict) -> tuple:
        """Keyword arguments resolved to their positions, defaults filled in (as JAX does)."""
        if not kwargs and (self._signature is None or len(args) >= len(self._signature.parameters)):
            return args
        if self._signature is None:
            raise InvalidInputError(f"{self._label} has no signature to place keyword arguments by")
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise InvalidInputError(f"{self._label}: {e}") from e
        bound.apply_defaults()
        unplaced = sorted(set(bound.kwargs) & set(kwargs))  # a keyword-only default is the body's own
        if unplaced:
            raise InvalidInputError(
                f"{self._label}: keyword-only argument(s) {unplaced} cannot be resolved to a "
                "position, and a custom rule receives its arguments by position; make them positional, "
                "or bind them first with functools.partial"
            )
        return bound.args

    def _register(self) -> None:
        """Register this function's op, once: the rules read the current definition from `_Call`,
        so defining again replaces the rule."""
        if self.op is not None:
            return
        stem = re.sub(r"\W", "_", getattr(self.fun, "__qualname__", "") or _name(self.fun))
        spec = OpSpec(
            name=f"custom_{stem}_{next(_numbers)}",
            impl=_body,
            variadic=True,
            params=("call",),
            traceable=True,  # a backend with no rule of its kind differentiates the body
            doc=f"{self._label} (adcore.custom)",
        )
        plugins.add_user_op(spec, self.rules)
        self.op = spec
        # when this function is garbage-collected (one defined inside a loop), so is its op
        weakref.finalize(self, plugins.forget_user_op, spec.name)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        # a method: the instance is the first argument (list it in nondiff_argnums unless it is a pytree)
        return self if obj is None else functools.partial(self, obj)

    def __repr__(self) -> str:
        return f"<{self._label}>"


def _on_a_tangent(args: tuple, kwargs: dict) -> bool:
    """Whether this call is a rule's, on a tangent it is being pushed forward or transposed in."""
    levels = _tangent_levels.get()
    return bool(levels) and any(
        isinstance(x, Tracer) and x._trace.level in levels for x in tree.leaves((args, kwargs))
    )


@contextlib.contextmanager
def _tangents(values: Sequence[Any]) -> Iterator[None]:
    """While a rule runs on these tangents (see `_tangent_levels`)."""
    levels = {v._trace.level for v in values if isinstance(v, Tracer)}
    token = _tangent_levels.set(_tangent_levels.get() | levels)
    try:
        yield
    finally:
        _tangent_levels.reset(token)


def _name(fun: Any) -> str:
    return getattr(fun, "__name__", None) or repr(fun)


def _body(*leaves: Any, call: _Call) -> Any:
    """The impl of every custom op: the function's body."""
    out = call.custom.fun(*call.arguments(leaves))
    if not isinstance(out, (np.ndarray, np.generic, Tracer, int, float)):
        raise InvalidOutputError(
            f"{call.custom._label} returned {type(out).__name__}; a custom function returns one array "
            "(differentiate several outputs as separate functions, or stack them)"
        )
    if isinstance(out, Tracer):
        # traced by a transformation none of its inputs belongs to: a closure over a value being
        # differentiated, which the rules (they cover the arguments) would miss, as JAX refuses too
        levels = [leaf._trace.level for leaf in leaves if isinstance(leaf, Tracer)]
        if out._trace.level > max(levels, default=-1):
            raise UnsupportedFunctionError(
                f"{call.custom._label} uses a value being differentiated that is not one of its arguments "
                f"(a closure, or a global read inside it): {call.custom.closure_advice}"
            )
    return out


# under vmap inside a derivative, a custom function's op is batched through its rules
OVERRIDDEN_BODY_RULES[_body] = batch_rule


# --- custom_vjp -------------------------------------------------------------------------


class custom_vjp(_Custom):  # noqa: N801 (JAX's name)
    """`@adcore.custom_vjp`: f's reverse-mode derivative is given by `f.defvjp(fwd, bwd)`.

    Reverse mode uses the rule; a backend without "vjp" rules (forward, symbolic, numeric)
    differentiates f's body. bwd runs again on fwd's residuals in the backward pass: fwd is
    recomputed there (docs/custom-rules.md).
    """

    kind = "custom_vjp"
    __init__ = keywords_checked(_Custom.__init__, "custom_vjp")  # nondiff_argnum=: did you mean

    def defvjp(self, fwd: Callable[..., Any], bwd: Callable[..., Any]) -> None:
        """fwd(*args) -> (out, residuals); bwd(*nondiff_args, residuals, g) -> a tuple with one
        cotangent per differentiated argument, in that argument's structure (None: zero)."""
        for what, fn in (("fwd", fwd), ("bwd", bwd)):
            if not callable(fn):
                raise InvalidInputError(f"{self._label}.defvjp: {what} must be callable, got {fn!r}")
        self.fwd, self.bwd = fwd, bwd
        self._register()

    rules = {"vjp": lambda i, g, ans, *leaves, call: _cotangents(call, g, ans, leaves, _run_bwd)[i]}


def _run_bwd(call: _Call, g: Any, ans: Any, leaves: tuple) -> list:
    """Every leaf's cotangent from bwd, fwd run again for the residuals; checked."""
    label, fwd, bwd = call.custom._label, call.custom.fwd, call.custom.bwd
    pair = checked_pair(label, "fwd", fwd(*call.arguments(leaves)), "(out, residuals)")
    check_agrees(label, "fwd", "(out, residuals)", pair[0], ans)
    cts = checked_cotangents(label, bwd(*call.static, pair[1], g), len(call.treedefs))
    return leaf_cotangents(label, "bwd", "cotangent", cts, call, leaves)


def _cotangents(call: _Call, g: Any, ans: Any, leaves: tuple, compute: Callable[..., list]) -> list:
    """Every leaf's cotangent for this cotangent `g` at these inputs, computed once.

    The reverse sweep asks a variadic op's rule once per input, with the same g and inputs:
    the first answer is kept on the call (which the tape node holds), keyed by identity.
    """
    cached = call.cached
    if cached is not None and cached[0] is g and len(cached[1]) == len(leaves):
        if all(a is b for a, b in zip(cached[1], leaves)):
            return cached[2]
    result = compute(call, g, ans, leaves)
    call.cached = (g, leaves, result)
    return result


# --- custom_jvp -------------------------------------------------------------------------


class custom_jvp(_Custom):  # noqa: N801 (JAX's name)
    """`@adcore.custom_jvp`: f's forward-mode derivative is given by `@f.defjvp`.

    Forward mode uses the rule; reverse mode uses its transpose (the rule is linear in the
    tangents); a backend with neither kind (symbolic, numeric) differentiates f's body.
    """

    kind = "custom_jvp"
    __init__ = keywords_checked(_Custom.__init__, "custom_jvp")  # nondiff_argnum=: did you mean

    def defjvp(self, jvp: Callable[..., Any]) -> Callable[..., Any]:
        """`@f.defjvp` on `rule(*nondiff_args, primals, tangents) -> (out, tangent_out)`; primals
        and tangents are tuples of the differentiated arguments. Returns the rule."""
        if not callable(jvp):
            raise InvalidInputError(f"{self._label}.defjvp: the rule must be callable, got {jvp!r}")
        self.jvp = jvp
        self._register()
        return jvp

    rules = {
        "jvp": lambda i, t, ans, *leaves, call: _batched_jvp(i, t, ans, leaves, call),
        "vjp": lambda i, g, ans, *leaves, call: _cotangents(call, g, ans, leaves, _transpose)[i],
    }


def _tangent_out(
    call: _Call, ans: Any, leaves: Sequence[Any], tangents: Sequence[Any], check_out: bool = False
) -> Any:
    """The user's jvp rule at these primals and (unbatched) tangents, one per leaf; checked
    (its out against the function's value too with `check_out`, once per use is enough)."""
    label = call.custom._label
    primals = tuple(call.differentiated(leaves))
    pair = call.custom.jvp(*call.static, primals, tuple(call.differentiated(tangents)))
    pair = checked_pair(label, "the jvp rule", pair, "(out, tangent_out)", (tuple, list))
    if check_out:
        check_agrees(label, "the jvp rule", "(out, tangent_out)", pair[0], ans)
    return leaf_value(pair[1], ans, lambda: f"{label}: the jvp rule's tangent_out")


def _batched_jvp(i: int, t: Any, ans: Any, leaves: tuple, call: _Call) -> Any:
    """Input i's share of the output's batched tangent, shape (B,) + ans.shape.

    The rule takes one tangent per argument and t holds B directions. The rule is linear in
    its tangents, so its JVP at t = 0 along each direction is the rule at that direction: one
    forward pass with the batch (by a backend that builds JVPs) gives all B at once, exactly,
    and its value at 0 checks the linearity. Without such a backend, the rule runs B times.
    """
    batch = t.shape[0]
    zero_share = np.zeros((batch,) + np.shape(ans), dtype_of(ans))
    if batch == 0:
        return zero_share
    tangents = [np.zeros(np.shape(x), dtype_of(x)) for x in leaves]
    forward = _backend_that_builds("jvp")
    if forward is None:
        rows = []
        for b in range(batch):
            tangents[i] = t[b]
            rows.append(_tangent_out(call, ans, leaves, tangents, check_out=b == 0))
        return ops.stack(*rows)

    def rule_at(ti: Any) -> Any:
        with _tangents((ti,)):
            return _tangent_out(call, ans, leaves, [*tangents[:i], ti, *tangents[i + 1 :]], check_out=True)

    at_zero, shares = forward.jvp(rule_at, (tangents[i],), (t,))
    _check_linear(call, at_zero, forward.name)
    return zero_share if shares is None else shares


def _backend_that_builds(builds: str) -> Any:
    """The exact backend that builds `builds` ("jvp" or "vjp"), chosen by what it can do, or None."""
    return plugins.get_registry().exact_backend(builds)


def _check_linear(call: _Call, at_zero: Any, backend: str) -> None:
    """A jvp rule's tangent_out must be 0 at zero tangents (the least a linear map does)."""
    value = plain_numbers(at_zero)  # under vmap: every example's
    if np.any(np.abs(value) > 0):  # (a nan passes: 0 * inf inside the rule is its own answer)
        raise InvalidValueError(
            f"{call.custom._label}: the jvp rule's tangent_out is not 0 at zero tangents (up to "
            f"{float(np.nanmax(np.abs(value))):.3g}), so it is not linear in the tangents, and backend "
            f"{backend!r} would give a wrong derivative. A jvp rule returns (out, tangent_out) in that order, "
            "tangent_out linear in the tangents."
        )


def _transpose(call: _Call, g: Any, ans: Any, leaves: tuple) -> list:
    """The cotangent of each leaf: the gradient of <g, tangent_out(t)> with respect to the
    tangents t, by reverse mode (tangent_out is linear in t, so any t will do: zeros)."""
    floats = [k for k, x in enumerate(leaves) if dtype_of(x).kind == "f"]
    zeros = [np.zeros(np.shape(x), dtype_of(x)) for x in leaves]
    if not floats:
        return zeros

    def pairing(*ts: Any) -> Any:
        tangents = list(zeros)
        for k, t in zip(floats, ts):
            tangents[k] = t
        with _tangents(ts):
            return ops.sum(g * _tangent_out(call, ans, leaves, tangents, check_out=True))

    backend = _backend_that_builds("vjp")
    if backend is None:
        raise UnknownBackendError(
            f"{call.custom._label}: reverse mode transposes its jvp rule with a backend that builds "
            "VJPs exactly, and none is installed; differentiate it in forward mode instead"
        )
    value, found = value_and_grad(pairing, argnums=tuple(range(len(floats))), backend=backend.name)(
        *(zeros[k] for k in floats)
    )
    _check_linear(call, value, backend.name)  # <g, tangent_out> at zero tangents
    for k, ct in zip(floats, found):
        zeros[k] = ct
    return zeros


__all__ = ["custom_jvp", "custom_vjp"]
