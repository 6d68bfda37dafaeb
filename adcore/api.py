"""The public API: differentiate, grad, jacobian, hessian, value_and_grad, jvp, vjp, backends."""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adcore.backend import Backend
from adcore.core import Tracer
from adcore.errors import InvalidArgnumsError, InvalidInputError, InvalidValueError
from adcore.plugins import get_registry

Argnums = int | Sequence[int]


def backends() -> list[str]:
    """Names of the installed backends."""
    return sorted(get_registry().backends)


def get_backend(name: str) -> Backend:
    """The installed backend called `name` (UnknownBackendError lists the installed ones)."""
    if not isinstance(name, str):
        raise InvalidInputError(
            f"backend must be the name of an installed backend, a str such as backend='reverse', got "
            f"{type(name).__name__} {name!r}; installed backends: {', '.join(backends()) or 'none'}"
        )
    return get_registry().backend(name)


def optimizer(name: str, params: Any, **hyper: Any) -> Any:
    """The optimizer a plugin registered as `name`, over `params` (arrays updated in place):
    `adcore.optimizer("adam", [w, b], lr=1e-2)`; then `.step(grads)` once per batch."""
    return get_registry().optimizer(name)(params, **hyper)


def optimizers() -> list[str]:
    """Names of the installed optimizers."""
    return sorted(get_registry().optimizers)


def differentiate(f: Callable[..., Any], backend: str = "reverse", argnums: Argnums = 0, **options: Any):
    """d f / d args[argnums]: a function returning an array of shape f(...).shape + arg.shape.

    With a tuple `argnums` it returns a tuple, one derivative per argument. Options pass
    through to the backend. The derivative keeps each argument's dtype.
    """
    be = _prepare(f, backend, "value_and_jacobian", options)

    @functools.wraps(f)
    def derivative(*args: Any, **kwargs: Any) -> Any:
        _, *result = _value_and_jacobian(f, be, args, kwargs, argnums, options, scalar=False, value=False)
        return _one_or_all(result, argnums)

    return derivative


jacobian = differentiate


def grad(f: Callable[..., Any], argnums: Argnums = 0, backend: str = "reverse", **options: Any):
    """The gradient of a scalar-valued f (NonScalarOutputError otherwise)."""
    be = _prepare(f, backend, "value_and_jacobian", options)

    @functools.wraps(f)
    def gradient(*args: Any, **kwargs: Any) -> Any:
        _, *result = _value_and_jacobian(f, be, args, kwargs, argnums, options, scalar=True, value=False)
        return _one_or_all(result, argnums)

    return gradient


def value_and_grad(f: Callable[..., Any], argnums: Argnums = 0, backend: str = "reverse", **options: Any):
    """Like `grad`, returning (f(...), gradient) from one evaluation of f."""
    be = _prepare(f, backend, "value_and_jacobian", options)

    @functools.wraps(f)
    def both(*args: Any, **kwargs: Any) -> tuple:
        value, *result = _value_and_jacobian(f, be, args, kwargs, argnums, options, scalar=True)
        derivative = _one_or_all(result, argnums)
        return (value, *derivative) if len(result) == 2 else (value, derivative)

    return both


def hessian(
    f: Callable[..., Any],
    argnums: Argnums = 0,
    *,
    backend: str | None = None,
    inner: str | None = None,
    outer: str | None = None,
):
    """Second derivatives: the Jacobian (by `outer`) of the Jacobian (by `inner`) of f.

    The default is forward over reverse: one reverse sweep for the gradient, its
    derivative by forward mode with one tangent per input. `backend=` uses one backend
    for both, `inner=`/`outer=` pick each (they override `backend`). The result has
    shape f(...).shape + x.shape + x.shape; with a tuple `argnums`, H[i][j] is
    d^2 f / d args[i] d args[j].
    """
    inner = inner if inner is not None else backend if backend is not None else "reverse"
    outer = outer if outer is not None else backend if backend is not None else "forward"
    get_backend(inner), get_backend(outer)  # an unknown name fails here, not at the first call
    if not callable(f):
        raise InvalidInputError(f"expected a function to differentiate, got {type(f).__name__} {f!r}")
    if type(argnums) is int:
        return differentiate(differentiate(f, inner, argnums), outer, argnums)

    @functools.wraps(f)
    def second_derivatives(*args: Any, **kwargs: Any) -> tuple:
        nums = _argnums(argnums, len(args))  # checked here: a bad argnums is refused, not iterated
        return tuple(differentiate(differentiate(f, inner, i), outer, nums)(*args, **kwargs) for i in nums)

    return second_derivatives


