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


def quotient(
    method: str, values: np.ndarray, h: np.ndarray, center: np.ndarray | None, eps: float, size: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The difference quotient and its round-off bound, from values of shape (..., len(SIGNS), M)
    with one step h and one |x| (`size`) of shape (..., 1) per quotient; `center` is f(x) for
    one-sided methods.

    Each value of f is taken to be off by ROUNDINGS·ε·(|f| + |x·f'|): a few roundings of the
    result, and the roundings of x inside f (sin(3x) rounds 3x), which f amplifies by its slope.
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
    return d, eps * (np.abs(plus) + np.abs(minus) + 2 * size * np.abs(d)) / width


def second_step_error(
    method: str, d: np.ndarray, noise: np.ndarray, d2: np.ndarray, h: np.ndarray, h2: np.ndarray
) -> np.ndarray:
    """The error of d (step h) from the quotient d2 at a larger step h2: the truncation
    term c·h^p is (d2 − d) / ((h2/h)^p − 1), as in one step of Richardson extrapolation."""
    truncation = np.abs(d2 - d) / ((h2 / h) ** ORDER[method] - 1)
    return _finite_or_inf(truncation + noise)


class Extrapolation:
    """Richardson extrapolation of central differences at decreasing steps (Neville's scheme
    in h², so the steps need not be in an exact ratio), keeping, per entry, the candidate
    with the smallest estimated error, as numdifftools does.

    `d`, `noise`: (levels, columns, M) quotients and their round-off; `h`: (levels, columns, 1).
    A candidate T[j][k] combines levels k..k+j; its truncation error is estimated by how far
    it moved from T[j-1][k+1], its round-off by pushing each level's bound through the
    extrapolation weights. Levels where f was not finite give no candidates.
    """

    def __init__(self, d: np.ndarray, noise: np.ndarray, h: np.ndarray) -> None:
        levels = len(d)
        shape = d.shape[1:]
        self.value = np.full(shape, np.nan)
        self.truncation = np.full(shape, np.inf)
        self.noise = np.full(shape, np.inf)
        self.error = np.full(shape, np.inf)
        self.newest = np.zeros(shape, dtype=int)  # the smallest-step level the best candidate uses
        with np.errstate(all="ignore"):
            table, rounding = d, noise
            for j in range(1, levels):
                q = (h[:-j] / h[j:]) ** 2 - 1
                extrapolated = table[1:] + (table[1:] - table[:-1]) / q
                rounding = rounding[1:] * (1 + 1 / q) + rounding[:-1] / q
                truncation = np.abs(extrapolated - table[1:])
                error = _finite_or_inf(truncation + rounding)
                for k in range(levels - j):
                    better = error[k] < self.error
                    self.value = np.where(better, extrapolated[k], self.value)
                    self.truncation = np.where(better, truncation[k], self.truncation)
                    self.noise = np.where(better, rounding[k], self.noise)
                    self.error = np.where(better, error[k], self.error)
                    self.newest = np.where(better, k + j, self.newest)
                table = extrapolated

    def converged(self) -> np.ndarray:
        """Per entry: the truncation estimate is below round-off, so smaller steps, which
        only add round-off, cannot improve the estimate."""
        return np.isfinite(self.error) & (self.truncation <= self.noise)


def _finite_or_inf(error: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(error), np.inf, error)
