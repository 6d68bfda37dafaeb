"""f evaluated along columns (basis vectors of one argument, or tangents) at a method's signs of
some steps, and the derivative along each column from those values: one set of steps (with two
more to check and bound it) or Richardson's table, with the errors that say why a column fails."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np

from adcore.errors import InvalidInputError, InvalidOutputError, UnreliableEstimateError
from adcore_numeric.differences import (
    SIGNS,
    Extrapolation,
    breaks_the_law,
    quotient,
    second_step_error,
)
from adcore_numeric.points import evaluate, first_nonfinite
from adcore_numeric.steps import (
    RICHARDSON_RATIO,
    richardson_levels,
)
from adcore_numeric.verification import NO_NOISE, Floor


class Columns:
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


def column_derivatives(
    run: Columns,
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

    table = richardson_table(run, steps, size, eps, bool(np.any(floor.bar)))
    shape = (ncols,) + run.out_shape
    return table.value.reshape(shape), table.with_noise(floor.bar).reshape(shape)


def richardson_table(
    run: Columns, steps: Callable[[float], np.ndarray], size: np.ndarray, eps: float, spread: bool
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
