"""Checks that keep an estimate honest at the cost of a few evaluations per call, not per column.

Two ways a finite-difference estimate can be wrong while its error bar says otherwise:

- **f is noisier than its dtype.** The round-off bound of `differences.quotient` takes each
  value of f to be off by a few ε·(|f| + |x·f'|). An f that casts to float32 inside, or that
  rounds by ε·|sum of its terms| (an FFT or winograd convolution, a sum that cancels), is
  off by far more. `noise_level` measures it: f at eleven points along a random direction, at
  the scale of the central step, and the high-order divided differences of those values,
  which cancel f's smooth part and leave its noise (Moré and Wild's ECnoise). The points are
  jittered, not equally spaced: rounding x to float32 inside f is a sawtooth in x, linear
  between its jumps, and equally spaced points would see it as smooth.
- **The complex step on an f that is not analytic.** Im f(x + ih) / h is the derivative
  only if f is analytic; np.conj, np.vdot or a complex Cholesky (Hermitian, so conjugating)
  give a wrong number with an error bar of a few ε. `check_complex_step` compares the
  complex step's directional derivative along a random direction with a central difference
  along the same direction (four real evaluations) and refuses when they disagree.

Both draw their direction from a fixed seed, so a call gives the same result every time.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from adcore.errors import UnreliableEstimateError
from adcore_numeric.points import Along, evaluate

SEED = 15  # the random directions are fixed: the same call gives the same bits

# Noise (PROBE, made by _probe_points): f at x + u·t for eleven u near -5..5, each moved by up to 0.3 (fixed); the divided
# differences of order 4 to 6 of those values cancel polynomials below those degrees, so at the
# central step's scale only f's noise is left. Scaled to unit 2-norm, each has variance σ² for
# noise σ per value (ECnoise's normalisation, for unequal spacing).
# Eleven, not seven: seven values of an f that turns over thousands of times within the probe
# (cos((1.97x)^2) at -7984) lay on a cubic to 3% of their size by chance, and passed as resolved.
ORDERS = (4, 5, 6)
# The root-mean-square over a few correlated differences estimates σ; a single value of f
# can be off by several σ, and the estimate itself varies by a factor of about two.
NOISE_SAFETY = 4.0

# f is unresolved at the step when its values there look this noisy relative to its size, at
# every order: a rounding is ~1e-16 of it (1e-7 in float32), but an f that turns over within
# the step (cos(x²) at x = 8000, stepped by 0.016) looks like noise of its own size, and no bar
# drawn from differences at that step bounds the error. (float32 softmax at 1e3, stepped by
# 1.6, is resolved just enough: 0.03, and its two-step bar holds.)
UNRESOLVED = 5e-2
# ... or relative to their spread along the probe, once that spread is more than rounding could
# make (1e-4 of their size): an f offset from zero, bump(cos(x³/8)) at 9999 with values in
# [0.5, 1], scatters by less than 5% of its size, but by as much as its spread, while a resolved
# f's high-order differences are a small part of the trend it shows along the probe.
RESOLVABLE = 1e-4

# f's noise beyond this many times its dtype's rounding (ε·|f|) is probed again at FINER times
# the scale: noise is as large there; a kink's scatter drops to FINER of it while the kink is
# inside the finer probe; a smooth f's leftover drops by FINER^-4 or more. Two estimates of one
# noise differ by a factor of about two, so a drop by NOT_NOISE to SMOOTH_DROP is a kink.
ROUNDING_NOISE = 16.0
FINER = 1 / 16
NOT_NOISE = 8.0
SMOOTH_DROP = 256.0

# The complex step passes when it is within this many times the central difference's own
# error estimate (truncation from a second step, plus round-off) of that difference.
CHECK_SAFETY = 10.0


def direction(x: np.ndarray, salt: int = 0) -> np.ndarray:
    """A random direction on x's scale: each element moves by ±(1/2..1)·max(|x|, 1) per unit of
    step, so no element is left still and each moves as its own column's step would. The same
    for the same shape and salt (one salt per argument), drawn once."""
    return (_unit(x.shape, salt) * np.maximum(np.abs(x), 1.0)).astype(x.dtype)


@functools.lru_cache(maxsize=64)
def _unit(shape: tuple[int, ...], salt: int) -> np.ndarray:
    rng = np.random.default_rng((SEED, salt))  # a generator costs more than a small derivative
    unit = np.asarray(np.where(rng.random(shape) < 0.5, -1.0, 1.0) * rng.uniform(0.5, 1.0, shape))
    unit.flags.writeable = False  # shared by every call
    return unit


class Floor(NamedTuple):
    """f's measured noise per value of each output: `bar` widens the error bars; `law` is what the
    law across steps (differences.breaks_the_law) allows for, the noise at a finer scale where the
    coarse one shrank there (then it was a kink's or f's own curvature, which the law judges)."""

    bar: np.ndarray | float = 0.0
    law: np.ndarray | float = 0.0


NO_NOISE = Floor()


def noise_level(f: Callable[..., Any], args: tuple, argnum: int, step: np.ndarray, **where: Any) -> Floor:
    """A bound on the noise of each of f's (flattened) outputs, per value, when args[argnum]
    moves at the scale of `step` (per element: the smallest step the method takes):
    NOISE_SAFETY·σ from ECnoise's differences, 0 where f was not finite (the model of
    `quotient` is then all there is). Raises UnreliableEstimateError where f is not
    resolved at that step (UNRESOLVED), or has a kink at x (_finer_noise)."""
    sigma, _, rounding = _probe(f, args, argnum, step, where)
    law = sigma
    if np.any(sigma > ROUNDING_NOISE * rounding):
        finer = _finer_noise(f, args, argnum, step, where, sigma)
        shrank = finer * NOT_NOISE <= sigma  # there it was no noise: a kink's, or f's curvature
        law = np.where(shrank, finer, sigma)
        # where it is noise, two estimates of it: the larger, since one estimate from eleven values
        # is below a third of the noise about once in a hundred (1e-9·sign(sin(1e7·x)) at 1.31:
        # 0.22 of it, and central's bar 3.5e-4 for an error of 3.8e-4)
        sigma = np.where(shrank, sigma, np.maximum(sigma, finer))
        law = np.where(shrank, law, sigma)
    return Floor(_bound(sigma), _bound(law))


def _bound(sigma: np.ndarray) -> np.ndarray:
    """NOISE_SAFETY·σ per output, each at least the outputs' pooled σ."""
    # one output's estimate rests on a handful of differences and can be small by chance;
    # outputs computed together (an FFT, a matrix product) share their noise, so each output
    # is taken to be at least as noisy as all of them together (a wider bar, never a narrower one)
    pooled = np.sqrt(np.mean(sigma**2)) if sigma.size else 0.0
    return NOISE_SAFETY * np.maximum(sigma, pooled)


