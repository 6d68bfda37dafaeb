"""adcore.check_grads: f's derivatives on every installed backend, against the engine's reference.

The user-facing counterpart of a conformance run (JAX's `check_grads`, torch's `gradcheck`):
the reference is the engine's, chosen the same way (`reference_for`: symbolic, reverse
or forward corroborated by another backend or by numeric's Richardson estimate, else that
estimate with its error), and so are the tolerances (`tolerances.py`) and the comparison
(`deviation`).

First order, in the arguments' own dtypes: each backend's Jacobian of f with respect to every
float leaf of every argument; for a backend with a pullback or a JVP of its own, also the
dot-product test <vjp(u), v> = <u, J v> = <u, jvp(v)> with dense random u and v (a rule right
only for one-hot cotangents fails it). A leaf larger than FULL_SIZE is checked along DIRECTIONS
random orthonormal directions V, as the Jacobian of t -> f(x + V t) at t = 0 (J V): numeric's
estimate then costs DIRECTIONS columns, not one per element.

Second order: the Hessian of <w, f> (w random) as each backend's first derivative differentiated
again by forward and/or reverse (the outer backends `modes` names), against a reference chosen
among those Hessians and numeric over numeric. At most SECOND_DIMENSIONS dimensions in all
(numeric over numeric costs their square): larger leaves are seen along random directions, and
with more leaves than that, all of them together along joint random directions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from adcore import api, ops
from adcore.conformance import abilities, tolerances
from adcore.conformance.abilities import estimates
from adcore.conformance.calls import CheckedCall
from adcore.conformance.checks import second_estimate
from adcore.conformance.probe import JointProbe, Outputs, Probe, flatten
from adcore.conformance.reference import JacobianEstimate, Reference, choose_reference, reference_for
from adcore.conformance.results import Results, deviation
from adcore.errors import (
    AdcoreError,
    InvalidInputError,
    InvalidValueError,
    UnsupportedByBackendError,
    keywords_checked,
)

MODES: tuple[str, ...] = ("fwd", "rev")
FULL_SIZE = 64  # a leaf this small is checked entry by entry
DIRECTIONS = 8  # a larger one along this many random orthonormal directions
SECOND_DIMENSIONS = 6  # second order: dimensions in all (the engine's SECOND_MAX_SIZE)
MAX_LINES = 10  # failures listed in the AssertionError, worst first
PATTERN_SKIPPED = (
    "its Jacobians are dependency patterns, not derivatives (Backend.pattern): `adcore conformance` "
    "checks them against the other backends' non-zeros"
)


@dataclass(frozen=True)
class Failure:
    """One comparison out of tolerance, at its worst entry (allowed is nan for a shape or dtype)."""

    backend: str
    order: int
    check: str  # jacobian, vjp, jvp, dtype, second (by <outer>)
    argument: str  # "argument 0['w']"; at order 2 "argument 0 and argument 1"
    entry: str  # "d out[1] / d argument 0[2, 0]"
    got: float
    expected: float
    allowed: float
    outside: int  # entries out of tolerance
    entries: int
    reference: str
    ratio: float  # |got - expected| / allowed

    def __str__(self) -> str:
        head = f"backend {self.backend!r}, {self.argument}, order {self.order} ({self.check})"
        if math.isnan(self.allowed):
            return f"{head}: {self.entry}, expected {self.reference}"
        return (
            f"{head}: worst entry {self.entry}: got {self.got:.10g}, expected {self.expected:.10g}, "
            f"|difference| {abs(self.got - self.expected):.3g} > tolerance {self.allowed:.3g} "
            f"({self.outside} of {self.entries} entries outside; reference: {self.reference})"
        )


@dataclass
class GradCheckReport:
    """What check_grads compared (it raised AssertionError if anything disagreed)."""

    checked: dict[str, list[str]] = field(default_factory=dict)  # backend -> the checks made
    skipped: dict[str, str] = field(default_factory=dict)  # backend -> why it could not take f
    references: dict[int, str] = field(default_factory=dict)  # order -> where its reference came from

    def __str__(self) -> str:
        lines = [f"{b}: {', '.join(checks)}" for b, checks in self.checked.items()]
        lines += [f"{b}: skipped, {why}" for b, why in self.skipped.items()]
        return "\n".join(lines + [f"order {k} reference: {s}" for k, s in self.references.items()])


@keywords_checked
def check_grads(
    f: Callable[..., Any],
    args: Sequence[Any],
    order: int = 2,
    modes: Sequence[str] = MODES,
    backends: Sequence[str] | None = None,
    *,
    seed: int = 0,
) -> GradCheckReport:
    """Check f's derivatives at `args`, up to `order` (1 or 2), on every installed backend that
    can differentiate f (or on those named in `backends`), against the conformance engine's
    corroborated reference with its tolerances.

    `args` is the tuple of f's arguments (pytrees of float arrays allowed; every leaf is
    differentiated); f returns a float array or a pytree of them. `modes`: "fwd" checks the
    backends that build derivatives from JVPs (forward) and takes second derivatives by forward,
    "rev" those that build them from a pullback (reverse) and by reverse; the others (symbolic,
    numeric) are checked in either; a pattern backend (Backend.pattern) is left out (said so if named).
    Raises AssertionError naming the backend, the argument, the order and the worst entry; returns
    what was compared (a GradCheckReport).
    """
    modes = _checked_options(f, args, order, modes)
    flat, leaves, names, outputs = flatten(f, args)
    installed, chosen = api.backends(), _chosen(backends, modes)
    # the estimate is checked whatever `backends` says: it corroborates the reference, and backends
    # sharing a rule (a custom_jvp's, by forward and reverse) agree with each other even when it is wrong
    estimators = [b for b in installed if estimates(b) and b not in chosen]
    run = _BackendRun(GradCheckReport(), named=backends is not None, unasked=estimators)
    for name in [b for b in chosen if abilities.patterns(b)]:  # not differentiators: said if named
        chosen.remove(name)
        if backends is not None:
            run.report.skipped[name] = PATTERN_SKIPPED
    if not chosen:
        raise UnsupportedByBackendError(f"check_grads: {', '.join(run.report.skipped)}: {PATTERN_SKIPPED}")
    rng = np.random.default_rng(seed)
    probe = Probe.build(flat, leaves, names, FULL_SIZE, DIRECTIONS, rng)
    failures = _first_order(probe, outputs, chosen + estimators, installed, run, rng)
    if order == 2:
        outers = [o for o in abilities.outers(installed) if _mode(o) in modes]
        if len(probe.active) <= SECOND_DIMENSIONS:  # each leaf its share of the dimensions
            share = SECOND_DIMENSIONS // max(1, len(probe.active))
            second = Probe.build(flat, leaves, names, share, share, rng)
        else:
            second = JointProbe.build(flat, leaves, SECOND_DIMENSIONS, rng)
        failures += _second_order(second, chosen, outers, installed, run, rng)
    _something_was_checked(run.report, named=backends is not None)
    if failures:
        raise AssertionError(_message(failures))
    return run.report


# --- what is checked --------------------------------------------------------------------


def _checked_options(f: Any, args: Any, order: Any, modes: Any) -> tuple[str, ...]:
    if not callable(f):
        raise InvalidInputError(
            f"check_grads: expected a function to check, got {type(f).__name__} {f!r:.60}"
        )
    if not isinstance(args, (tuple, list)):
        raise InvalidInputError(
            f"check_grads(f, args): args must be the tuple of f's arguments, got {type(args).__name__}; "
            "write check_grads(f, (x,)) for one argument"
        )
    if type(order) is not int or order not in (1, 2):
        raise InvalidValueError(f"check_grads: order must be 1 or 2, got {order!r}")
    modes = (modes,) if isinstance(modes, str) else tuple(modes)
    if not modes or any(m not in MODES for m in modes):
        raise InvalidValueError(f"check_grads: modes must be a non-empty subset of {MODES}, got {modes!r}")
    return modes


def _chosen(backends: Sequence[str] | None, modes: tuple[str, ...]) -> list[str]:
    """The backends to check: those named (each must exist), else all installed, of `modes`."""
    if isinstance(backends, str):
        backends = (backends,)
    names = api.backends() if backends is None else [api.get_backend(b).name for b in backends]
    chosen = [b for b in names if _mode(b) in (*modes, "")]
    if not chosen:
        kinds = ", ".join(f"{b} is {_mode(b)!r}" for b in names)
        raise InvalidValueError(
            f"check_grads: modes={modes!r} leaves none of the backends to check ({kinds})"
        )
    return chosen


def _mode(backend: str) -> str:
    """'rev' for a backend that builds its derivatives from a pullback, 'fwd' from JVPs, else ''."""
    return {"vjp": "rev", "jvp": "fwd"}.get(api.get_backend(backend).builds, "")


class _BackendRun:
    """Runs one check of one backend. A backend that says it cannot (an AdcoreError that is a
    NotImplementedError: a missing rule, something it does not do) is skipped, for that check or,
    when it cannot take f at all (its Jacobian), for every check, unless it was named; so is an
    estimator nobody named that fails to estimate. Any other error is f's or the backend's, and
    propagates with a note saying where."""

    def __init__(self, report: GradCheckReport, named: bool, unasked: Sequence[str] = ()) -> None:
        self.report, self.named, self.unasked = report, named, set(unasked)

    def __call__(self, backend: str, what: str, compute: Callable[[], Any]) -> Any:
        if backend in self.report.skipped:
            return None
        try:
            result = compute()
        except Exception as e:
            whole = what == "jacobian"
            cannot = isinstance(e, AdcoreError) and isinstance(e, NotImplementedError)
            if backend in self.unasked or (cannot and not (whole and self.named)):
                self.report.skipped[backend if whole else f"{backend}, {what}"] = f"{type(e).__name__}: {e}"
                return None
            e.add_note(
                f"check_grads: raised by backend {backend!r} ({what}); leave it out with backends=[...]"
            )
            raise
        checks = self.report.checked.setdefault(backend, [])
        if what not in checks:
            checks.append(what)
        return result


def _something_was_checked(report: GradCheckReport, named: bool) -> None:
    """A backend that differentiates by rules was checked (or, if named, whatever was named):
    an estimate alone, compared with itself, proves nothing."""
    if report.checked and (named or any(not estimates(b) for b in report.checked)):
        return
    why = "; ".join(f"{b}: {reason}" for b, reason in report.skipped.items())
    raise UnsupportedByBackendError(
        "check_grads: no backend that differentiates by rules could take f, and an estimate alone "
        f"has nothing to be compared with ({why})"
    )


def _reference(reference: Reference | None, order: int, report: GradCheckReport) -> Reference:
    """The engine's reference, provided something independent corroborates it."""
    if reference is None or "uncorroborated" in reference.source:
        found = f"only {reference.source}" if reference else "no backend could differentiate f"
        raise UnsupportedByBackendError(
            f"check_grads: no corroborated reference for f's order-{order} derivatives ({found}); it "
            "takes two installed backends that can differentiate f, or one and numeric's estimate: "
            "install or enable another (`adcore plugins` lists them)"
        )
    report.references[order] = reference.source
    return reference


