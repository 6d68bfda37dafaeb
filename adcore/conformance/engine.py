"""The conformance engine: every op and case, on every installed backend, against one reference.

For each subject (an op or a composite case), each dtype and each of its samples:

1. The reference Jacobian, in float64 at the sample's values: the first of symbolic,
   reverse, forward (then any other rule-based backend) that supports the subject and is
   corroborated, i.e. agrees with another of them or with numeric's Richardson estimate
   within that estimate's error. So the exact symbolic result is the reference wherever it
   exists and is right, the forward/reverse consensus otherwise; if nothing is
   corroborated, numeric's estimate itself, with its error as extra tolerance.
2. Each backend's derivatives at the sample, in the sample's dtype, against it:
   - jacobian: d f / d x for each differentiable float input, in the input's dtype;
   - zero: 0 for float inputs the op declares not differentiable (not numeric, which sees
     only the impl);
   - vjp, jvp: the dot-product test, <vjp(u), v> and <u, jvp(v)> against <u, J v> of the
     reference with dense random u and v, for backends with a vjp or jvp of their own;
   - second (float64, ops flagged elementwise, first small sample): the Hessian of
     <w, op(x)>, the backend's gradient differentiated again by forward (else reverse),
     against a reference chosen the same way: so a rule must itself be
     differentiable, i.e. written with adcore ops;
   - kink: the conventions of docs/conventions.md at the kink points (not numeric).
   numeric is checked within its own error estimate (tolerances.py).
"""

from __future__ import annotations

import multiprocessing
import sys
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

import adcore
from adcore.backend import Backend
from adcore.conformance import tolerances
from adcore.conformance.kinks import KINKS
from adcore.conformance.results import Cell, Report, Subject, Worst
from adcore.errors import MissingRuleError
from adcore.plugins import get_registry
from adcore.registry import Registry
from adcore.spec import Case, OpSpec, Sample

DTYPES: tuple[str, ...] = ("float64", "float32")
PREFERENCE: tuple[str, ...] = ("symbolic", "reverse", "forward")  # reference candidates, in order
SECOND_OUTER: tuple[str, ...] = ("forward", "reverse")  # takes the outer derivative of second ones
SECOND_MAX_SIZE = 6  # elements per input for second derivatives (nested estimates are costly)


def estimates(backend: str) -> bool:
    """Whether the backend's derivatives are estimates with an error bound (Backend.estimates):
    compared within that bound, never a reference by themselves when an exact one agrees."""
    return get_registry().backend(backend).estimates


def estimate_options(backend: str) -> dict[str, Any]:
    """The options that ask an estimating backend for its best estimate and its error bound."""
    return dict(get_registry().backend(backend).estimate_options)


# --- what is differentiated -------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """fn(*args) differentiated with respect to args[argnums]; args[zeros] must get 0."""

    fn: Callable[..., Any]
    args: tuple
    argnums: tuple[int, ...]
    zeros: tuple[int, ...] = ()
    label: str = ""

    def in_float64(self) -> Call:
        """The same call at the same values, every float input in float64."""
        args = tuple(a.astype(np.float64) if _is_float(a) else a for a in self.args)
        return replace(self, args=args)

    def of(self, argnums: Sequence[int]) -> Callable[..., Any]:
        """fn as a function of the inputs at `argnums` alone, the others fixed."""

        def partial(*xs: Any) -> Any:
            args = list(self.args)
            for i, x in zip(argnums, xs):
                args[i] = x
            return self.fn(*args)

        return partial


_op_functions: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _op_function(op: OpSpec, params: dict) -> Callable[..., Any]:
    """op(*inputs, **params), one function object per (op, params): the symbolic backend
    caches its compiled derivative per function object, so samples of the same shapes share it."""
    functions = _op_functions.setdefault(op, {})
    key = repr(sorted(params.items()))
    if key not in functions:
        functions[key] = lambda *inputs: op(*inputs, **params)
    return functions[key]


