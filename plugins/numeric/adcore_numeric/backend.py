"""The numeric backend: derivatives from f's values alone (seed 001, 数值微分)."""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import Any, ClassVar, NamedTuple

import numpy as np

from adcore.backend import Backend, Derivatives
from adcore.core import Tracer
from adcore.errors import InvalidInputError, InvalidOutputError, UnreliableEstimateError
from adcore_numeric.differences import (
    SIGNS,
    Extrapolation,
    breaks_the_law,
    quotient,
    second_step_error,
)
from adcore_numeric.points import Along, Basis, checked, evaluate, first_nonfinite, fresh
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
    run = _Runner(f, args, Along(tangents), method, vectorized, executor)
    d, err = _columns(run, steps, np.array([size]), center, eps, want_error=method == "complex")
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
            run = _Runner(f, args, Along(tangents), "central", vectorized, executor, checking="richardson")
            d, _ = _columns(run, lambda scale: np.array([h * scale]), np.array([size]), center, eps, True)
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
        run = _Runner(f, args, Basis(i), method, vectorized, executor)
        if method == "richardson":  # its bars are checked, with or without return_error
            table = _richardson(run, steps, np.abs(flat)[:, None], eps, return_error)
            blocks = (_column_major(a.reshape((x.size,) + run.out_shape), x) for a in table.parts())
            jacobian, free, spread = blocks
            jacobians.append(jacobian)
            errors.append(_Bars(free, spread, x.ndim))
            continue
        want_error = return_error or method == "complex"
        d, err = _columns(run, steps, np.abs(flat), center, eps, want_error, floor)
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

        run = _Runner(f, args, Basis(i), "central", **where, checking="richardson")
        eps = float(np.finfo(x.dtype).eps)
        d, err = _columns(run, steps, np.abs(flat), None, eps, True, floor)
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


class _Runner:
    """Evaluates f at every sign of some levels' steps, for some columns."""

    def __init__(self, f, args, direction, method, vectorized, executor, checking: str = "") -> None:
        self.f, self.args, self.direction, self.method = f, args, direction, method
        # the method the user asked for, when these are central differences that check it
        self.asked = (
            f"method={checking!r}, checked by central differences" if checking else f"method={method!r}"
        )
        self.vectorized, self.executor = vectorized, executor
        self.signs = np.array(SIGNS[method])
        self.out_shape: tuple[int, ...] = ()

    def __call__(self, levels: list[np.ndarray], active: np.ndarray) -> np.ndarray:
        """Shape (levels, active columns, signs, M): f's flattened outputs."""
        columns = np.tile(np.repeat(active, len(self.signs)), len(levels))
        offsets = np.concatenate([(h[active, None] * self.signs).reshape(-1) for h in levels])
        values = evaluate(
            self.f,
            self.args,
            self.direction,
            columns,
            offsets,
            vectorized=self.vectorized,
            executor=self.executor,
        )
        self.out_shape = values.shape[1:]
        return values.reshape(len(levels), len(active), len(self.signs), -1)

    def raise_if_not_smooth(self, steps: list, d: list, noise: list) -> None:
        """UnreliableEstimateError where the quotients at three steps (per column) do not fit f's
        series (differences.breaks_the_law): a kink, jump or finer structure near x."""
        columns = [s[:, None] for s in steps]
        broken = breaks_the_law(self.method, tuple(columns), tuple(d), tuple(noise))
        if not broken.any():
            return
        column = int(np.argmax(broken.any(axis=1)))
        quotients = ", ".join(f"{q[column][broken[column]][0]:.6g}" for q in d)
        raise UnreliableEstimateError(
            f"backend 'numeric' ({self.asked}): at "
            f"{self.direction.describe(self.args, column, steps[0][column])}, the difference quotients at "
            f"that step, twice and four times it ({quotients}) do not change as a smooth f's do: f has a "
            "kink, a jump or structure finer than the steps near x, and no error bar drawn from them "
            "would be honest. Differentiate with a rule backend (reverse, forward), or pass a step= "
            "that stays on one side of the kink."
        )

    def raise_if_not_finite(self, values: np.ndarray, h: np.ndarray) -> None:
        """A clear error naming the first point where f was nan or inf."""
        if values.size == 0:  # an empty output: nothing can be infinite
            return
        flat = values.reshape(-1, values.shape[-1])
        bad = first_nonfinite(flat)
        if bad is None:
            return
        column, sign = bad // len(self.signs), self.signs[bad % len(self.signs)]
        got = flat[bad][~np.isfinite(flat[bad])][0]
        raise InvalidOutputError(
            f"backend 'numeric' (method={self.method!r}): f returned {got} at "
            f"{self.direction.describe(self.args, int(column), sign * h[column])}; finite differences need "
            "f finite around x. Move x inside f's domain, or use method='forward' or 'backward' to stay on "
            "one side of an edge (method='richardson' skips steps that leave the domain)."
        )