def _finer_noise(f, args, argnum, step, where, sigma) -> np.ndarray:
    """σ at FINER times the step's scale (σ itself where f is unresolved even there), or
    UnreliableEstimateError where f's apparent noise is a kink within the probe: noise looks the
    same at any scale, the scatter of a kink shrinks in proportion to the scale (abs(x) at 1e-9,
    probed at 2e-6, scatters like noise of 3e-7, and at 1/16 of that like 1.9e-8), and a smooth
    f's leftover as its 4th to 6th power. A kink that close to x is crossed by every step, and
    the quotients across it barely change from step to step (|x|/h at 1e-9: 5e-4 for a slope of
    1), so no difference and no error bar would show it."""
    try:
        finer, _, rounding = _probe(f, args, argnum, step * FINER, where)
    except UnreliableEstimateError:  # unresolved even at the finer scale: the coarse σ stands
        return sigma
    with np.errstate(all="ignore"):
        drop = sigma / finer
    kinked = (finer > ROUNDING_NOISE * rounding) & (drop >= NOT_NOISE) & (drop <= SMOOTH_DROP)
    if np.any(kinked):
        raise UnreliableEstimateError(
            f"backend 'numeric': f has a kink or an edge within about {5 * FINER * np.max(step):.3g} of x in "
            f"argument {argnum}: its values scatter in proportion to how far apart they are taken "
            f"({np.max(sigma[kinked]):.3g} at the step's scale, {np.max(finer[kinked]):.3g} at 1/{1 / FINER:g} of it), "
            "as a kink's do and noise does not, so every finite difference straddles it and no error bar "
            "would be honest. Differentiate with a rule backend (reverse, forward), or move x off the kink."
        )
    return finer


def _eps(x: Any) -> float:
    dtype = np.asarray(x).dtype
    return float(np.finfo(dtype if dtype.kind == "f" else np.float64).eps)


