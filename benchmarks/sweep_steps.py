"""The evidence for the numeric backend's default steps (plugins/numeric/adcore_numeric/steps.py).

Run by hand (not part of the tests):  python benchmarks/sweep_steps.py   (needs mpmath; a few seconds)

Thirteen smooth functions are differentiated at the same 200 points each (150 uniform in
[0.3, 3], then 50 uniform in [3, 20], np.random.default_rng(1)); a point is skipped where
the function is complex (exp(x)/sqrt(sin³x + cos³x) once sin x + cos x < 0). The exact
derivative is mpmath.diff at 30 digits, and each estimate d's error is relative,
|d - exact| / max(|exact|, 1e-3) (absolute where the derivative is below 1e-3). Printed,
one table per part, over all points of all functions: the median, 90th percentile and
largest error, the mean log10 error (an error below 1e-17 counts as 1e-17, so points
where every step is exact, exp(-x²) at x = 15, do not decide it) and, for richardson,
the mean number of f evaluations per derivative and whether the error estimate bounded
the true error every time. `<- adcore` marks the library's choice.

1. The central difference (f(x + h) - f(x - h)) / 2h, h = c·ε^(1/3)·max(|x|, 1) made
   representable ((x + h) - x), for c from 0.2 to 1 (c = 1 is the classic step).
2. The forward difference (f(x + h) - f(x)) / h, h = c·√ε·max(|x|, 1) made representable.
3. adcore's richardson (return_error=True) with its first step, steps.RICHARDSON_FIRST
   times max(|x|, 1), set to 2⁻³, 2⁻⁴ and 2⁻⁵ (put back afterwards).
"""

from __future__ import annotations

import sys

import adcore_numeric.steps
import mpmath
import numpy as np
from adcore_numeric.steps import relative_step
from timing import ERROR, guarded  # benchmarks/timing.py

import adcore

EPS = float(np.finfo(np.float64).eps)
FLOOR = 1e-3  # below this |exact|, the error is absolute
LOG_FLOOR = 1e-17  # the smallest error the mean log10 counts
CS = (0.2, 0.25, 0.3, 1 / 3, 0.4, 0.5, 0.6, 0.7, 1.0)
FIRSTS = (2.0**-3, 2.0**-4, 2.0**-5)
QUOTED = {  # steps.py's docstring: median errors at the default and at the classic step (c = 1)
    "central": {1 / 3: 1.7e-11, 1.0: 3.5e-11},
    "forward": {0.5: 1.3e-8, 1.0: 1.7e-8},
}

RICHARDSON_QUOTED = {2.0**-3: "+6% for the same accuracy", 2.0**-5: "-11% and -1/3 digit"}

# name, the NumPy function, the same in mpmath
FUNCTIONS = (
    (
        "exp(x)/sqrt(sin³+cos³)",
        lambda x: np.exp(x) / np.sqrt(np.sin(x) ** 3 + np.cos(x) ** 3),
        lambda x: mpmath.exp(x) / mpmath.sqrt(mpmath.sin(x) ** 3 + mpmath.cos(x) ** 3),
    ),
    ("exp", np.exp, mpmath.exp),
    ("sin", np.sin, mpmath.sin),
    ("cos", np.cos, mpmath.cos),
    ("log", np.log, mpmath.log),
    ("sqrt", np.sqrt, mpmath.sqrt),
    ("tanh", np.tanh, mpmath.tanh),
    ("1/x", lambda x: 1 / x, lambda x: 1 / x),
    ("arctan", np.arctan, mpmath.atan),
    ("x**4 - 3x**2", lambda x: x**4 - 3 * x**2, lambda x: x**4 - 3 * x**2),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x)), lambda x: 1 / (1 + mpmath.exp(-x))),
    ("sin(3x)", lambda x: np.sin(3 * x), lambda x: mpmath.sin(3 * x)),
    ("exp(-x*x)", lambda x: np.exp(-x * x), lambda x: mpmath.exp(-x * x)),
)


class Counted:
    """f, counting its calls."""

    def __init__(self, f):
        self.f, self.calls = f, 0

    def __call__(self, x):
        self.calls += 1
        return self.f(x)


def points():
    rng = np.random.default_rng(1)
    return np.concatenate([rng.uniform(0.3, 3, 150), rng.uniform(3, 20, 50)])


def exact_derivatives(xs):
    """[(function index, x, exact derivative)] for every point where f is real there."""
    mpmath.mp.dps = 30
    cases = []
    for k, (_, _, mf) in enumerate(FUNCTIONS):
        for x in xs:
            d = mpmath.diff(mf, mpmath.mpf(float(x)))
            if not isinstance(d, mpmath.mpc):
                cases.append((k, float(x), float(d)))
    return cases


def relative_errors(d, exact):
    """|d - exact| / max(|exact|, FLOOR); a non-finite d counts as an infinite error."""
    err = np.abs(d - exact) / np.maximum(np.abs(exact), FLOOR)
    return np.where(np.isfinite(err), err, np.inf)


def summary(err):
    """(median, 90th percentile, max, mean log10) of the relative errors."""
    logs = np.log10(np.maximum(err, LOG_FLOOR))
    return float(np.median(err)), float(np.percentile(err, 90)), float(np.max(err)), float(np.mean(logs))


