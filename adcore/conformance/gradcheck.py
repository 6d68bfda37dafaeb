"""Gradient checks of one op on one sample: a backend's derivatives against finite differences of its impl."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import adcore
from adcore.backend import Backend
from adcore.spec import OpSpec, Sample

# Central differences err by ~h**2 (truncation) plus ~eps/h (rounding); h = eps**(1/3)
# balances the two, leaving ~eps**(2/3) ~ 4e-11 relative error in float64.
FD_STEP: float = float(np.finfo(np.float64).eps ** (1 / 3))

# (rtol, atol) by the dtype the derivative is computed in. A float64 derivative is exact
# up to rounding and the reference above is good to ~1e-10, so 1e-6 leaves four orders of
# margin yet catches any wrong rule. A float32 one carries float32 rounding (eps ~1.2e-7)
# times the op's conditioning: 1e-3 ("float32 loose" in DESIGN.md).
TOLERANCES: dict[np.dtype, tuple[float, float]] = {
    np.dtype(np.float64): (1e-6, 1e-6),
    np.dtype(np.float32): (1e-3, 1e-3),
}


@dataclass(frozen=True)
class CheckFailure:
    """One check that did not hold: which op, which input, which check, and by how much."""

    op: str
    argnum: int
    check: str  # "jacobian", "zero", "jvp", "dot_product", "dtype" or "error" (the backend raised)
    message: str

    def __str__(self) -> str:
        return f"op {self.op!r}, input {self.argnum}: {self.check}: {self.message}"


def numeric_jacobian(fn: Callable[[np.ndarray], Any], x: np.ndarray) -> np.ndarray:
    """d fn / d x by central differences in float64, shape fn(x).shape + x.shape.

    Each element gets its own step, eps**(1/3) * max(|x|, 1), so large inputs are not
    perturbed below their rounding; dividing by the step actually taken (xp - xm, which
    rounding makes differ from 2h) removes the representation error of x + h.
    """
    x = np.asarray(x, dtype=np.float64)
    out = np.asarray(fn(x), dtype=np.float64)
    jac = np.zeros(out.shape + x.shape)
    for index in np.ndindex(x.shape):
        h = FD_STEP * max(abs(x[index]), 1.0)
        xp, xm = x.copy(), x.copy()
        xp[index] += h
        xm[index] -= h
        jac[(Ellipsis, *index)] = (np.asarray(fn(xp)) - np.asarray(fn(xm))) / (xp[index] - xm[index])
    return jac


def check_vjp(
    op: OpSpec, sample: Sample, backend: str = "reverse", rtol: float | None = None, atol: float | None = None
) -> list[CheckFailure]:
    """Every way `backend` differentiates `op` at `sample` that disagrees with the impl.

    - jacobian: with every float input traced at once, d op / d input equals central
      differences of `op.impl` for a differentiable input, and is zero for the others
      (a non-differentiable input is a constant to every backend, DESIGN.md "Op").
    - dot_product: for each differentiable input alone, <u, J v> == <J^T u, v> with random
      u, v, J v by a central difference along v and J^T u from `adcore.vjp`. A Jacobian
      is built from one-hot cotangents; this feeds a dense one, so a rule that is wrong
      for general cotangents (not linear in g, or mis-broadcast) is caught as well.
    Tolerances default to TOLERANCES for the inputs' dtype. The random u, v are seeded,
    so a failure reproduces. A backend without its own `vjp` gets only the first check.
    """
    floats = [i for i, a in enumerate(sample.args) if _is_float(a)]
    if not floats:
        return []
    dtype = np.result_type(*(sample.args[i] for i in floats))
    rtol = TOLERANCES[dtype][0] if rtol is None else rtol
    atol = TOLERANCES[dtype][1] if atol is None else atol
    failures: list[CheckFailure] = []
    try:
        jacobian = adcore.jacobian(
            _with_inputs(op, sample, floats), argnums=tuple(range(len(floats))), backend=backend
        )
        jacs = jacobian(*(sample.args[i] for i in floats))
    except Exception as e:
        return [CheckFailure(op.name, floats[0], "error", f"jacobian raised {type(e).__name__}: {e}")]
    for i, jac in zip(floats, jacs):
        expected = numeric_jacobian(_impl64(op, sample, i), sample.args[i])
        what = "jacobian" if op.is_differentiable(i) else "zero"
        if what == "zero":
            expected = np.zeros_like(expected)
        problem = _mismatch(np.asarray(jac), expected, rtol, atol)
        if problem:
            failures.append(CheckFailure(op.name, i, what, problem))
    if type(adcore.get_backend(backend)).vjp is Backend.vjp:
        return failures
    rng = np.random.default_rng(0)
    for i in (i for i in floats if op.is_differentiable(i)):
        try:
            problem = _dot_product_mismatch(op, sample, i, backend, rng, rtol, atol)
        except Exception as e:
            problem = f"vjp raised {type(e).__name__}: {e}"
        if problem:
            failures.append(CheckFailure(op.name, i, "dot_product", problem))
    return failures


def check_jvp(
    op: OpSpec,
    sample: Sample,
    backend: str = "forward",
    against: str = "reverse",
    rtol: float | None = None,
    atol: float | None = None,
) -> list[CheckFailure]:
    """Every way `backend`'s JVP of `op` at `sample` disagrees, for each differentiable input alone.

    - jvp: J v from `adcore.jvp` with a random direction v equals the central difference
      of `op.impl` along v.
    - dot_product: <u, J v> from that JVP equals <J^T u, v> from the `against` backend's
      VJP: the forward rules and the reverse rules are two independent derivations.
    """
    floats = [i for i, a in enumerate(sample.args) if _is_float(a) and op.is_differentiable(i)]
    failures: list[CheckFailure] = []
    rng = np.random.default_rng(0)
    for i in floats:
        x = sample.args[i]
        rtol_i = TOLERANCES[x.dtype][0] if rtol is None else rtol
        atol_i = TOLERANCES[x.dtype][1] if atol is None else atol
        fn = _with_inputs(op, sample, [i])
        v = rng.uniform(-1, 1, x.shape).astype(x.dtype)
        try:
            out, jv = adcore.jvp(fn, (x,), (v,), backend=backend)
            _, vjp_fn = adcore.vjp(fn, x, backend=against)
        except Exception as e:
            failures.append(CheckFailure(op.name, i, "error", f"{type(e).__name__}: {e}"))
            continue
        jv = np.asarray(jv, dtype=np.float64)
        problem = _mismatch(jv, _difference_along(op, sample, i, v), rtol_i, atol_i)
        if problem:
            failures.append(CheckFailure(op.name, i, "jvp", problem))
            continue
        u = rng.uniform(-1, 1, np.shape(out)).astype(np.result_type(out))
        ct = vjp_fn(u)[0]
        problem = _adjoint_mismatch(u, jv, ct, v, rtol_i, atol_i, f"{backend} jvp", f"{against} vjp")
        if problem:
            failures.append(CheckFailure(op.name, i, "dot_product", problem))
    return failures


def check_dtype_kept(op: OpSpec, sample: Sample, backend: str = "reverse") -> list[CheckFailure]:
    """The op's value, its Jacobian, its JVP and (where the backend has one) its VJP keep
    each float input's dtype (float32 stays float32)."""
    has_vjp = type(adcore.get_backend(backend)).vjp is not Backend.vjp
    failures = []
    for i in (i for i, a in enumerate(sample.args) if _is_float(a) and op.is_differentiable(i)):
        x, fn = sample.args[i], _with_inputs(op, sample, [i])
        try:
            out, jv = adcore.jvp(fn, (x,), (np.ones_like(x),), backend=backend)
            got = {
                "value": np.result_type(out),
                "jacobian": np.result_type(adcore.jacobian(fn, backend=backend)(x)),
                "jvp": np.result_type(jv),
            }
            if has_vjp:
                _, vjp_fn = adcore.vjp(fn, x, backend=backend)
                got["vjp"] = np.result_type(vjp_fn(np.ones(np.shape(out), np.result_type(out)))[0])
        except Exception as e:
            failures.append(CheckFailure(op.name, i, "error", f"{type(e).__name__}: {e}"))
            continue
        wrong = {k: str(d) for k, d in got.items() if d != x.dtype}
        if wrong:
            failures.append(CheckFailure(op.name, i, "dtype", f"input is {x.dtype}, got {wrong}"))
    return failures


