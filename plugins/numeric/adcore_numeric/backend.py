"""The numeric backend: derivatives from f's values alone (seed 001, 数值微分)."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import numpy as np

from adcore.backend import Backend, Derivatives
from adcore.core import Tracer
from adcore.errors import InvalidInputError, InvalidOutputError
from adcore_numeric.columns import Columns, column_derivatives, richardson_table
from adcore_numeric.differences import (
    breaks_the_law,
    quotient,
    second_step_error,
)
from adcore_numeric.points import Along, Basis, checked, evaluate, fresh
from adcore_numeric.steps import (
    METHODS,
    RICHARDSON_RATIO,
    first_step,
    relative_step,
    representable,
    richardson_levels,
    user_step,
)
from adcore_numeric.verification import NO_NOISE, Floor, check_complex_step, direction, noise_level

if TYPE_CHECKING:
    from concurrent.futures import Executor


class NumericBackend(Backend):
    """Finite differences on f's values: no rules needed, so every op works from the day it is
    registered, and f may be any Python callable.

    Options:
    - `method`: "central" (default), "forward", "backward", "richardson" (central differences
      at halving steps, extrapolated, stopping once the estimate settles) or "complex"
      (Im f(x + ih) / h: exact to rounding, for f that accept complex input).
    - `step`: the step per element of the argument (a number or an array; a tuple of them
      for a tuple `argnums`), instead of the default of `adcore_numeric.steps`.
    - `return_error`: also return the estimated absolute error of every entry.
    - `vectorized`: f takes a batch of points on a new leading axis of each argument it is
      differentiated with respect to, and returns one output per point; each round of
      steps is then one call.
    - `executor`: a `concurrent.futures.Executor` that evaluates the points (a process pool,
      or a Dask cluster through `Client.get_executor()`); the results are bit-identical.
    """

    name = "numeric"
    kinds = ()
    estimates = True  # finite differences: conformance compares within the error bars
    estimate_options: ClassVar[dict[str, Any]] = {"method": "richardson", "return_error": True}

    def value_and_jacobian(
        self,
        f: Callable[..., Any],
        args: tuple,
        argnums: Sequence[int],
        *,
        want_value: bool = True,
        method: str = "central",
        step: Any = None,
        return_error: bool = False,
        vectorized: bool = False,
        executor: Executor | None = None,
    ) -> Derivatives:
        """f(*args), the Jacobians and, with return_error, their estimated errors. Without
        want_value, f(*args) is only evaluated if the method needs it (forward, backward);
        otherwise the value is None and every evaluation is a step."""
        return _derivatives(f, args, argnums, want_value, method, step, return_error, vectorized, executor)

    def jvp(
        self,
        f: Callable[..., Any],
        args: tuple,
        tangents: tuple,
        *,
        method: str = "central",
        step: float | None = None,
        vectorized: bool = False,
        executor: Executor | None = None,
    ) -> tuple[Any, Any]:
        """f(*args) and the derivative along each direction of the batch of tangents: every
        argument moves together, so the cost is that of one column per direction, whatever
        the number of inputs."""
        _check_options(method, vectorized, executor, args + tuple(t for t in tangents if t is not None))
        value = _value(f, args)
        batch = [np.shape(t)[0] for t in tangents if t is not None]
        if not batch:
            return value, None
        along = [
            _along(
                f,
                args,
                value,
                tuple(None if t is None else t[b] for t in tangents),
                method,
                step,
                vectorized,
                executor,
            )
            for b in range(batch[0])
        ]
        return value, np.stack(along) if along else np.zeros((0,) + np.shape(value))


def _along(f, args, value, tangents, method, step, vectorized, executor) -> np.ndarray:
    """The derivative of f at args along one set of tangents (None: that argument stays)."""
    moved = [t for t in tangents if t is not None]
    perturbed = [x for x, t in zip(args, tangents) if t is not None]  # others may be ints, strings, ...
    size = max([float(np.max(np.abs(x), initial=0.0)) for x in perturbed] + [1.0])
    length = max(float(np.max(np.abs(t), initial=0.0)) for t in moved)
    if length == 0:
        return np.zeros(np.shape(value))
    eps = max(float(np.finfo(x.dtype).eps) for x in perturbed)
    if step is None:
        first = relative_step(method, eps) * size / length
    else:
        first = float(user_step(step, np.empty(())))  # one step along the tangents

    def steps(scale: float) -> np.ndarray:
        return np.array([first * scale])

    center = np.asarray(value, dtype=np.float64).reshape(-1)
    run = Columns(f, args, Along(tangents), method, vectorized, executor)
    d, err = column_derivatives(run, steps, np.array([size]), center, eps, want_error=method == "complex")
    # the same direction at central's step, x ± h·t, where |x·f'| is about size/length·|d|
    h = relative_step("central", eps) * size / length
    if method == "complex":
        central = _central_along(f, args, eps, h, size / length, vectorized, executor)
        check_complex_step(central, tangents, (d.reshape(-1),), (err.reshape(-1),))
    if method == "richardson":  # checked as _richardson_confirmed does a Jacobian's
        h = h if step is None else min(h, first / 4)
        where = dict(vectorized=vectorized, executor=executor)
        q, noise = _quotients_along(f, args, tangents, (h, 2 * h), size / length, eps, 0.0, where)
        fit = (d.reshape(-1), q[0], q[1]), (err.reshape(-1), noise[0], noise[1])
        if breaks_the_law("central", (0.0, h, 2 * h), *fit).any():
            run = Columns(f, args, Along(tangents), "central", vectorized, executor, checking="richardson")
            d, _ = column_derivatives(
                run, lambda scale: np.array([h * scale]), np.array([size]), center, eps, True
            )
    return d.reshape(np.shape(value))


def _derivatives(
    f, args, argnums, need_value, method, step, return_error, vectorized, executor
) -> Derivatives:
    _check_options(method, vectorized, executor, args)
    steps_per_arg = _user_steps(step, argnums)
    value = None
    if need_value or method in ("forward", "backward") or any(np.size(args[i]) == 0 for i in argnums):
        value = _value(f, args)
    center = None if value is None else np.asarray(value, dtype=np.float64).reshape(-1)
    where = dict(vectorized=vectorized, executor=executor)
    jacobians, errors, floors = [], [], []
    for i, given in zip(argnums, steps_per_arg):
        x = np.asarray(args[i])
        if x.size == 0:
            jacobians.append(np.zeros(np.shape(value) + x.shape))
            errors.append(_Bars(np.zeros(np.shape(value) + x.shape)))
            floors.append(NO_NOISE)
            continue
        flat = x.reshape(-1)
        h = first_step(x, method, given).reshape(-1)

        def steps(scale: float, flat=flat, h=h) -> np.ndarray:
            return h * scale if method == "complex" or scale == 1 else representable(flat, h * scale)

        eps = float(np.finfo(x.dtype).eps)
        # f's own noise widens the error bars only, so asking for them never changes the derivative
        # (they can only add a refusal where no honest bar exists: _columns' three-step law)
        floor = (
            _noise(f, args, i, x, method, given, eps, where)
            if return_error and method != "complex"
            else NO_NOISE
        )
        floors.append(floor)
        run = Columns(f, args, Basis(i), method, vectorized, executor)
        if method == "richardson":  # its bars are checked, with or without return_error
            table = richardson_table(run, steps, np.abs(flat)[:, None], eps, return_error)
            blocks = (_column_major(a.reshape((x.size,) + run.out_shape), x) for a in table.parts())
            jacobian, free, spread = blocks
            jacobians.append(jacobian)
            errors.append(_Bars(free, spread, x.ndim))
            continue
        want_error = return_error or method == "complex"
        d, err = column_derivatives(run, steps, np.abs(flat), center, eps, want_error, floor)
        jacobians.append(_column_major(d, x))
        errors.append(_Bars(_column_major(err, x)) if want_error else None)
    if method == "complex":
        _check_complex(f, args, argnums, jacobians, [e.free for e in errors], where)
    if method == "richardson":
        jacobians, errors = _confirmed_richardson(
            f, args, argnums, steps_per_arg, jacobians, errors, floors, return_error, where
        )
    bars = tuple(e.widened(floor) for e, floor in zip(errors, floors)) if return_error else None
    return Derivatives(value, tuple(jacobians), bars)


class _Bars(NamedTuple):
    """Error bars in a Jacobian block's shape, out_shape + x.shape, without f's measured noise,
    and what a noise of 1 per value of f adds to them (richardson's table.spread)."""

    free: np.ndarray
    spread: np.ndarray | None = None
    x_ndim: int = 0

    def widened(self, floor: Floor) -> np.ndarray:
        """The bars with f's noise per value (`floor.bar`: a number, or one per flattened output) added."""
        if self.spread is None:  # the floor is in free already
            return self.free
        if np.ndim(floor.bar) == 0:
            return self.free + self.spread * floor.bar
        out_shape = self.free.shape[: self.free.ndim - self.x_ndim]
        return self.free + self.spread * np.reshape(floor.bar, out_shape + (1,) * self.x_ndim)


def _confirmed_richardson(f, args, argnums, given, jacobians, errors, floors, measured, where):
    """richardson's Jacobians and bars if central differences at small steps along a random
    direction confirm them (_richardson_confirmed), else checked central differences at those
    steps (_central_instead), whose bars hold f's noise (measured here if it was not). The
    check itself reads no measured noise: noise would excuse a disagreement that structure
    finer than richardson's steps causes (a staircase with an edge at x looks like noise to
    the probe), and without it the outcome is the same with or without return_error."""
    fine = [_fine_step(np.asarray(args[i]), step) for i, step in zip(argnums, given)]
    if _richardson_confirmed(f, args, argnums, fine, jacobians, errors, where):
        return jacobians, errors
    if not measured:
        floors = [
            _noise(f, args, i, np.asarray(args[i]), "richardson", step, _eps(args[i]), where)
            if np.size(args[i])
            else NO_NOISE
            for i, step in zip(argnums, given)
        ]
    return _central_instead(f, args, argnums, fine, floors, jacobians, errors, where)


def _eps(x: Any) -> float:
    return float(np.finfo(np.asarray(x).dtype).eps)


def _column_major(d: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Per-column results (columns,) + out_shape as a Jacobian block, out_shape + x.shape."""
    return np.moveaxis(d, 0, -1).reshape(d.shape[1:] + x.shape)


def _fine_step(x: np.ndarray, given: Any) -> np.ndarray:
    """Per element of x, the step of richardson's check: central's default, or a quarter of the
    user's first step where that is smaller (a user step is one that resolves f)."""
    if x.size == 0:
        return np.zeros(x.shape)
    central = first_step(x, "central")
    return central if given is None else representable(x, np.minimum(central, user_step(given, x) / 4))


def _richardson_confirmed(f, args, argnums, fine, jacobians, errors, where) -> bool:
    """Whether richardson's Jacobians fit central differences at the small steps `fine` (h and 2h,
    per element) along a random direction in every argnum: the three must lie on one
    f' + c·h² (differences.breaks_the_law). The table's levels start at a large step, and an f
    with structure finer than it (round(x, 1)·x, a staircase, a sawtooth) can give levels that
    agree with each other on a slope that is not f' and an error bar of 1e-13; central
    differences at steps below the structure contradict them. Four evaluations per call."""
    tangents, slopes, slope_errors, sizes = [None] * len(args), [], [], []
    for i, h, jac, err in zip(argnums, fine, jacobians, errors):
        x = np.asarray(args[i])
        if x.size == 0:
            continue
        tangents[i] = t = (direction(x, salt=i) / np.maximum(np.abs(x), 1.0) * h).astype(x.dtype)
        slopes.append(np.tensordot(jac, t, axes=x.ndim).reshape(-1))
        slope_errors.append(np.tensordot(err.free, np.abs(t), axes=x.ndim).reshape(-1))
        sizes.append(float(np.max(np.abs(x) / np.abs(t))))  # |x·f'| over the slope along t
    if not slopes:
        return True
    eps = max(float(np.finfo(np.asarray(args[i]).dtype).eps) for i in argnums)
    d, noise = _quotients_along(f, args, tuple(tangents), (1.0, 2.0), max(sizes), eps, 0.0, where)
    limit, bar = np.sum(slopes, axis=0), np.sum(slope_errors, axis=0)
    return not breaks_the_law(
        "central", (0.0, 1.0, 2.0), (limit, d[0], d[1]), (bar, noise[0], noise[1])
    ).any()


def _central_instead(f, args, argnums, fine, floors, jacobians, errors, where) -> tuple[list, list]:
    """The Jacobians and error bars by central differences at the steps `fine`, each checked at
    twice and four times its step (or UnreliableEstimateError): what richardson gives when its
    table is contradicted at those steps, where f is smooth if it is anywhere near x (an empty
    argument keeps its empty block)."""
    jacobians, errors = list(jacobians), list(errors)
    for k, (i, h, floor) in enumerate(zip(argnums, fine, floors)):
        x = np.asarray(args[i])
        if x.size == 0:
            continue
        flat, h = x.reshape(-1), h.reshape(-1)

        def steps(scale: float, flat=flat, h=h) -> np.ndarray:
            return h if scale == 1 else representable(flat, h * scale)

        run = Columns(f, args, Basis(i), "central", **where, checking="richardson")
        eps = float(np.finfo(x.dtype).eps)
        d, err = column_derivatives(run, steps, np.abs(flat), None, eps, True, floor)
        jacobians[k], errors[k] = _column_major(d, x), _Bars(_column_major(err, x))  # the floor is in it
    return jacobians, errors


def _check_complex(f, args, argnums, jacobians, errors, where) -> None:
    """Refuse the complex step's Jacobians if a central difference along a random direction in
    every argnum disagrees with them (verification.check_complex_step)."""
    tangents, slopes, slope_errors = [None] * len(args), [], []
    for i, jac, err in zip(argnums, jacobians, errors):
        x = np.asarray(args[i])
        tangents[i] = t = direction(x, salt=i)
        slopes.append(np.tensordot(jac, t, axes=x.ndim).reshape(-1))
        slope_errors.append(np.tensordot(err, np.abs(t), axes=x.ndim).reshape(-1))
    eps = max(float(np.finfo(np.asarray(args[i]).dtype).eps) for i in argnums)
    # the directions are on x's scale, so |x·f'| is about the directional derivative itself
    central = _central_along(f, args, eps, relative_step("central", eps), 1.0, **where)
    check_complex_step(central, tuple(tangents), tuple(slopes), tuple(slope_errors))


def _noise(f, args, i, x, method, given, eps, where) -> Floor:
    """f's measured noise per value, probed at the user's step, else at the central step; for
    richardson's default steps at the larger of that and its last level: its large levels must
    be resolved too, or they agree on a wrong value (cos(x²) at 8000)."""
    if given is not None:
        return noise_level(f, args, i, user_step(given, x), **where)
    central = first_step(x, "central")
    if method != "richardson":
        return noise_level(f, args, i, central, **where)
    last = first_step(x, method) * RICHARDSON_RATIO ** (1 - richardson_levels(eps))
    return noise_level(f, args, i, np.maximum(central, last), **where)


def _central_along(f, args, eps, step, size, vectorized, executor) -> Callable[[tuple], tuple]:
    """The derivative along some tangents by a central difference (x ± tangent·step) and its
    error estimate; `size` is |x| over |tangent|, for the round-off model's |x·f'|."""

    def central(tangents: tuple) -> tuple[np.ndarray, np.ndarray]:
        where = dict(vectorized=vectorized, executor=executor)
        (d, d2), (noise, _) = _quotients_along(f, args, tangents, (step, 2 * step), size, eps, 0.0, where)
        with np.errstate(all="ignore"):
            error = second_step_error("central", d, noise, d2, step, 2 * step)
        return d, np.where(np.isfinite(d), error, np.inf)  # where f is not finite, nothing to check

    return central


def _quotients_along(f, args, tangents, steps, size, eps, floor, where) -> tuple[np.ndarray, np.ndarray]:
    """Central quotients along the tangents (x ± tangent·h for h in steps, one round of points)
    and their round-off bounds, each of shape (len(steps), outputs); `size` is |x| over |tangent|."""
    offsets = np.array([[h, -h] for h in steps]).reshape(-1)
    values = evaluate(f, args, Along(tangents), np.zeros(len(offsets), dtype=int), offsets, **where)
    values = values.reshape(len(steps), 2, -1)  # (steps, signs, outputs)
    h = np.array(steps, dtype=np.float64)[:, None]
    with np.errstate(all="ignore"):
        return quotient("central", values, h, None, eps, np.full(h.shape, size), floor)


def _value(f: Callable[..., Any], args: tuple) -> Any:
    """f(*args), checked as every point f is evaluated at is (one array of real numbers, finite)."""
    value = f(*fresh(args))
    checked(value, False, lambda: "x itself")
    flat = np.ravel(value)
    if not np.all(np.isfinite(flat)):
        raise InvalidOutputError(
            f"backend 'numeric': f(x) itself is not finite ({flat[~np.isfinite(flat)][0]}); "
            "move x inside f's domain"
        )
    return value


def _check_options(method: Any, vectorized: Any, executor: Any, args: tuple) -> None:
    traced = [i for i, x in enumerate(args) if isinstance(x, Tracer)]  # tangents too, from jvp
    for i in traced:
        if args[i].concrete_itself:  # a vmap's batch: its conversion error makes vmap run f per example
            args[i]._concrete_value()
    if traced:
        raise InvalidInputError(
            f"backend 'numeric' works on plain arrays and cannot run inside another backend's "
            f"transformation (argument {traced[0]} is a {type(args[traced[0]]).__name__}). Make numeric "
            "the outer derivative, e.g. hessian(f, inner='reverse', outer='numeric')."
        )
    if method not in METHODS:
        close = difflib.get_close_matches(str(method), METHODS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise InvalidInputError(
            f"backend 'numeric' has no method {method!r}{hint}; its methods: {', '.join(METHODS)}"
        )
    from concurrent.futures import Executor  # here: loading the backend imports no concurrent.futures

    if executor is not None and not isinstance(executor, Executor):
        raise InvalidInputError(
            f"backend 'numeric': executor must be a concurrent.futures.Executor (a ProcessPoolExecutor, "
            f"or a Dask Client's get_executor()), got {type(executor).__name__}"
        )
    if vectorized and executor is not None:
        raise InvalidInputError(
            "backend 'numeric': vectorized=True evaluates every point in one call of f, executor= spreads "
            "the points over workers; choose one"
        )


def _user_steps(step: Any, argnums: Sequence[int]) -> list[Any]:
    """One user step (or None) per argnum: a tuple of steps for a tuple argnums, else the same for all."""
    if isinstance(step, (tuple, list)) and len(argnums) > 1:
        if len(step) != len(argnums):
            raise InvalidInputError(
                f"backend 'numeric': {len(step)} steps for {len(argnums)} arguments; give one step per "
                "argument in argnums, or a single number for all"
            )
        return list(step)
    return [step] * len(argnums)