def _columns(
    run: _Runner,
    steps: Callable[[float], np.ndarray],
    size: np.ndarray,
    center: np.ndarray | None,
    eps: float,
    want_error: bool,
    floor: Floor = NO_NOISE,
) -> tuple[np.ndarray, np.ndarray | None]:
    """The derivative along every column (one per entry of `size`, the |x| it moves), shape
    (columns,) + f's output shape, and its estimated error if wanted; `floor` is f's measured
    noise per value (verification.noise_level), added to the round-off model."""
    method, ncols = run.method, len(size)
    size = size[:, None]
    everything = np.arange(ncols)
    if method != "richardson":
        h = steps(1.0)
        # the error from a second step, 2h, and a third, 4h, to check the first two fit f's series
        levels = [h] + ([steps(2.0), steps(4.0)] if want_error and method != "complex" else [])
        values = run(levels, everything)
        run.raise_if_not_finite(values[0], h)
        d, noise = quotient(method, values[0], h[:, None], center, eps, size, floor.bar)
        error = None
        if want_error:
            error = noise
            if method != "complex":
                at = [
                    quotient(method, v, s[:, None], center, eps, size, floor.law)
                    for v, s in zip(values, levels)
                ]
                run.raise_if_not_smooth(levels, [q for q, _ in at], [n for _, n in at])
                error = second_step_error(method, d, noise, at[1][0], h[:, None], levels[1][:, None])
        shape = (ncols,) + run.out_shape
        return d.reshape(shape), None if error is None else error.reshape(shape)

    table = _richardson(run, steps, size, eps, bool(np.any(floor.bar)))
    shape = (ncols,) + run.out_shape
    return table.value.reshape(shape), table.with_noise(floor.bar).reshape(shape)


def _richardson(
    run: _Runner, steps: Callable[[float], np.ndarray], size: np.ndarray, eps: float, spread: bool
) -> Extrapolation:
    """Richardson's table for every column (`size` of shape (columns, 1)): three levels for every
    column, then one more per round for the columns whose estimate has not settled, until the
    steps reach the central step. Its `value` and `error` are (columns, M); with `spread`, it
    tracks what f's noise adds to the error (Extrapolation.with_noise)."""
    most, everything = richardson_levels(eps), np.arange(len(size))

    def halved(k: int) -> np.ndarray | None:
        """The k-th step, or None once halving (a small user step) no longer moves x."""
        try:
            return steps(RICHARDSON_RATIO**-k)
        except InvalidInputError:
            return None

    hs = list(itertools.takewhile(lambda h: h is not None, map(halved, range(min(3, most)))))
    if len(hs) < 2:
        raise InvalidInputError(
            "backend 'numeric' (method='richardson'): the first step is so small that half of it no "
            "longer moves x; richardson needs a large first step (leave step out for the default)"
        )
    values = run(hs, everything)
    table = Extrapolation(spread)  # what f's noise adds to the bars, if they are asked for
    for h, level in zip(hs, values):
        table.add(*quotient(run.method, level, h[:, None], None, eps, size), h[:, None])
    settled = table.converged().all(axis=1)
    while not settled.all() and table.levels < most and (h := halved(table.levels)) is not None:
        hs.append(h)
        active = everything[~settled]
        level = run([hs[-1]], active)[0]
        d, noise = np.full(table.value.shape, np.nan), np.full(table.value.shape, np.inf)
        d[active], noise[active] = quotient(run.method, level, hs[-1][active, None], None, eps, size[active])
        table.add(d, noise, hs[-1][:, None])
        settled |= table.converged().all(axis=1)
    unusable = ~np.isfinite(table.error).all(axis=1)
    if unusable.any():
        column = int(np.argmax(unusable))
        raise InvalidOutputError(
            f"backend 'numeric' (method='richardson'): f was not finite at the points needed for "
            f"{run.direction.describe(run.args, column, hs[-1][column])} and the other {len(hs) - 1} "
            "steps tried; move x inside f's domain"
        )
    return table


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