def jvp(
    f: Callable[..., Any],
    primals: Sequence[Any],
    tangents: Sequence[Any],
    backend: str = "forward",
    **options: Any,
):
    """(f(*primals), J·tangents): the derivative of f at `primals` along `tangents`.

    `primals` and `tangents` are tuples (or lists) of the same length; each tangent has
    its primal's shape and dtype (a Python number is taken in the primal's dtype).
    """
    be = _prepare(f, backend, "jvp", options)
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise InvalidInputError(
            "jvp(f, primals, tangents): primals and tangents must be tuples (or lists), one entry per "
            f"argument of f, got {type(primals).__name__} and {type(tangents).__name__}; "
            "write jvp(f, (x,), (v,)) for one argument"
        )
    if len(primals) != len(tangents) or not primals:
        raise InvalidInputError(
            f"jvp: {len(primals)} primal(s) but {len(tangents)} tangent(s); give one tangent per primal"
        )
    args = tuple(_float_input(x, i) for i, x in enumerate(primals))
    ts = tuple(_tangent(t, x, i) for i, (t, x) in enumerate(zip(tangents, args)))
    out, tangent_out = be.jvp(f, args, ts, **options)
    return _fresh(out), _like(tangent_out, np.asarray(out) if not isinstance(out, Tracer) else out)


def vjp(f: Callable[..., Any], *primals: Any, backend: str = "reverse", **options: Any):
    """(f(*primals), vjp_fn): vjp_fn(cotangent) returns one cotangent per primal, as a tuple."""
    be = _prepare(f, backend, "vjp", options)
    args = tuple(_float_input(x, i) for i, x in enumerate(primals))
    out, pullback = be.vjp(f, args, **options)

    def vjp_fn(cotangent: Any) -> tuple:
        return tuple(_like(g, x) for g, x in zip(pullback(_cotangent(cotangent, out)), args))

    return _fresh(out), vjp_fn


