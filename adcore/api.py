"""The public API: differentiate, grad, jacobian, hessian, value_and_grad, jvp, vjp, backends."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from adcore import derivatives
from adcore.derivatives import Derivatives, Estimate, get_backend
from adcore.errors import InvalidInputError
from adcore.plugins import get_registry

Argnums = int | Sequence[int]


def backends() -> list[str]:
    """Names of the installed backends."""
    return sorted(get_registry().backends)


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
    be = derivatives.prepare(f, backend, "value_and_jacobian", options)

    @functools.wraps(f)
    def derivative(*args: Any, **kwargs: Any) -> Any:
        return _one_or_all(_value_and_jacobian(f, be, args, kwargs, argnums, options, False, False), argnums)

    return derivative


jacobian = differentiate


def grad(f: Callable[..., Any], argnums: Argnums = 0, backend: str = "reverse", **options: Any):
    """The gradient of a scalar-valued f (NonScalarOutputError otherwise)."""
    be = derivatives.prepare(f, backend, "value_and_jacobian", options)

    @functools.wraps(f)
    def gradient(*args: Any, **kwargs: Any) -> Any:
        return _one_or_all(_value_and_jacobian(f, be, args, kwargs, argnums, options, True, False), argnums)

    return gradient


def value_and_grad(f: Callable[..., Any], argnums: Argnums = 0, backend: str = "reverse", **options: Any):
    """Like `grad`, returning (f(...), gradient) from one evaluation of f."""
    be = derivatives.prepare(f, backend, "value_and_jacobian", options)

    @functools.wraps(f)
    def both(*args: Any, **kwargs: Any) -> tuple:
        result = _value_and_jacobian(f, be, args, kwargs, argnums, options, True, True)
        return result.value, _one_or_all(result, argnums)

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
        nums = derivatives.normalize_argnums(
            argnums, len(args)
        )  # checked here: a bad argnums is refused, not iterated
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
    be = derivatives.prepare(f, backend, "jvp", options)
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
    args = tuple(derivatives.float_input(x, f"argument {i}") for i, x in enumerate(primals))
    ts = tuple(
        derivatives.check_tangent(t, x, f"argument {i}") for i, (t, x) in enumerate(zip(tangents, args))
    )
    return derivatives.jvp(be, f, args, ts, options)


def vjp(f: Callable[..., Any], *primals: Any, backend: str = "reverse", **options: Any):
    """(f(*primals), vjp_fn): vjp_fn(cotangent) returns one cotangent per primal, as a tuple."""
    be = derivatives.prepare(f, backend, "vjp", options)
    args = tuple(derivatives.float_input(x, f"argument {i}") for i, x in enumerate(primals))
    out, pullback = derivatives.vjp(be, f, args, options)

    def vjp_fn(cotangent: Any) -> tuple:
        return pullback(derivatives.check_cotangent(cotangent, out, "f's output"))

    return out, vjp_fn


def _value_and_jacobian(f, be, args, kwargs, argnums, options, scalar, want_value) -> Derivatives:
    nums = derivatives.normalize_argnums(argnums, len(args))
    fn = functools.partial(f, **kwargs) if kwargs else f
    return derivatives.value_and_jacobian(
        be, fn, args, nums, scalar=scalar, want_value=want_value, options=options
    )


def _one_or_all(result: Derivatives, argnums: Argnums) -> Any:
    """The derivative for an int argnums, the tuple for a tuple; an Estimate (derivative, error)
    when the backend was asked for its error (return_error=True)."""
    pick = (lambda each: each[0]) if isinstance(argnums, int) else tuple
    derivative = pick(result.jacobians)
    return derivative if result.errors is None else Estimate(derivative, pick(result.errors))
