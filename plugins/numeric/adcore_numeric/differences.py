"""From f's values at the points to derivatives and their estimated errors.

Every estimate comes with two error terms. Truncation is measured, not assumed: the
quotient at a second step, or the next level of the Richardson table, shows how far the
estimate still moves. Round-off is bounded from the values themselves: each f value is
known to about ε·|f|, and a quotient divides that by its step.
"""

from __future__ import annotations

import numpy as np

ORDER = {"forward": 1, "backward": 1, "central": 2, "richardson": 2}  # truncation error ~ h**ORDER

# The points each method evaluates per step, as multiples of that step h.
SIGNS = {
    "forward": (1.0,),
    "backward": (-1.0,),
    "central": (1.0, -1.0),
    "richardson": (1.0, -1.0),
    "complex": (1j,),
}

ROUNDINGS = 2  # how many roundings of ε·(|f| + |x·f'|) each value of f is taken to carry
COMPLEX_ROUNDING = 2  # the complex step is exact but for a few roundings of f' itself
TRUNCATION_SAFETY = 3.0  # the measured truncation of a one-level estimate, times this
# Richardson combines at most this many levels beyond one: deeper candidates reach back to the
# first, large steps, beyond the radius where f's Taylor series in h holds, and then agree with
# each other while missing f' (cos(cos((1.25x + 2)^2)) at 6: 8e-12 apart, 1.2e-10 off)
MAX_EXTRAPOLATIONS = 4
# Across three steps, the change from the middle to the largest may stray from what the h^p law
# predicts by this part of itself (the next term of f's series: sin at 1 stepped by 1/4, 1/2
# and 1 strays by 0.05 of it, at the central step far less) plus a few times the round-off of
# the quotients involved: a kink, a jump or structure finer than the steps breaks the law by far
# more (abs(x) at a third of the step: the quotients scale as 1/h, their changes shrink where
# the law has them grow fourfold).
LAW_SLACK = 0.75
LAW_SAFETY = 2.0