# --- first order ------------------------------------------------------------------------


def _first_order(
    probe: Probe, outputs: Outputs, chosen: list, installed: list, run: _BackendRun, rng
) -> list[Failure]:
    at64 = Results(probe.call(np.float64))
    reference = _reference(reference_for(at64, installed, lambda b: True, every=True), 1, run.report)
    same = all(probe.dtype(n) == np.float64 for n in range(len(probe.active)))
    here = at64 if same else Results(probe.call())
    failures = []
    for backend in chosen:
        result = run(backend, "jacobian", lambda b=backend: here.jacobians(b))
        if result is None:
            continue
        estimator = estimates(backend)
        jacobians, errors = result if estimator else (result[0], (0.0,) * len(result[0]))
        for n, jac in enumerate(jacobians):
            table = tolerances.ESTIMATE if estimator else tolerances.EXACT
            error = np.asarray(errors[n]) + reference.error(n)
            expected = reference.jacobians[n]
            out = np.ndim(expected) - probe.ndim(n)

            def entry(index: tuple, n: int = n, out: int = out) -> str:
                return f"d {outputs.name(index[:out])} / d {probe.at(n, index[out:])}"

            comparison = _Comparison(backend, 1, "jacobian", probe.name(n), reference.source)
            failures += comparison.judge(entry, jac, expected, table[probe.dtype(n).name], error)
            if np.result_type(jac) != probe.dtype(n):
                got, want = (
                    f"the derivative has dtype {np.result_type(jac)}",
                    f"{probe.dtype(n)}, the input's",
                )
                failures.append(_Comparison(backend, 1, "dtype", probe.name(n), "").mismatch(got, want))
        if not estimator:
            failures += _dot_products(backend, probe, here.call, reference, run, rng)
    return failures