def difference(kind, c, fn, xs):
    """The central or forward difference of fn at every x, with the step scaled by c."""
    base = EPS ** (1 / 3) if kind == "central" else EPS ** (1 / 2)
    h = c * base * np.maximum(np.abs(xs), 1.0)
    h = (xs + h) - xs  # representable: x + h is exact
    with np.errstate(all="ignore"):
        if kind == "central":
            return (fn(xs + h) - fn(xs - h)) / (2 * h)
        return (fn(xs + h) - fn(xs)) / h


def sweep_difference(kind, cases, default):
    """One table: every c, its error summary; returns {c: median}."""
    k, xs, exact = (np.array(a) for a in zip(*cases))
    classic = "ε^(1/3)" if kind == "central" else "√ε"
    evals = "f(x+h), f(x-h)" if kind == "central" else "f(x), f(x+h)"
    print(f"\n{kind}: h = c·{classic}·max(|x|, 1), 2 evaluations per derivative ({evals})")
    print(f"  {'c':>6} {'median':>9} {'90th pct':>9} {'max':>9} {'mean log10':>11}")
    medians, logs = {}, {}
    for c in CS:
        d = np.empty_like(xs)
        for j, (_, fn, _) in enumerate(FUNCTIONS):
            mine = k == j
            d[mine] = difference(kind, c, fn, xs[mine])
        med, p90, worst, log = summary(relative_errors(d, exact))
        medians[c], logs[c] = med, log
        mark = "   <- adcore" if np.isclose(c, default) else ""
        print(f"  {c:6.3f} {med:9.2e} {p90:9.2e} {worst:9.2e} {log:11.3f}{mark}")
    best = min(logs, key=logs.get)
    mine = min(CS, key=lambda c: abs(c - default))
    print(
        f"  lowest mean log10 error at c = {best:.3f} ({logs[best]:.3f}); adcore's c = {default:.3f}: "
        f"{logs[mine]:.3f}, {logs[mine] - logs[best]:+.3f} decades"
    )
    return medians


def sweep_richardson(cases):
    """One table: every first step, its error summary, evaluations and estimate check."""
    print("\nrichardson: first step = first·max(|x|, 1), halved level by level until the estimate settles")
    print(
        f"  {'first':>6} {'median':>9} {'90th pct':>9} {'max':>9} {'mean log10':>11} {'evals':>6} "
        f"{'bounded':>12} {'failed':>6}"
    )
    counted = [Counted(fn) for _, fn, _ in FUNCTIONS]
    derivatives = [
        adcore.differentiate(f, backend="numeric", method="richardson", return_error=True) for f in counted
    ]
    default = adcore_numeric.steps.RICHARDSON_FIRST
    results = {}
    try:
        for first in FIRSTS:
            adcore_numeric.steps.RICHARDSON_FIRST = first
            errs, evals, bounded, failed = [], [], 0, 0
            for k, x, exact in cases:
                derivative, counted[k].calls = derivatives[k], 0
                got = guarded(f"{FUNCTIONS[k][0]} at x = {x!r}", lambda d=derivative, x=x: d(x))
                if got is ERROR:
                    failed += 1
                    continue
                d, estimate = float(got.derivative), float(got.error)  # an adcore.Estimate
                errs.append(abs(d - exact) / max(abs(exact), FLOOR))
                bounded += abs(d - exact) <= estimate
                evals.append(counted[k].calls)
            med, p90, worst, log = summary(np.array(errs))
            results[first] = (log, float(np.mean(evals)))
            mark = "   <- adcore" if first == default else ""
            print(
                f"  2^{np.log2(first):<+4.0f} {med:9.2e} {p90:9.2e} {worst:9.2e} {log:11.3f} "
                f"{np.mean(evals):6.2f} {f'{bounded}/{len(errs)}':>12} {failed:6d}{mark}"
            )
    finally:
        adcore_numeric.steps.RICHARDSON_FIRST = default
    if default not in results:
        return
    log0, evals0 = results[default]
    for first, (log, evals) in results.items():
        if first != default:
            print(
                f"  2^{np.log2(first):+.0f} against adcore's 2^{np.log2(default):+.0f}: "
                f"{evals / evals0 - 1:+.0%} evaluations, {log0 - log:+.2f} digits (mean log10 error); "
                f"steps.py quotes {RICHARDSON_QUOTED.get(first, '-')}"
            )


def check_quoted(medians):
    print("\nsteps.py's docstring quotes (median errors), against this run:")
    for kind, quoted in QUOTED.items():
        for c, value in quoted.items():
            got = medians[kind][c]
            same = f"{got:.1e}" == f"{value:.1e}"
            print(
                f"  {kind} c = {c:.3f}: quoted {value:.1e}, measured {got:.1e}  {'same' if same else 'DIFFERS'}"
            )


if __name__ == "__main__":
    xs = points()
    cases = exact_derivatives(xs)
    print(
        f"step sweep (python {sys.version.split()[0]}, numpy {np.__version__}, mpmath {mpmath.__version__}): "
        f"{len(FUNCTIONS)} functions x {len(xs)} points, {len(cases)} real derivatives "
        f"({len(FUNCTIONS) * len(xs) - len(cases)} complex ones skipped)"
    )
    print(
        f"error = |d - exact| / max(|exact|, {FLOOR:g}); mean log10 counts errors below {LOG_FLOOR:g} as {LOG_FLOOR:g}"
    )
    medians = {  # adcore's c: its default step over the classic one
        kind: sweep_difference(
            kind, cases, relative_step(kind, EPS) / EPS ** (1 / 3 if kind == "central" else 1 / 2)
        )
        for kind in ("central", "forward")
    }
    sweep_richardson(cases)
    check_quoted(medians)