def op_calls(op: OpSpec, dtype: str, seed: int = 0) -> list[Call]:
    """One Call per sample of `op` in `dtype`, drawn with `seed`."""
    samples = op.samples(np.random.default_rng(seed), np.dtype(dtype)) if op.samples else []
    calls = []
    for k, sample in enumerate(samples):
        floats = [i for i, a in enumerate(sample.args) if _is_float(a)]
        calls.append(
            Call(
                _op_function(op, sample.params),
                sample.args,
                tuple(i for i in floats if op.is_differentiable(i)),
                tuple(i for i in floats if not op.is_differentiable(i)),
                describe(k, sample),
            )
        )
    return calls


def case_calls(case: Case, dtype: str, seed: int = 0) -> list[Call]:
    """One Call per sample of `case` in `dtype`, drawn with `seed`."""
    samples = case.samples(np.random.default_rng(seed), np.dtype(dtype))
    calls = []
    for k, sample in enumerate(samples):
        fn = case.fn if not sample.params else _with_keywords(case.fn, sample.params)
        calls.append(Call(fn, tuple(sample.args), tuple(case.argnums), (), describe(k, sample)))
    return calls


def _with_keywords(fn: Callable[..., Any], params: dict) -> Callable[..., Any]:
    return lambda *args: fn(*args, **params)


def describe(k: int, sample: Sample) -> str:
    """'#k x0: float64 (2, 3), x1: bool (2, 3); axis=1'."""
    inputs = ", ".join(f"x{i}: {_describe_value(a)}" for i, a in enumerate(sample.args))
    params = ", ".join(f"{name}={value!r}" for name, value in sample.params.items())
    return f"#{k} {inputs}" + (f"; {params}" if params else "")


def _describe_value(a: Any) -> str:
    if isinstance(a, (np.ndarray, np.generic)):
        return f"{a.dtype} {a.shape}"
    return repr(a)


# --- tallying comparisons into a cell ---------------------------------------------------


@dataclass
class Tally:
    """The comparisons made for one cell, and the worst of them."""

    checks: int = 0
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    worst: Worst | None = None
    worst_ratio: float = -1.0  # |a - r| / allowed of the worst comparison; > 1 fails
    error: str = ""
    unsupported: str = ""

    def add(self, worst: Worst, ratio: float) -> None:
        self.checks += 1
        self.max_abs_error = max(self.max_abs_error, worst.abs_error)
        self.max_rel_error = max(self.max_rel_error, worst.rel_error)
        if not ratio <= self.worst_ratio:  # nan ranks worst
            self.worst, self.worst_ratio = worst, ratio

    def cell(self, subject: str, backend: str, dtype: str) -> Cell:
        if self.unsupported:
            return Cell(subject, backend, dtype, "unsupported", message=self.unsupported)
        failed = not self.worst_ratio <= 1.0 and self.worst is not None
        status = "error" if self.error else "disagrees" if failed else "agrees"
        message = self.error
        if status == "disagrees":
            message = f"{self.worst.check} differs at sample {self.worst.sample}"
        return Cell(
            subject,
            backend,
            dtype,
            status,
            self.checks,
            self.max_abs_error,
            self.max_rel_error,
            self.worst,
            message,
        )


def compare(
    tally: Tally,
    label: str,
    check: str,
    actual: Any,
    expected: np.ndarray,
    tolerance: tolerances.Tolerance,
    error: Any = 0.0,
    source: str = "",
    scale: float | None = None,
) -> None:
    """Add one comparison of `actual` with `expected` (element by element) to the tally.

    With `scale`, the allowed difference is (rtol + atol) * scale + atol instead (a dot
    product is judged against the sum of its terms' sizes, so cancellation in the sum is no
    failure; atol is the floor when the Jacobian is 0, as for x / x)."""
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    if actual.shape != expected.shape:
        detail = f"shape {actual.shape}, expected {expected.shape}"
        tally.add(Worst(label, check, float("inf"), float("inf"), detail), float("inf"))
        return
    diff, limit = deviation(actual, expected, tolerance, error, scale)
    ratios = diff / limit
    if ratios.size == 0:
        tally.add(Worst(label, check, 0.0, 0.0, "empty"), 0.0)
        return
    where = np.unravel_index(np.argmax(ratios), ratios.shape)
    abs_error = float(diff.max())
    scale = float(np.max(np.abs(expected)))
    rel_error = abs_error / scale if scale > 0 else (0.0 if abs_error == 0 else float("inf"))
    at = f"at {tuple(map(int, where))}: " if where else ""
    detail = f"{at}got {float(actual[where])!r}, expected {float(expected[where])!r}"
    if source:
        detail += f" (reference: {source})"
    tally.add(Worst(label, check, abs_error, rel_error, detail), float(ratios[where]))