def _probe(f, args, argnum, step, where) -> tuple[np.ndarray, np.ndarray, float]:
    """f at the PROBE points along a random direction at `step`'s scale: per output, the noise σ
    (the largest estimate over ORDERS; a smooth part left over only widens it) and the scatter
    (their root mean square: what the orders do not cancel, large only where f is not resolved);
    and the rounding each value carries, ε·(|f| + |x|·|slope along the probe|) per output (the
    rounding of x inside f, amplified by its slope: sin at 1000 is noisy by 1e-13, not 1e-16)."""
    x = np.asarray(args[argnum])
    t = (direction(x) / np.maximum(np.abs(x), 1.0) * step).astype(x.dtype)
    tangents = tuple(t if i == argnum else None for i in range(len(args)))
    probe, differences = _probe_points()
    values = evaluate(f, args, Along(tangents), np.zeros(len(probe), dtype=int), probe, **where)
    values = values.reshape(len(probe), -1)
    with np.errstate(all="ignore"):
        each = [np.sqrt(np.mean((differences[k] @ values) ** 2, axis=0)) for k in ORDERS]
        # the scatter pools the orders: the smallest alone (order 6 has five windows of seven values)
        # or even the middle one is 1/20 of an unresolved f's random values by chance about once
        # in ten draws (sin((1.9x)^3) at x = 5641 gave 0.007, 0.05 and 0.09, and 9.46 ± 54 for
        # -5.2e8); pooled, all six windows would have to be small together
        sigma, scatter = (
            np.where(np.isfinite(s), s, 0.0)
            for s in (np.max(each, axis=0), np.sqrt(np.mean(np.square(each), axis=0)))
        )
        finite = np.isfinite(values)
        size = np.max(np.abs(values), where=finite, initial=0.0)
        spread = np.max(values, axis=0, where=finite, initial=-np.inf) - np.min(
            values, axis=0, where=finite, initial=np.inf
        )
        spread = np.where(np.isfinite(spread), spread, 0.0)
    unresolved = (scatter > UNRESOLVED * size) | (
        (scatter > UNRESOLVED * spread) & (spread > RESOLVABLE * size)
    )
    if np.any(unresolved):
        raise UnreliableEstimateError(
            f"backend 'numeric': f changes faster than the step can follow around argument {argnum}: "
            f"moved along a random direction by about its step ({np.max(np.abs(t)):.3g} per element), "
            f"its values scatter by {np.max(scatter) / size:.2g} of their size (and as much as the trend they "
            "show along the probe), so a finite difference "
            "there is no derivative and no error bar would be honest. Pass a smaller step= (one that "
            "resolves f's oscillation), or differentiate with a rule backend (reverse, forward)."
        )
    extent = np.ptp(probe) * np.max(np.abs(t), initial=0.0)  # how far x moved along the probe
    slope = spread / extent if extent > 0 else np.zeros_like(spread)
    each_size = np.max(np.abs(values), axis=0, where=finite, initial=0.0)
    return sigma, scatter, _eps(x) * (each_size + np.max(np.abs(x), initial=0.0) * slope)


def _divided_differences(nodes: np.ndarray, order: int) -> np.ndarray:
    """The divided differences of `order` over each window of order + 1 consecutive nodes, as
    rows of weights on all the nodes, each scaled to unit 2-norm: w_i ∝ 1 / prod_j≠i (u_i − u_j)."""
    rows = np.zeros((len(nodes) - order, len(nodes)))
    for start in range(len(rows)):
        u = nodes[start : start + order + 1]
        w = np.array([1 / np.prod(np.delete(u[i] - u, i)) for i in range(len(u))])
        rows[start, start : start + order + 1] = w / np.linalg.norm(w)
    return rows


@functools.cache
def _probe_points() -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """The PROBE points and their divided differences of each order in ORDERS, made on first use
    (loading the backend then imports no numpy.random)."""
    probe = np.arange(-5.0, 6.0) + np.random.default_rng(SEED).uniform(-0.3, 0.3, 11)
    return probe, {k: _divided_differences(probe, k) for k in ORDERS}


def check_complex_step(
    central: Callable[[tuple], tuple[np.ndarray, np.ndarray]],
    tangents: tuple,
    slopes: tuple,
    errors: tuple,
) -> None:
    """Refuse a complex-step result that a central difference contradicts.

    `central(tangents)` is the central difference along `tangents` (None for an argument that
    stays) and its error estimate, flattened; `slopes` and `errors` are the complex step's
    directional derivatives along each tangent and their error estimates (same shape).
    """
    difference, difference_error = central(tangents)
    predicted = np.sum(slopes, axis=0)
    allowed = CHECK_SAFETY * difference_error + np.sum(errors, axis=0)
    gap = np.abs(predicted - difference)
    if np.all(gap <= allowed):
        return
    k = int(np.argmax(gap - allowed))
    raise UnreliableEstimateError(
        "backend 'numeric' with method='complex': the complex step disagrees with a central difference "
        f"along a random direction (output entry {k}: the complex step gives {predicted[k]:.6g}, the "
        f"central difference {difference[k]:.6g} ± {difference_error[k]:.2g}). f is not analytic: "
        "np.conj, np.vdot, np.abs or a complex np.linalg.cholesky/eigh (which treat complex input as "
        "Hermitian) make Im f(x + ih)/h something other than the derivative, and so do complex values "
        "inside f (a complex constant, np.exp(1j * x), an FFT: the step's imaginary part mixes with "
        "theirs). Use method='central' or method='richardson' for this f."
    )