def _dot_products(
    backend: str, probe: Probe, call: CheckedCall, reference, run: _BackendRun, rng
) -> list[Failure]:
    """<vjp(u), v_n> or <u, jvp(v_n)> against <u, J_n v_n> of the reference, for each leaf n."""
    mode = _mode(backend)
    if not mode or not call.args:
        return []
    out = np.shape(reference.jacobians[0])[: np.ndim(reference.jacobians[0]) - probe.ndim(0)]
    u = rng.uniform(-1, 1, out).astype(np.result_type(*call.args))
    vs = [rng.uniform(-1, 1, np.shape(p)).astype(p.dtype) for p in call.args]
    if mode == "rev":
        pulled = run(backend, "vjp", lambda: api.vjp(call.fn, *call.args, backend=backend)[1](u))
        if pulled is None:
            return []
    failures = []
    for n, (jac, v) in enumerate(zip(reference.jacobians, vs)):
        flat = np.reshape(jac, (u.size, v.size))
        expected = float(u.reshape(-1).astype(np.float64) @ flat @ v.reshape(-1))
        scale = float(np.abs(u.reshape(-1)) @ np.abs(flat) @ np.abs(v.reshape(-1)))
        if mode == "rev":
            check, got = "vjp", float(np.sum(np.asarray(pulled[n], dtype=np.float64) * v))
        else:
            pushed = run(
                backend,
                "jvp",
                lambda n=n, v=v: api.jvp(call.of((n,)), (call.args[n],), (v,), backend=backend),
            )
            if pushed is None:
                return []
            check, got = "jvp", float(np.sum(u.astype(np.float64) * np.asarray(pushed[1], dtype=np.float64)))
        comparison = _Comparison(backend, 1, check, probe.name(n), f"<u, J v> of {reference.source}")
        what = "<vjp(u), v>" if check == "vjp" else "<u, jvp(v)>"
        tolerance = tolerances.EXACT[probe.dtype(n).name]
        failures += comparison.judge(
            lambda _, w=what: f"{w} for random u, v", got, expected, tolerance, 0.0, scale
        )
    return failures