def deviation(
    actual: np.ndarray,
    expected: np.ndarray,
    tolerance: tolerances.Tolerance,
    error: Any = 0.0,
    scale: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """|actual - expected| and the largest difference allowed, entry by entry (same shapes, float64),
    as `compare` judges them (adcore.check_grads reports from them too)."""
    with np.errstate(invalid="ignore"):  # inf - inf
        diff = np.abs(actual - expected)
    diff = np.where(np.isnan(diff), np.inf, diff)  # nan where a number was expected is wrong
    diff = np.where(actual == expected, 0.0, diff)  # equal infinities agree
    if scale is None:
        limit = tolerances.allowed(expected, tolerance, np.broadcast_to(error, expected.shape))
    else:
        limit = np.full(expected.shape, (tolerance.rtol + tolerance.atol) * scale + tolerance.atol)
    return diff, limit


# --- the reference ----------------------------------------------------------------------


@dataclass
class Reference:
    """The derivatives every backend is compared with, where they came from, and their error."""

    jacobians: tuple[np.ndarray, ...]
    source: str
    errors: tuple[Any, ...] = ()

    def error(self, i: int) -> Any:
        return self.errors[i] if self.errors else 0.0


@dataclass
class Estimate:
    jacobians: tuple[np.ndarray, ...]
    errors: tuple[np.ndarray, ...]
    backend: str  # the estimating backend, named in the reference's source


def choose_reference(exact: dict[str, tuple], estimate: Estimate | None) -> Reference | None:
    """The first backend in `exact` (in preference order) corroborated by another or by the
    estimate; else the estimate; else the first backend of `exact`, uncorroborated."""
    names = sorted(exact, key=_preference)
    for name in names:
        agreeing = [
            other
            for other in names
            if other != name and _agree(exact[name], exact[other], tolerances.CONSENSUS)
        ]
        if agreeing:
            return Reference(exact[name], f"{name} = {' = '.join(agreeing)}")
        if estimate is not None and _agree(
            exact[name], estimate.jacobians, tolerances.ESTIMATE["float64"], estimate.errors
        ):
            return Reference(exact[name], f"{name} = {estimate.backend}")
    if estimate is not None:
        return Reference(
            estimate.jacobians, f"{estimate.backend} (its own estimate, ± its error)", estimate.errors
        )
    if names:
        return Reference(exact[names[0]], f"{names[0]} (uncorroborated: no other backend computed it)")
    return None


def _preference(name: str) -> tuple[int, str]:
    return (PREFERENCE.index(name) if name in PREFERENCE else len(PREFERENCE), name)


def _agree(a: tuple, b: tuple, tolerance: tolerances.Tolerance, errors: tuple = ()) -> bool:
    for i, (x, y) in enumerate(zip(a, b)):
        x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
        if x.shape != y.shape:
            return False
        error = errors[i] if errors else 0.0
        if not np.all((x == y) | (np.abs(x - y) <= tolerances.allowed(y, tolerance, error))):
            return False
    return True


# --- checking one subject ---------------------------------------------------------------


class Results:
    """Each backend's Jacobians of one call, computed once (the reference and the cells share them)."""

    def __init__(self, call: Call) -> None:
        self.call = call
        self._memo: dict[str, Any] = {}

    def jacobians(self, backend: str) -> tuple:
        """(jacobians for argnums, jacobians for zeros); for an estimator (jacobians, errors)."""
        if backend not in self._memo:
            try:
                self._memo[backend] = self._compute(backend)
            except Exception as e:
                self._memo[backend] = e
        result = self._memo[backend]
        if isinstance(result, Exception):
            raise result
        return result

    def _compute(self, backend: str) -> tuple:
        call = self.call
        if estimates(backend):
            estimate = adcore.jacobian(
                call.fn, argnums=call.argnums, backend=backend, **estimate_options(backend)
            )
            jacs, errors = estimate(*call.args)
            return tuple(jacs), tuple(errors)
        argnums = call.argnums + call.zeros
        jacs = adcore.jacobian(call.fn, argnums=argnums, backend=backend)(*call.args)
        return tuple(jacs[: len(call.argnums)]), tuple(jacs[len(call.argnums) :])


def reference_for(
    results: Results, backends: Iterable[str], supported: Callable[[str], bool]
) -> Reference | None:
    """The reference Jacobians of `results.call` (a float64 call) from the installed backends."""
    exact: dict[str, tuple] = {}
    estimate = None
    for name in backends:
        if not supported(name):
            continue
        try:
            jacs = results.jacobians(name)
        except Exception:
            continue
        if estimates(name):
            estimate = estimate or Estimate(*jacs, name)
        else:
            exact[name] = jacs[0]
    return choose_reference(exact, estimate)


def check_subject(
    subject: str,
    calls: list[Call],
    backends: Sequence[str],
    dtype: str,
    supported: Callable[[str], str],
    *,
    second: bool = False,
    kinks: Sequence[Any] = (),
    seed: int = 0,
) -> list[Cell]:
    """The cells of one subject in one dtype: every backend in `backends` at every call.

    `supported(backend)` is "" or why the backend cannot take the subject (a missing rule).
    """
    installed = adcore.backends()
    tallies = {b: Tally(unsupported=supported(b)) for b in backends}
    for k, call in enumerate(calls):
        here = Results(call)
        at64 = here if dtype == "float64" else Results(call.in_float64())
        reference = reference_for(at64, installed, lambda b: not supported(b))
        for backend, tally in tallies.items():
            if tally.unsupported or tally.error:
                continue
            try:
                if reference is None:
                    raise RuntimeError(
                        "no installed backend could differentiate it, so there is no reference"
                    )
                _check_call(tally, backend, here, reference, dtype, np.random.default_rng([seed, k]))
            except MissingRuleError as e:
                tally.unsupported = str(e)
            except Exception as e:
                tally.error = f"sample {call.label}: {type(e).__name__}: {e}"
    if second and dtype == "float64":
        _check_second(tallies, calls, installed, supported, seed)
    for kink in kinks:
        _check_kink(tallies, kink, dtype)
    return [tally.cell(subject, backend, dtype) for backend, tally in tallies.items()]


def _check_call(
    tally: Tally, backend: str, results: Results, reference: Reference, dtype: str, rng: np.random.Generator
) -> None:
    call = results.call
    if estimates(backend):
        jacs, errors = results.jacobians(backend)
        tolerance = tolerances.ESTIMATE[dtype]
    else:
        jacs, zeros = results.jacobians(backend)
        errors = (0.0,) * len(jacs)
        tolerance = tolerances.EXACT[dtype]
        for i, jac in zip(call.zeros, zeros):
            compare(
                tally,
                call.label,
                "zero",
                jac,
                np.zeros(np.shape(jac)),
                tolerance,
                source=f"input {i} is not differentiable",
            )
    for n, (i, jac) in enumerate(zip(call.argnums, jacs)):
        error = errors[n] + reference.error(n)
        compare(
            tally, call.label, "jacobian", jac, reference.jacobians[n], tolerance, error, reference.source
        )
        if np.result_type(jac) != call.args[i].dtype:
            tally.add(
                Worst(
                    call.label,
                    "dtype",
                    0.0,
                    0.0,
                    f"input {i} is {call.args[i].dtype}, its derivative {np.result_type(jac)}",
                ),
                float("inf"),
            )
    if not estimates(backend) and call.argnums:
        _check_dot_products(tally, backend, call, reference, tolerance, rng)


def _check_dot_products(
    tally: Tally,
    backend: str,
    call: Call,
    reference: Reference,
    tolerance: tolerances.Tolerance,
    rng: np.random.Generator,
) -> None:
    """<vjp(u), v> and <u, jvp(v)> against <u, J v> from the reference, for dense random u, v."""
    be = type(adcore.get_backend(backend))
    own_vjp, own_jvp = be.vjp is not Backend.vjp, be.jvp is not Backend.jvp
    if not (own_vjp or own_jvp):
        return
    xs = [call.args[i] for i in call.argnums]
    fn = call.of(call.argnums)
    out_shape = np.shape(reference.jacobians[0])[: np.ndim(reference.jacobians[0]) - np.ndim(xs[0])]
    out_dtype = np.result_type(*xs)
    u = rng.uniform(-1, 1, out_shape).astype(out_dtype)
    vs = [rng.uniform(-1, 1, np.shape(x)).astype(x.dtype) for x in xs]
    expected, scale = 0.0, 0.0
    for jac, v in zip(reference.jacobians, vs):
        flat = np.reshape(jac, (u.size, v.size))
        expected += float(u.reshape(-1).astype(np.float64) @ flat @ v.reshape(-1))
        scale += float(np.abs(u.reshape(-1)) @ np.abs(flat) @ np.abs(v.reshape(-1)))
    if own_vjp:
        _, vjp_fn = adcore.vjp(fn, *xs, backend=backend)
        cotangents = vjp_fn(u)
        got = sum(float(np.sum(np.asarray(ct, dtype=np.float64) * v)) for ct, v in zip(cotangents, vs))
        compare(
            tally,
            call.label,
            "vjp",
            got,
            expected,
            tolerance,
            source=f"<u, J v> of {reference.source}",
            scale=scale,
        )
    if own_jvp:
        _, tangent = adcore.jvp(fn, tuple(xs), tuple(vs), backend=backend)
        got = float(np.sum(u.astype(np.float64) * np.asarray(tangent, dtype=np.float64)))
        compare(
            tally,
            call.label,
            "jvp",
            got,
            expected,
            tolerance,
            source=f"<u, J v> of {reference.source}",
            scale=scale,
        )


def _check_second(
    tallies: dict[str, Tally], calls: list[Call], installed: list[str], supported, seed: int
) -> None:
    """Hessians of <w, f(x)> on the first small non-empty call: the derivative of each
    backend's first derivative (its rules), taken by the first of SECOND_OUTER that supports
    the op. One outer for all, so a wrong first-order rule fails only its own op: under
    reverse over reverse a wrong sin rule would fail cos too, whose VJP calls sin. (symbolic
    cannot be the outer: the tape rules compute masks from concrete values.)"""
    call = next(
        (c for c in calls if c.argnums and all(0 < np.size(c.args[i]) <= SECOND_MAX_SIZE for i in c.argnums)),
        None,
    )
    if call is None:
        return
    rng = np.random.default_rng([seed, 2])
    weights = rng.uniform(0.5, 1.5, np.shape(call.fn(*call.args)))
    fn = call.of(call.argnums)

    def weighted(*xs: Any) -> Any:
        return adcore.ops.sum(fn(*xs) * weights)

    xs = tuple(call.args[i] for i in call.argnums)
    nums = tuple(range(len(xs)))
    outer = next((o for o in SECOND_OUTER if o in installed and not supported(o)), None)
    if outer is None:
        return
    hessians: dict[str, tuple] = {}
    for name in installed:
        if supported(name) or estimates(name):
            continue
        try:
            rows = adcore.hessian(weighted, argnums=nums, inner=name, outer=outer)(*xs)
            hessians[name] = tuple(h for row in rows for h in row)
        except Exception as e:
            hessians[name] = e  # type: ignore[assignment]
    estimator = next((name for name in installed if estimates(name)), None)
    estimate = second_estimate(weighted, xs, estimator) if estimator is not None else None
    exact = {k: v for k, v in hessians.items() if not isinstance(v, Exception)}
    reference = choose_reference(exact, estimate)
    for backend, tally in tallies.items():
        if tally.unsupported or tally.error or estimates(backend) or reference is None:
            continue
        result = hessians.get(backend)
        if isinstance(result, MissingRuleError):
            continue  # a second-order rule may be missing; first order is what the cell is about
        if isinstance(result, Exception):
            tally.error = f"second derivatives at sample {call.label}: {type(result).__name__}: {result}"
            continue
        for n, h in enumerate(result or ()):
            compare(
                tally,
                call.label,
                "second",
                h,
                reference.jacobians[n],
                tolerances.SECOND,
                reference.error(n),
                reference.source,
            )


def second_estimate(weighted: Callable[..., Any], xs: tuple, estimator: str) -> Estimate | None:
    """d^2 <w, f> / dx_i dx_j by the estimating backend over itself (its best estimate both
    times; the inner one without its error, which the outer cannot take through)."""
    nums = tuple(range(len(xs)))
    options = estimate_options(estimator)
    inner = {k: v for k, v in options.items() if k != "return_error"}
    jacobians, errors = [], []
    try:
        for i in nums:
            gradient = adcore.grad(weighted, argnums=i, backend=estimator, **inner)
            hs, es = adcore.jacobian(gradient, argnums=nums, backend=estimator, **options)(*xs)
            jacobians += list(hs)
            errors += list(es)
    except Exception:
        return None
    return Estimate(tuple(jacobians), tuple(errors), estimator)


def _check_kink(tallies: dict[str, Tally], kink: Any, dtype: str) -> None:
    op = adcore.ops[kink.op]
    inputs = tuple(np.asarray(x, dtype=dtype) for x in kink.inputs)
    nums = tuple(range(len(inputs)))
    label = f"kink {kink.why}: {kink.op}({', '.join(map(repr, kink.inputs))})"
    for backend, tally in tallies.items():
        if tally.unsupported or tally.error or estimates(backend):
            continue
        try:
            jacs = adcore.jacobian(lambda *xs: op(*xs, **kink.params), argnums=nums, backend=backend)(*inputs)
        except Exception as e:
            tally.error = f"{label}: {type(e).__name__}: {e}"
            continue
        for jac, expected in zip(jacs, kink.jacobians):
            compare(
                tally, label, "kink", jac, expected, tolerances.EXACT[dtype], source="docs/conventions.md"
            )


# --- a whole run ------------------------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    """One piece of work for a process: one subject in one dtype, on every backend asked for."""

    kind: str  # "op" or "case"
    name: str
    dtype: str
    backends: tuple[str, ...]
    seed: int = 0


def check_unit(unit: Unit) -> list[Cell]:
    """The cells of one unit (runs in a worker process under --jobs)."""
    registry = get_registry()
    if unit.kind == "op":
        op = registry.op(unit.name)
        calls = op_calls(op, unit.dtype, unit.seed)
        supported = op_support(registry, op)
        kinks = [k for k in KINKS if k.op == op.name]
        return check_subject(
            unit.name,
            calls,
            unit.backends,
            unit.dtype,
            supported,
            second=op.elementwise,
            kinks=kinks,
            seed=unit.seed,
        )
    case = registry.cases[unit.name]
    calls = case_calls(case, unit.dtype, unit.seed)
    return check_subject(unit.name, calls, unit.backends, unit.dtype, lambda b: "", seed=unit.seed)


def op_support(registry: Registry, op: OpSpec) -> Callable[[str], str]:
    """supported(backend): "" if the backend can differentiate `op`, else why not."""

    def supported(backend: str) -> str:
        if not op.variadic and op.differentiable == () and estimates(backend):
            return f"{backend} differentiates the impl, which cannot say that no input of {op.name!r} is differentiable"
        be = registry.backend(backend)
        missing = [kind for kind in getattr(be, "kinds", ()) if op.name not in registry.rules[kind]]
        if missing and (op.variadic or op.differentiable != ()):  # else no input needs a rule
            return f"no {' or '.join(map(repr, missing))} rule for op {op.name!r}"
        return ""

    return supported


@dataclass
class Plan:
    """What a run covers: the subjects (in report order) and the units to check them."""

    subjects: list[Subject] = field(default_factory=list)
    units: list[Unit] = field(default_factory=list)


def plan(
    backends: Sequence[str] | None = None,
    ops: Sequence[str] | None = None,
    cases: Sequence[str] | None = None,
    dtypes: Sequence[str] = DTYPES,
    seed: int = 0,
) -> tuple[list[str], Plan]:
    """The backends and the work of a run; unknown names raise the registry's errors.

    `ops`/`cases` None means all of them, except that naming ops alone runs no cases."""
    registry = get_registry()
    backends = sorted(registry.backends) if backends is None else [registry.backend(b).name for b in backends]
    # a custom_vjp / custom_jvp function's op (pseudo-plugin "user") has no samples to check it
    # at: adcore.check_grads proves it, at the user's arguments
    user = registry.plugins["user"].ops if "user" in registry.plugins else ()
    op_names = sorted(set(registry.ops) - set(user)) if ops is None else [registry.op(o).name for o in ops]
    if cases is None:
        cases = sorted(registry.cases) if ops is None else []
    for name in cases:
        if name not in registry.cases:
            raise KeyError(
                f"no conformance case named {name!r}; registered cases: {', '.join(sorted(registry.cases))}"
            )
    for dtype in dtypes:
        if dtype not in DTYPES:
            raise ValueError(f"conformance runs dtypes {', '.join(DTYPES)}, not {dtype!r}")
    owner = _owners(registry)
    result = Plan()
    for kind, names in (("op", op_names), ("case", list(cases))):
        for name in names:
            result.subjects.append(Subject(name, kind, owner.get((kind, name), "")))
            result.units += [Unit(kind, name, dtype, tuple(backends), seed) for dtype in dtypes]
    return backends, result


def _owners(registry: Registry) -> dict[tuple[str, str], str]:
    owners = {}
    for record in registry.plugins.values():
        owners.update({("op", name): record.name for name in record.ops})
        owners.update({("case", name): record.name for name in record.cases})
    return owners


def run(
    backends: Sequence[str] | None = None,
    ops: Sequence[str] | None = None,
    cases: Sequence[str] | None = None,
    dtypes: Sequence[str] = DTYPES,
    *,
    fuzz: int = 0,
    jobs: int = 1,
    seed: int = 0,
    progress: Callable[[Unit], None] | None = None,
) -> Report:
    """Check every op and case (or those named) on every installed backend (or those named).

    `jobs` > 1 checks units in that many worker processes; `progress(unit)` is called as
    each unit finishes; `fuzz` > 0 adds that many random programs (adcore.conformance.fuzz).
    """
    start = time.perf_counter()
    backends, work = plan(backends, ops, cases, dtypes, seed)
    cells: list[Cell] = []
    for unit, unit_cells in _map(check_unit, work.units, jobs):
        cells += unit_cells
        if progress is not None:
            progress(unit)
    if fuzz:
        from adcore.conformance.fuzz import run_fuzz

        subject, fuzz_cells = run_fuzz(fuzz, backends, dtypes, seed)
        work.subjects.append(subject)
        cells += fuzz_cells
    rows = {s.name: k for k, s in enumerate(work.subjects)}
    cells.sort(key=lambda c: (rows[c.subject], list(dtypes).index(c.dtype), backends.index(c.backend)))
    versions = {r.name: r.version for r in get_registry().plugins.values() if not r.error}
    return Report(work.subjects, backends, list(dtypes), cells, time.perf_counter() - start, seed, versions)


def _map(fn: Callable[[Unit], list[Cell]], units: list[Unit], jobs: int) -> Iterable[tuple[Unit, list[Cell]]]:
    """(unit, fn(unit)) as each finishes, in `jobs` forked processes (or here, for 1)."""
    if jobs <= 1 or len(units) <= 1:
        for unit in units:
            yield unit, fn(unit)
        return
    # fork keeps what this process loaded (plugins registered by hand included); Windows and
    # macOS' default spawn would load the entry-point plugins afresh, which is fine too
    context = multiprocessing.get_context("fork" if sys.platform == "linux" else None)
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        futures = {pool.submit(fn, unit): unit for unit in units}
        for future in as_completed(futures):
            yield futures[future], future.result()


def _is_float(a: Any) -> bool:
    return isinstance(a, (np.ndarray, np.generic)) and a.dtype.kind == "f"