def _prepare(f: Callable[..., Any], backend: str, method: str, options: dict) -> Backend:
    """The backend, once f is known to be callable and the options to be the backend's own."""
    if not callable(f):
        raise InvalidInputError(f"expected a function to differentiate, got {type(f).__name__} {f!r}")
    be = get_backend(backend)
    if options:
        params = inspect.signature(getattr(be, method)).parameters.values()
        if any(p.kind is p.VAR_KEYWORD for p in params):  # passed on, as the base jvp does
            params = inspect.signature(be.value_and_jacobian).parameters.values()
        takes_any = any(p.kind is p.VAR_KEYWORD for p in params)  # the backend checks them itself
        known = sorted(p.name for p in params if p.kind is p.KEYWORD_ONLY and p.name != "scalar_output")
        unknown = [] if takes_any else sorted(set(options) - set(known))
        if unknown:
            close = difflib.get_close_matches(unknown[0], known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise InvalidInputError(
                f"backend {backend!r} has no option {unknown[0]!r}{hint}. Its options: {', '.join(known) or 'none'}."
            )
    return be


def _value_and_jacobian(f, be, args, kwargs, argnums, options, scalar, value=True) -> tuple:
    """(value, jacobians) or, with return_error, (value, jacobians, errors), each in its
    argument's dtype; with value=False the backend may skip f(*args) and give None."""
    nums = _argnums(argnums, len(args))
    # a position named twice (argnums=(0, 0), or (0, -2) with two arguments) is differentiated
    # once and its derivative given at each place it was named, as JAX does: a backend asked for
    # the same argument twice would split (or double) its derivative between the two
    unique = tuple(dict.fromkeys(nums))
    args = list(args)
    for i in unique:
        args[i] = _float_input(args[i], i)
    fn = functools.partial(f, **kwargs) if kwargs else f
    call = be.value_and_jacobian if value else be.jacobian
    out, *arrays = call(fn, tuple(args), unique, scalar_output=scalar, **options)
    place = {i: k for k, i in enumerate(unique)}
    return (
        _fresh(out) if value else None,
        *(tuple(_like(each[place[i]], args[i]) for i in nums) for each in arrays),
    )


def _one_or_all(result: list, argnums: Argnums) -> Any:
    """The derivative for an int argnums, the tuple for a tuple; paired with its error estimate
    when the backend was asked for one (return_error=True)."""
    picked = [each[0] if isinstance(argnums, int) else each for each in result]
    return picked[0] if len(picked) == 1 else tuple(picked)


def _argnums(argnums: Argnums, nargs: int) -> tuple[int, ...]:
    """argnums as a tuple of non-negative positions, checked against the call's arguments."""
    nums = (argnums,) if type(argnums) is int else argnums
    if not isinstance(nums, (tuple, list)) or not nums or any(type(i) is not int for i in nums):
        raise InvalidArgnumsError(f"argnums must be an int or a non-empty tuple of ints, got {argnums!r}")
    positions = []
    for i in nums:
        if not -nargs <= i < nargs:
            raise InvalidArgnumsError(
                f"argnums {argnums!r} is out of range: the function was called with {nargs} positional "
                f"argument(s), so argnums must lie in [{-nargs}, {nargs - 1}]"
            )
        positions.append(i % nargs)
    return tuple(positions)


def _float_input(x: Any, i: int) -> Any:
    """A float array (or tracer) for argument i; integers and other types are an error."""
    dtype = x.dtype if isinstance(x, (Tracer, np.ndarray)) else None
    if dtype is None:
        try:
            x = np.asarray(x)
        except Exception as e:
            raise InvalidInputError(f"argument {i} ({type(x).__name__}) is not an array") from e
        dtype = x.dtype
    if dtype.kind != "f":
        raise InvalidInputError(
            f"argument {i} has dtype {dtype}: derivatives are taken with respect to float32 or "
            "float64 arrays only (integers have no derivative). Pass it as np.asarray(x, float), "
            "or leave it out of argnums."
        )
    return x


def _tangent(t: Any, x: Any, i: int) -> Any:
    """The tangent for primal i: its shape and dtype, or a clear error."""
    if isinstance(t, (int, float)):
        t = np.asarray(t, dtype=x.dtype)
    elif not isinstance(t, (Tracer, np.ndarray, np.generic)):
        raise InvalidInputError(f"jvp: tangent {i} ({type(t).__name__}) is not an array")
    if np.shape(t) != np.shape(x):
        raise InvalidInputError(
            f"jvp: tangent {i} has shape {np.shape(t)} but its primal has shape {np.shape(x)}; "
            "a tangent is a direction in the primal's space, so the shapes must match"
        )
    if t.dtype != x.dtype:
        raise InvalidInputError(
            f"jvp: tangent {i} has dtype {t.dtype} but its primal has dtype {x.dtype}; "
            f"pass the tangent as np.asarray(t, {x.dtype})"
        )
    return t


def _cotangent(cotangent: Any, out: Any) -> Any:
    """vjp_fn's cotangent, checked against f's output: real numbers of the output's shape."""
    if not isinstance(cotangent, Tracer):
        given = cotangent
        cotangent = np.asarray(cotangent)
        if cotangent.dtype.kind not in "fiu":
            raise InvalidInputError(
                f"vjp_fn: the cotangent must be real numbers, got {type(given).__name__} of dtype "
                f"{cotangent.dtype}; pass an array of f's output dtype ({np.result_type(out)})"
            )
    if np.shape(cotangent) != np.shape(out):
        raise InvalidValueError(
            f"vjp_fn: the cotangent has shape {np.shape(cotangent)} but f's output has shape "
            f"{np.shape(out)}; a cotangent weighs each output element, so pass one of shape {np.shape(out)}"
        )
    return cotangent


def _like(jac: Any, arg: Any) -> Any:
    """The derivative as a fresh, writable ndarray of the argument's dtype (a tracer when nested).

    Always a copy: a backend may hand back a read-only broadcast, a view of the caller's own
    array (d/dx sum(w * x) is w) or an array it keeps for the next call (a compiled constant);
    the caller must be able to write into what it gets (g *= lr) without changing any of them.
    """
    if isinstance(jac, Tracer):
        return jac
    return np.array(jac, dtype=arg.dtype, copy=True)


def _fresh(value: Any) -> Any:
    """f's value as the caller may keep and write into: an ndarray is copied, since f may have
    returned its input itself (lambda x: x); scalars and tracers are immutable."""
    return value.copy() if isinstance(value, np.ndarray) else value