# --- second order -----------------------------------------------------------------------


def _second_order(
    probe: Probe | JointProbe, chosen: list, outers: list, installed: list, run: _BackendRun, rng
) -> list[Failure]:
    """Hessians of <w, f> by (inner, outer) pairs, the inner backend's derivative differentiated by
    the outer one, and the estimate, against the engine's choice of a reference among them."""
    weights = rng.uniform(0.5, 1.5, np.shape(probe.fn(*probe.leaves)))
    at64 = _Hessians(probe.call(np.float64), weights)
    estimator, estimate = _second_estimate(at64, installed)
    reference = _reference(choose_reference(_second_candidates(at64, installed), estimate), 2, run.report)
    same = all(probe.dtype(n) == np.float64 for n in range(len(probe.active)))
    here = at64 if same else _Hessians(probe.call(), weights)
    results = []  # (backend, check, hessians, their errors)
    for inner in (b for b in chosen if not estimates(b)):
        for outer in outers:
            check = f"second by {outer}"
            hessians = run(inner, check, lambda i=inner, o=outer: here.result(i, o))
            results += [(inner, check, hessians, ())] if hessians is not None else []
    if estimate is not None and estimate.jacobians is not reference.jacobians:
        check = f"second, {estimator} over {estimator}"
        run.report.checked.setdefault(estimator, []).append(check)
        results.append((estimator, check, estimate.jacobians, estimate.errors))
    failures = []
    m = len(probe.active)
    for backend, check, hessians, errors in results:
        for k, h in enumerate(hessians):
            i, j = divmod(k, m)
            both64 = probe.dtype(i) == probe.dtype(j) == np.float64
            tolerance = tolerances.SECOND if both64 else tolerances.EXACT["float32"]
            argument = probe.name(i) if i == j else f"{probe.name(i)} and {probe.name(j)}"

            def entry(index: tuple, i: int = i, j: int = j) -> str:
                a = probe.ndim(i)
                return f"d2 <w, out> / d {probe.at(i, index[:a])} d {probe.at(j, index[a:])}"

            error = (errors[k] if errors else 0.0) + reference.error(k)
            comparison = _Comparison(backend, 2, check, argument, reference.source)
            failures += comparison.judge(entry, h, reference.jacobians[k], tolerance, error)
    return failures


def _second_candidates(at64: _Hessians, installed: list) -> dict[str, tuple]:
    """One float64 Hessian per exact backend, by the first outer backend that takes it (as the engine)."""
    candidates = {}
    for inner in (b for b in installed if not estimates(b) and not abilities.patterns(b)):
        found = (at64(inner, o) for o in abilities.outers(installed))
        hessians = next((h for h in found if not isinstance(h, Exception)), None)
        if hessians is not None:
            candidates[inner] = hessians
    return candidates