def _is_float(a: Any) -> bool:
    return isinstance(a, (np.ndarray, np.generic)) and a.dtype.kind == "f"


def _with_inputs(op: OpSpec, sample: Sample, argnums: list[int]) -> Callable[..., Any]:
    """The op as a function of the inputs at `argnums`, the other inputs and the params fixed."""

    def fn(*xs: Any) -> Any:
        args = list(sample.args)
        for i, x in zip(argnums, xs):
            args[i] = x
        return op(*args, **sample.params)

    return fn


def _impl64(op: OpSpec, sample: Sample, argnum: int) -> Callable[[np.ndarray], np.ndarray]:
    """op.impl as a function of input `argnum`, every float input in float64 (the FD reference)."""
    args = [a.astype(np.float64) if _is_float(a) else a for a in sample.args]

    def fn(x: np.ndarray) -> np.ndarray:
        args[argnum] = x
        return np.asarray(op.impl(*args, **sample.params), dtype=np.float64)

    return fn


def _dot_product_mismatch(op, sample, i, backend, rng, rtol, atol) -> str | None:
    x = sample.args[i]
    out, vjp_fn = adcore.vjp(_with_inputs(op, sample, [i]), x, backend=backend)
    u = rng.uniform(-1, 1, np.shape(out)).astype(np.result_type(out))
    v = rng.uniform(-1, 1, x.shape)
    ct = np.asarray(vjp_fn(u)[0])
    if ct.shape != x.shape:
        return f"vjp returned shape {ct.shape} for an input of shape {x.shape}"
    jv = _difference_along(op, sample, i, v)
    return _adjoint_mismatch(u, jv, ct, v, rtol, atol, "finite differences", "vjp")