def quotient(
    method: str,
    values: np.ndarray,
    h: np.ndarray,
    center: np.ndarray | None,
    eps: float,
    size: np.ndarray,
    floor: np.ndarray | float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """The difference quotient and its round-off bound, from values of shape (..., len(SIGNS), M)
    with one step h and one |x| (`size`) of shape (..., 1) per quotient; `center` is f(x) for
    one-sided methods.

    Each value of f is taken to be off by ROUNDINGS·ε·(|f| + |x·f'|): a few roundings of the
    result, and the roundings of x inside f (sin(3x) rounds 3x), which f amplifies by its slope;
    plus `floor`, f's measured noise per value of each output (0 when not measured).
    """
    eps = ROUNDINGS * eps
    if method == "complex":
        d = values[..., 0, :].imag / h
        return d, eps * (COMPLEX_ROUNDING + size) * np.abs(d)
    if method == "forward":
        plus, minus, width = values[..., 0, :], center, h
    elif method == "backward":
        plus, minus, width = center, values[..., 0, :], h
    else:  # central and each level of richardson
        plus, minus, width = values[..., 0, :], values[..., 1, :], 2 * h
    d = (plus - minus) / width
    slope = size * np.abs(d)  # each value is off by the larger of the model's bound and the measured noise
    return d, (
        np.maximum(eps * (np.abs(plus) + slope), floor) + np.maximum(eps * (np.abs(minus) + slope), floor)
    ) / width


def second_step_error(
    method: str, d: np.ndarray, noise: np.ndarray, d2: np.ndarray, h: np.ndarray, h2: np.ndarray
) -> np.ndarray:
    """The error of d (step h) from the quotient d2 at a larger step h2: the truncation
    term c·h^p is (d2 − d) / ((h2/h)^p − 1), as in one step of Richardson extrapolation, if
    both steps are small enough for c·h^p to be all there is; TRUNCATION_SAFETY allows for
    the next term (float32 softmax at 1e3, stepped by 1.6, is off by 1.6 times that)."""
    truncation = TRUNCATION_SAFETY * np.abs(d2 - d) / ((h2 / h) ** ORDER[method] - 1)
    return _finite_or_inf(truncation + noise)


def breaks_the_law(method: str, steps: tuple, values: tuple, noise: tuple) -> np.ndarray:
    """Where three estimates of f' at increasing steps s0 < s1 < s2 (s0 may be 0: a limit,
    such as a Richardson estimate) do not fit d(s) = f' + c·s^p, p the method's order: the
    change from s0 to s1 fixes c, which predicts the change from s1 to s2. Numdifftools asks
    the same of its estimates' sequence; here it is a test, not a weighting: a finite
    difference across a kink, a jump or a staircase finer than the steps fails it, a smooth f
    passes within the round-off (`noise`, the bounds of each estimate) and LAW_SLACK."""
    p = ORDER[method]
    (d0, d1, d2), (n0, n1, n2) = values, noise
    with np.errstate(all="ignore"):
        gain = (steps[2] ** p - steps[1] ** p) / (steps[1] ** p - steps[0] ** p)
        change = d2 - d1
        allowed = LAW_SLACK * np.abs(change) + LAW_SAFETY * (n2 + (1 + gain) * n1 + gain * n0)
        return ~(np.abs(change - gain * (d1 - d0)) <= allowed)  # nan (f not finite) breaks it too


class Extrapolation:
    """Richardson extrapolation of central differences at decreasing steps (Neville's scheme
    in h², so the steps need not be in an exact ratio), keeping, per entry, the candidate
    with the smallest estimated error, as numdifftools does.

    Levels are added one at a time, each with its quotients `d` and their round-off `noise`
    (columns, M) and its step `h` (columns, 1). A candidate T[j][k] combines levels k..k+j;
    its truncation error is estimated by how far it moved from T[j-1][k+1], its round-off
    by pushing each level's bound through the extrapolation weights. A level where f was
    not finite (nan) gives no candidates.

    Alongside, `spread` is what a noise of 1 per value of f becomes in each chosen candidate
    (the same weights on the quotients' 1/h), so that f's measured noise (`with_noise`) can
    be added to the error bar without changing which candidate is chosen.
    """

    def __init__(self, spread: bool = False) -> None:
        self.levels, self.track_spread = 0, spread  # spread only when a measured noise will use it
        self.value = self.truncation = self.noise = self.error = self.newest = self.spread = np.empty(0)
        self._steps: list[np.ndarray] = []
        self._diagonal: list[np.ndarray] = []  # T[j][newest - j] for j = 0..newest, and their
        self._rounding: list[np.ndarray] = []  # round-off, and the same for a noise of 1:
        self._unit: list[np.ndarray] = []  # all the next level needs

    def add(self, d: np.ndarray, noise: np.ndarray, h: np.ndarray) -> None:
        if not self.levels:
            self.value = np.full(d.shape, np.nan)
            self.truncation, self.noise, self.error = (np.full(d.shape, np.inf) for _ in range(3))
            self.newest = np.zeros(d.shape, dtype=int)  # the smallest-step level the best candidate uses
            self.spread = np.zeros(d.shape)
        diagonal, rounding = [d], [noise]
        unit = [np.broadcast_to(1 / h, d.shape)] if self.track_spread else []
        with np.errstate(all="ignore"):
            for j in range(1, min(self.levels, MAX_EXTRAPOLATIONS) + 1):
                q = (self._steps[-j] / h) ** 2 - 1
                diagonal.append(diagonal[-1] + (diagonal[-1] - self._diagonal[j - 1]) / q)
                rounding.append(rounding[-1] * (1 + 1 / q) + self._rounding[j - 1] / q)
                if self.track_spread:
                    unit.append(unit[-1] * (1 + 1 / q) + self._unit[j - 1] / q)
                truncation = np.abs(diagonal[-1] - diagonal[-2])
                error = _finite_or_inf(truncation + rounding[-1])
                better = error < self.error
                self.value[better] = diagonal[-1][better]
                self.truncation[better] = truncation[better]
                self.noise[better] = rounding[-1][better]
                self.error[better] = error[better]
                if self.track_spread:
                    self.spread[better] = unit[-1][better]
                self.newest[better] = self.levels
        self._steps.append(h)
        self._diagonal, self._rounding, self._unit = diagonal, rounding, unit
        self.levels += 1

    def parts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The chosen candidates, their error bars without f's measured noise, and what a noise of 1
        per value of f adds to those bars."""
        return self.value, self.error, self.spread

    def with_noise(self, floor: np.ndarray | float) -> np.ndarray:
        """The error bars, with f's measured noise per value (`floor`, per output) added."""
        return self.error + self.spread * floor if self.track_spread else self.error

    def converged(self) -> np.ndarray:
        """Per entry: the truncation estimate is below round-off, so smaller steps, which
        only add round-off, cannot improve the estimate."""
        return np.isfinite(self.error) & (self.truncation <= self.noise)


def _finite_or_inf(error: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(error), np.inf, error)