def _second_estimate(at64: _Hessians, installed: list) -> tuple[str | None, JacobianEstimate | None]:
    """The estimating backend over itself (numeric's Richardson twice), if one is installed."""
    estimator = next((b for b in installed if estimates(b)), None)
    if estimator is None:
        return None, None
    return estimator, second_estimate(at64.phi, at64.call.args, estimator)


class _Hessians:
    """The Hessians of phi = <w, f> of one call, by (inner, outer) backend pair, each computed once:
    the flat tuple H[0][0], H[0][1], ..., or the exception it raised."""

    def __init__(self, call: CheckedCall, weights: np.ndarray) -> None:
        w = weights.astype(np.result_type(*call.args))
        self.call, self.memo = call, {}
        self.phi = lambda *ps: ops.sum(call.fn(*ps) * w)

    def __call__(self, inner: str, outer: str) -> Any:
        if (inner, outer) not in self.memo:
            try:
                rows = api.hessian(self.phi, argnums=self.call.argnums, inner=inner, outer=outer)(
                    *self.call.args
                )
                self.memo[inner, outer] = tuple(h for row in rows for h in row)
            except Exception as e:
                self.memo[inner, outer] = e
        return self.memo[inner, outer]

    def result(self, inner: str, outer: str) -> tuple:
        hessians = self(inner, outer)
        if isinstance(hessians, Exception):
            raise hessians
        return hessians


# --- comparing and reporting ------------------------------------------------------------


@dataclass(frozen=True)
class _Comparison:
    """What is compared, for the Failure it may become."""

    backend: str
    order: int
    check: str
    argument: str
    reference: str

    def judge(
        self,
        entry: Callable[[tuple], str],
        actual: Any,
        expected: Any,
        tolerance: tolerances.Tolerance,
        error: Any = 0.0,
        scale: float | None = None,
    ) -> list[Failure]:
        """[] if `actual` agrees with `expected` entry by entry (deviation), else its worst entry."""
        actual, expected = np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64)
        if actual.shape != expected.shape:
            return [self.mismatch(f"the derivative has shape {actual.shape}", f"shape {expected.shape}")]
        if expected.size == 0:
            return []
        diff, limit = deviation(actual, expected, tolerance, error, scale)
        ratios = np.where(np.isnan(diff / limit), np.inf, diff / limit)
        outside = int(np.sum(ratios > 1))
        if not outside:
            return []
        where = np.unravel_index(np.argmax(ratios), ratios.shape)
        got, want, allowed = float(actual[where]), float(expected[where]), float(limit[where])
        return [
            Failure(
                *self._head(),
                entry(where),
                got,
                want,
                allowed,
                outside,
                ratios.size,
                self.reference,
                float(ratios[where]),
            )
        ]

    def mismatch(self, got: str, expected: str) -> Failure:
        """A derivative of the wrong shape or dtype: no entry to compare."""
        nan = float("nan")
        return Failure(*self._head(), got, nan, nan, nan, 1, 1, expected, float("inf"))

    def _head(self) -> tuple:
        return self.backend, self.order, self.check, self.argument


def _message(failures: list[Failure]) -> str:
    """The worst failure per (backend, order, argument), worst first; and, when an estimate
    disagrees with an exact consensus, what that may mean."""
    worst: dict[tuple, Failure] = {}
    for failure in failures:
        key = (failure.backend, failure.order, failure.argument)
        if key not in worst or failure.ratio > worst[key].ratio:
            worst[key] = failure
    ranked = sorted(worst.values(), key=lambda f: -f.ratio)
    lines = [f"  {f}" for f in ranked[:MAX_LINES]]
    if len(ranked) > MAX_LINES:
        lines.append(f"  ... and {len(ranked) - MAX_LINES} more")
    estimated = next((f for f in ranked if estimates(f.backend)), None)
    if estimated is not None:
        lines.append(
            f"{estimated.backend}'s estimate disagrees with {estimated.reference}: either those backends "
            "share a wrong rule (a custom_jvp rule serves forward and reverse alike, an op plugin's jvp and "
            f"vjp rules may make the same mistake), or {estimated.backend}'s estimate is unreliable at this "
            "point (a kink, a discontinuity); check the rule at other points to tell which"
        )
    backends = ", ".join(dict.fromkeys(repr(f.backend) for f in ranked))
    head = f"check_grads: f's derivatives disagree with the reference on backend {backends}:"
    return "\n".join([head, *lines])
