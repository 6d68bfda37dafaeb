"""The checks of one subject (an op, a case, a random program) in one dtype, one function each,
and `check_subject`, which runs them on every backend and makes the cells.

- values: the value each backend traces, bit for bit the plain call's (NumPy's value: the same
  dtype, shape and numbers, nan where it is nan), the pattern backend's included; an exact
  backend's with its Jacobians and with its vjp or jvp, computed once for both checks;
- jacobians: d f / d x for each differentiable float input, in the input's dtype, against the
  reference (and the derivative's dtype against the input's);
- zeros: 0 for float inputs the op declares not differentiable (not for an estimating backend,
  which sees only the impl);
- dot products: <vjp(u), v> or <u, jvp(v)> (what the backend builds on) against <u, J v> of the
  reference, with dense random u and v;
- second (float64, complex128): the second derivatives of <w, f(x + s v + t u)> in (s, t) at 0, for random
  w, v, u (v'Hv, u'Hu and u'Hv of <w, f>): each backend's first derivative differentiated again
  by the outer backend, so a rule must itself be differentiable (written with adcore ops);
- kinks: the op's Kinks (OpSpec.kinks, docs/conventions.md) on the exact backends;
- patterns: a pattern backend's (Backend.pattern) global and local dependency patterns against the
  reference's non-zeros, as sets, in place of the checks above (adcore.conformance.pattern).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adcore import api
from adcore import ops as adcore_ops
from adcore.conformance import abilities, tolerances
from adcore.conformance.abilities import (
    api_options,
    columns,
    estimate_options,
    estimates,
    exact_for,
    outers,
    patterns,
    products,
    reference_order,
)
from adcore.conformance.calls import CheckedCall, gives_complex, split_function
from adcore.conformance.pattern import check_kink_patterns, check_patterns
from adcore.conformance.reference import JacobianEstimate, Reference, agree, choose_reference, reference_for
from adcore.conformance.results import Cell, Results, Tally, Worst, compare
from adcore.conformance.written import written
from adcore.errors import MissingRuleError, UnreliableEstimateError, UnsupportedByBackendError
from adcore.registry import Registry
from adcore.spec import OpSpec

SECOND_MAX_SIZE = 12  # second derivatives are taken at the largest call with this many elements at most

# A backend that says it cannot do a sample declines it: a rule refusing a param (norm's ord='nuc'
# in sympy), symbolic's work budget, numeric unable to resolve f from its rounding (a random program
# whose value is 0 up to rounding, as cross(a x, b x) . b x is). Counted and shown, not an error.
DECLINED = (MissingRuleError, UnsupportedByBackendError, UnreliableEstimateError)


def check_subject(
    subject: str,
    calls: list[CheckedCall],
    backends: Sequence[str],
    dtype: str,
    supported: Callable[[str], str],
    *,
    second: bool = False,
    op: OpSpec | None = None,
    seed: int = 0,
) -> list[Cell]:
    """The cells of one subject in one dtype: every backend in `backends` at every call; with
    `second`, second derivatives too (float64, complex128); with `op`, its kinks.

    `supported(backend)` is "" or why the backend cannot take the subject (a missing rule).
    A complex dtype's calls are split real functions (calls.split_call), judged as the real dtype
    of their parts (complex128 as float64, complex64 as float32); the op's kinks, real points,
    are checked in the real dtypes alone.
    """
    installed = columns(api.backends())
    tallies = {b: Tally(unsupported=supported(b)) for b in backends}
    cell_dtype, dtype = dtype, tolerances.judged_as(dtype)
    for k, call in enumerate(calls):
        here = Results(call)
        plain = plain_value(call)
        at64 = here if dtype == "float64" else Results(call.in_float64())
        reference = reference_for(at64, installed, lambda b: not supported(b))
        rng = np.random.default_rng([seed, k])
        ulps = COMPLEX_ULPS if cell_dtype != dtype else 0
        u, vs = _directions(call, reference, rng) if reference is not None else (None, [])
        for backend, tally in tallies.items():
            if not tally.open:
                continue
            try:
                if plain is not None and call.argnums:
                    check_value(tally, call, traced_value(backend, here), plain, ulps)
                if reference is None:
                    raise RuntimeError(
                        "no installed backend could differentiate it, so there is no reference"
                    )
                if patterns(backend):  # dependency patterns, judged as sets (conformance.pattern)
                    exact = op is not None and exact_for(backend, op.name) and bool(call.op_alone)
                    check_patterns(tally, backend, here.call, reference, dtype, exact=exact)
                    continue
                check_jacobians(tally, backend, here, reference, dtype)
                check_zeros(tally, backend, here, dtype)
                check_dot_products(tally, backend, call, reference, dtype, u, vs, plain, ulps)
            except DECLINED as e:  # the backend has the subject's rules (else `supported` said so)
                tally.decline(f"sample {call.label}", e)
            except Exception as e:
                tally.error = f"sample {call.label}: {type(e).__name__}: {e}"
    if second and dtype == "float64":
        check_second(tallies, calls, installed, supported, seed)
    for kink in op.kinks if op is not None and cell_dtype == dtype else ():
        check_kink(tallies, op, kink, dtype)
    return [tally.cell(subject, backend, cell_dtype) for backend, tally in tallies.items()]


def op_support(registry: Registry, op: OpSpec) -> Callable[[str], str]:
    """supported(backend): "" if the backend can differentiate `op`, else why not."""

    def supported(backend: str) -> str:
        if not op.variadic and op.differentiable == () and estimates(backend):
            return f"{backend} differentiates the impl, which cannot say that no input of {op.name!r} is differentiable"
        be = abilities.backend(backend)
        # a traceable op's body is differentiated where it has no rule, and a kind may take an
        # elementwise op's rule from its flag (Registry.supports)
        if not registry.supports(be, op) and (op.variadic or op.differentiable != ()):  # else no rule needed
            missing = [kind for kind in getattr(be, "kinds", ()) if op.name not in registry.rules[kind]]
            return f"no {' or '.join(map(repr, missing))} rule for op {op.name!r}"
        return ""

    return supported


# --- values -----------------------------------------------------------------------------------

# NumPy's complex arithmetic is not reproducible in the last bit: np.square of one complex128
# scalar gives two results over 2000 calls (a vectorised loop or not, by the buffer NumPy makes),
# so a complex dtype's parts are compared within this many units in the last place
COMPLEX_ULPS = 1


def plain_value(call: CheckedCall) -> np.ndarray | None:
    """call.fn at its arguments, untraced (an op's impl, NumPy's value); None where it raises (the
    backends' errors then say why)."""
    try:
        with np.errstate(all="ignore"):
            return np.asarray(call.fn(*call.args))
    except Exception:
        return None


def traced_value(backend: str, results: Results) -> Any:
    """The call's value as the backend computes it while differentiating: a pattern backend's at
    this point, an estimating backend's from one jvp by zero tangents (no more than the value),
    an exact backend's from its Jacobians' computation (shared with check_jacobians; the value its
    vjp or jvp gives is checked by check_dot_products)."""
    call = results.call
    if patterns(backend):
        return abilities.backend(backend).value_and_jacobian(call.fn, call.args, call.argnums, local=True)[0]
    if not estimates(backend):
        return results.value(backend)
    xs = tuple(call.args[i] for i in call.argnums)
    return api.jvp(call.of(call.argnums), xs, tuple(np.zeros_like(x) for x in xs), **api_options(backend))[0]


def check_value(tally: Tally, call: CheckedCall, got: Any, plain: np.ndarray | None, ulps: int = 0) -> None:
    """A value a backend traced for the call against the plain value, bit for bit (within `ulps`
    units in the last place: see COMPLEX_ULPS)."""
    if plain is None or not call.argnums:
        return
    differs = value_difference(np.asarray(got), plain, ulps)
    if not differs:
        tally.checks += 1
        return
    detail = f"{differs} (reference: the untraced call, NumPy's value)"
    tally.add(Worst(call.label, "value", 0.0, 0.0, 0.0, detail), math.inf)


def value_difference(
    got: np.ndarray, plain: np.ndarray, ulps: int = 0, names: tuple[str, str] = ("traced", "untraced")
) -> str:
    """'' where got is plain bit for bit (dtype, shape, numbers; nan where nan), or within `ulps`
    units in the last place of it, else how it differs (calling the two `names`)."""
    mine, theirs = names
    if (got.dtype, got.shape) != (plain.dtype, plain.shape):
        return f"{mine} {got.dtype} {got.shape}, {theirs} {plain.dtype} {plain.shape}"
    if np.array_equal(got, plain, equal_nan=plain.dtype.kind in "fc"):
        return ""
    unequal = got != plain
    if ulps and plain.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            unequal &= ~(np.abs(got - plain) <= ulps * np.spacing(np.abs(plain)))
        if not unequal.any():
            return ""
    if plain.dtype.kind in "fc":
        unequal &= ~(np.isnan(got) & np.isnan(plain))
    where = tuple(int(i) for i in np.argwhere(unequal)[0]) if got.ndim else ()
    at = f"at {where}: " if where else ""
    return f"{at}{mine} {got[where]!r}, {theirs} {plain[where]!r}"


# --- first derivatives ------------------------------------------------------------------------


def check_jacobians(tally: Tally, backend: str, results: Results, reference: Reference, dtype: str) -> None:
    """Each differentiated input's Jacobian against the reference, and its dtype against the input's."""
    call = results.call
    if estimates(backend):
        jacs, errors = results.jacobians(backend)
        tolerance = tolerances.ESTIMATE[dtype]
    else:
        jacs = results.jacobians(backend)[0]
        errors = (0.0,) * len(jacs)
        tolerance = tolerances.EXACT[dtype]
    for n, (i, jac) in enumerate(zip(call.argnums, jacs)):
        error = errors[n] + reference.error(n)
        compare(
            tally, call.label, "jacobian", jac, reference.jacobians[n], tolerance, error, reference.source
        )
        if np.result_type(jac) != call.args[i].dtype:
            detail = f"input {i} is {call.args[i].dtype}, its derivative {np.result_type(jac)}"
            tally.add(Worst(call.label, "dtype", 0.0, 0.0, 0.0, detail), float("inf"))


def check_zeros(tally: Tally, backend: str, results: Results, dtype: str) -> None:
    """0 for each float input the op declares not differentiable (exact backends)."""
    call = results.call
    if estimates(backend) or not call.zeros:
        return
    for i, jac in zip(call.zeros, results.jacobians(backend)[1]):
        zero = np.zeros(np.shape(jac))
        source = f"input {i} is not differentiable"
        compare(tally, call.label, "zero", jac, zero, tolerances.EXACT[dtype], source=source)


def _directions(call: CheckedCall, reference: Reference, rng: np.random.Generator) -> tuple[Any, list]:
    """Dense random u (output-shaped) and v (one per differentiated input) in the call's dtypes."""
    if not call.argnums:
        return None, []
    xs = [call.args[i] for i in call.argnums]
    first = reference.jacobians[0]
    out_shape = np.shape(first)[: np.ndim(first) - np.ndim(xs[0])]
    u = rng.uniform(-1, 1, out_shape).astype(np.result_type(*xs))
    return u, [rng.uniform(-1, 1, np.shape(x)).astype(x.dtype) for x in xs]


def check_dot_products(
    tally: Tally,
    backend: str,
    call: CheckedCall,
    reference: Reference,
    dtype: str,
    u: Any,
    vs: list,
    plain: np.ndarray | None = None,
    ulps: int = 0,
) -> None:
    """<vjp(u), v> and <u, jvp(v)> against <u, J v> of the reference, for the products the
    backend computes itself (exact backends); the value the vjp or jvp traced against `plain`."""
    own = products(backend)
    if estimates(backend) or not own or u is None:
        return
    xs = [call.args[i] for i in call.argnums]
    fn = call.of(call.argnums)
    expected, scale = 0.0, 0.0
    for jac, v in zip(reference.jacobians, vs):
        flat = np.reshape(jac, (u.size, v.size))
        expected += float(u.reshape(-1).astype(np.float64) @ flat @ v.reshape(-1))
        scale += float(np.abs(u.reshape(-1)) @ np.abs(flat) @ np.abs(v.reshape(-1)))
    source = f"<u, J v> of {reference.source}"
    tolerance = tolerances.EXACT[dtype]
    if "vjp" in own:
        value, vjp_fn = api.vjp(fn, *xs, **api_options(backend))
        check_value(tally, call, value, plain, ulps)
        cotangents = vjp_fn(u)
        for ct, x in zip(cotangents, xs):  # <., v> broadcasts: an empty output's (0,) cotangent summed to 0
            if np.shape(ct) != np.shape(x):
                compare(tally, call.label, "vjp", ct, np.zeros(np.shape(x)), tolerance, source=source)
        got = sum(float(np.sum(np.asarray(ct, dtype=np.float64) * v)) for ct, v in zip(cotangents, vs))
        compare(tally, call.label, "vjp", got, expected, tolerance, source=source, scale=scale)
    if "jvp" in own:
        value, tangent = api.jvp(fn, tuple(xs), tuple(vs), **api_options(backend))
        check_value(tally, call, value, plain, ulps)
        got = float(np.sum(u.astype(np.float64) * np.asarray(tangent, dtype=np.float64)))
        compare(tally, call.label, "jvp", got, expected, tolerance, source=source, scale=scale)


# --- second derivatives -----------------------------------------------------------------------


def second_call(calls: Sequence[CheckedCall]) -> CheckedCall | None:
    """The call second derivatives are taken at: the largest with at most SECOND_MAX_SIZE
    differentiated elements (the first of equals), else the smallest; none empty."""
    candidates = [c for c in calls if c.argnums and all(np.size(c.args[i]) > 0 for i in c.argnums)]
    small = [c for c in candidates if c.size <= SECOND_MAX_SIZE]
    if small:
        return max(small, key=lambda c: c.size)
    return min(candidates, key=lambda c: c.size, default=None)


def along_directions(call: CheckedCall, rng: np.random.Generator) -> Callable[..., Any]:
    """psi(s, t) = <w, f(x + s v + t u)> for random w (positive), v and u (one per differentiated
    input): its Hessian in (s, t) at 0 holds v'Hv, v'Hu and u'Hu of <w, f> at the call."""
    xs = [call.args[i] for i in call.argnums]
    vs = [rng.uniform(-1, 1, np.shape(x)).astype(x.dtype) for x in xs]
    us = [rng.uniform(-1, 1, np.shape(x)).astype(x.dtype) for x in xs]
    weights = rng.uniform(0.5, 1.5, np.shape(call.fn(*call.args))).astype(np.result_type(*xs))
    # written as Python source (conformance.written), as the engine's other functions are
    namespace: dict[str, Any] = {"fn": call.fn, "ops": adcore_ops, "weights": weights}
    body = []
    for i, x, v, u in zip(call.argnums, xs, vs, us):
        namespace.update({f"x{i}_at": x, f"v{i}": v, f"u{i}": u})
        body.append(f"x{i} = ops.add(x{i}_at, ops.add(ops.multiply(s, v{i}), ops.multiply(t, u{i})))")
    for i, a in enumerate(call.args):
        if i not in call.argnums:
            namespace[f"x{i}"] = a
    arguments = ", ".join(f"x{i}" for i in range(len(call.args)))
    body.append(f"return ops.sum(ops.multiply(fn({arguments}), weights))")
    return written("along_directions", ["s", "t"], body, namespace)


def check_second(
    tallies: dict[str, Tally], calls: list[CheckedCall], installed: list[str], supported, seed: int
) -> None:
    """The Hessian of psi (along_directions) at second_call: the derivative of each exact
    backend's first derivative, taken by the preferred outer backend (abilities.outers) that
    supports the subject. One outer for all, so a wrong first-order rule fails only its own op:
    under reverse over reverse a wrong sin rule would fail cos too, whose VJP calls sin."""
    call = second_call(calls)
    outer = next((o for o in outers(installed) if not supported(o)), None)
    if call is None or outer is None:
        return
    psi = along_directions(call, np.random.default_rng([seed, 2]))
    point = (np.zeros(()), np.zeros(()))
    hessians: dict[str, Any] = {}
    for name in installed:
        if supported(name) or estimates(name) or patterns(name):
            continue
        try:
            # api.hessian(psi, inner=, outer=) with each column's options
            first = api.jacobian(psi, argnums=(0, 1), **api_options(name))
            rows = api.jacobian(first, argnums=(0, 1), **api_options(outer))(*point)
            hessians[name] = (_square([h for row in rows for h in row]),)
        except Exception as e:
            hessians[name] = e
    exact = {k: v for k, v in hessians.items() if not isinstance(v, Exception)}
    estimate = None
    if not _first_corroborated(exact):  # else choose_reference would not look at the estimate
        estimator = next((name for name in installed if estimates(name)), None)
        estimate = second_estimate(psi, point, estimator) if estimator is not None else None
    if estimate is not None:  # the four 0-d blocks as one 2 x 2 Hessian, like the exact backends'
        estimate = JacobianEstimate(
            (_square(estimate.jacobians),), (_square(estimate.errors),), estimate.backend
        )
    reference = choose_reference(exact, estimate)
    label = f"{call.label}, along random directions"
    for backend, tally in tallies.items():
        if not tally.open or estimates(backend) or patterns(backend) or reference is None:
            continue
        result = hessians.get(backend)
        if isinstance(result, DECLINED):
            # a rule of the derivative's derivative may be missing: said, but first order is what
            # the cell is about
            tally.decline(f"second derivatives at sample {label}", result)
            continue
        if isinstance(result, Exception):
            tally.error = f"second derivatives at sample {label}: {type(result).__name__}: {result}"
            continue
        for n, h in enumerate(result or ()):
            error = reference.error(n)
            compare(
                tally, label, "second", h, reference.jacobians[n], tolerances.SECOND, error, reference.source
            )


def _first_corroborated(exact: dict[str, tuple]) -> bool:
    """Whether the first of `exact` in reference order agrees with another: the reference then,
    whatever an estimate would say (the nested estimate is the costly part of the check)."""
    names = reference_order(exact)
    return any(agree(exact[names[0]], exact[other], tolerances.CONSENSUS) for other in names[1:])


def _square(blocks: Sequence[Any]) -> np.ndarray:
    """The 0-d blocks H[0][0], H[0][1], H[1][0], H[1][1] as a 2 x 2 float64 array."""
    return np.array([float(np.asarray(h, dtype=np.float64)) for h in blocks]).reshape(2, 2)


def second_estimate(weighted: Callable[..., Any], xs: tuple, estimator: str) -> JacobianEstimate | None:
    """d^2 weighted / dx_i dx_j by the estimating backend over itself (its best estimate both
    times; the inner one without its error, which the outer cannot take through): the blocks
    H[0][0], H[0][1], ... in a flat tuple."""
    nums = tuple(range(len(xs)))
    options = estimate_options(estimator)
    inner = {k: v for k, v in options.items() if k != "return_error"}
    jacobians, errors = [], []
    try:
        for i in nums:
            gradient = api.grad(weighted, argnums=i, **api_options(estimator), **inner)
            hs, es = api.jacobian(gradient, argnums=nums, **api_options(estimator), **options)(*xs)
            jacobians += list(hs)
            errors += list(es)
    except Exception:
        return None
    return JacobianEstimate(tuple(jacobians), tuple(errors), estimator)


# --- kinks ------------------------------------------------------------------------------------


def check_kink(tallies: dict[str, Tally], op: OpSpec, kink: Any, dtype: str) -> None:
    """The derivative at one of the op's kinks (docs/conventions.md), on the exact backends."""
    inputs = tuple(np.asarray(x, dtype=dtype) for x in kink.inputs)
    nums = tuple(range(len(inputs)))
    label = f"kink {kink.why}: {op.name}({', '.join(map(repr, kink.inputs))})"
    fn = split_function(
        op, (None,) * len(inputs), kink.params, complex_output=gives_complex(op, inputs, kink.params)
    )
    for backend, tally in tallies.items():
        if not tally.open or estimates(backend):
            continue
        try:
            if patterns(backend):
                check_kink_patterns(tally, backend, fn, inputs, kink.jacobians, label)
                continue
            jacs = api.jacobian(fn, argnums=nums, **api_options(backend))(*inputs)
        except DECLINED as e:
            tally.decline(label, e)
            continue
        except Exception as e:
            tally.error = f"{label}: {type(e).__name__}: {e}"
            continue
        for jac, expected in zip(jacs, kink.jacobians):
            compare(
                tally, label, "kink", jac, expected, tolerances.EXACT[dtype], source="docs/conventions.md"
            )