def _difference_along(op: OpSpec, sample: Sample, i: int, v: np.ndarray) -> np.ndarray:
    """J v for input i by a central difference of the impl along v, in float64."""
    impl, x64 = _impl64(op, sample, i), sample.args[i].astype(np.float64)
    h = FD_STEP * max(np.max(np.abs(x64), initial=0.0), 1.0)
    return (impl(x64 + h * v) - impl(x64 - h * v)) / (2 * h)


def _adjoint_mismatch(u, jv, ct, v, rtol, atol, jv_from: str, ct_from: str) -> str | None:
    """Why <u, J v> differs from <J^T u, v>, or None."""
    jv, ct = np.asarray(jv, dtype=np.float64), np.asarray(ct, dtype=np.float64)
    lhs, rhs = np.sum(u * jv), np.sum(ct * v)
    # scale by the sizes of the terms summed, so cancellation in the sum is not a failure
    scale = np.sum(np.abs(u * jv)) + np.sum(np.abs(ct * v))
    if not abs(lhs - rhs) <= atol + rtol * scale:
        return f"<u, J v> = {lhs!r} ({jv_from}) but <J^T u, v> = {rhs!r} ({ct_from})"
    return None


def _mismatch(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> str | None:
    """Why `actual` is not `expected` within atol + rtol * |expected| elementwise, or None."""
    if actual.shape != expected.shape:
        return f"shape {actual.shape}, expected {expected.shape}"
    bad = ~(np.abs(actual - expected) <= atol + rtol * np.abs(expected))  # nan counts as bad
    if not bad.any():
        return None
    worst = np.unravel_index(np.argmax(np.where(bad, np.abs(actual - expected), -1)), bad.shape)
    return (
        f"{int(bad.sum())} of {bad.size} entries differ; worst at {tuple(map(int, worst))}: "
        f"got {actual[worst]!r}, expected {expected[worst]!r}"
    )
