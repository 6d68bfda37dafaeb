"""The source backend's construct tests' oracles: a derivative by `backend="source"`, in reverse and
forward mode, against the reverse tape and against the numeric backend within the error it claims.

Where the tape refuses f (an in-place write, a list of traced values made an array), the check says
so by asserting the refusal and compares with the numeric oracle alone. Every call gets fresh copies
of the arguments, and after each source call the caller's arrays are checked unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

import adcore
from adcore.errors import AdcoreError

MODES = ("reverse", "forward")
ORDERS = ("first", "second")  # a construct's gradient, and a second derivative with the source backend inside
DTYPES = (np.float64, np.float32)
# source vs tape: the same rules, sums possibly in another order
TAPE_RTOL = {np.dtype(np.float64): 1e-10, np.dtype(np.float32): 2e-4}


def cast(dtype: Any, *args: Any) -> tuple:
    """Each float argument (number or array) in `dtype`; anything else as it is."""
    return tuple(
        np.asarray(a, dtype)[()] if isinstance(a, float | np.floating | np.ndarray) else a for a in args
    )


def fresh(args: Sequence[Any]) -> tuple:
    return tuple(a.copy() if isinstance(a, np.ndarray | np.generic) else a for a in args)


def as_tuple(d: Any, argnums: int | tuple) -> tuple:
    return d if isinstance(argnums, tuple) else (d,)


def tape_refuses(f: Callable, args: Sequence[Any], argnums: int | tuple = 0) -> None:
    """The reverse tape cannot take f (it raises a typed error): the reason the source backend is
    checked against the numeric oracle alone."""
    with pytest.raises(AdcoreError):
        adcore.grad(f, argnums)(*fresh(args))


def assert_within_estimate(got: Any, estimate: Any, what: str) -> None:
    """`got` agrees with the numeric estimate within its claimed error (plus got's own rounding)."""
    derivative, error = estimate
    got, derivative, error = np.asarray(got), np.asarray(derivative), np.asarray(error)
    slack = 16 * np.finfo(got.dtype).eps * (1 + np.abs(derivative))
    gap = np.abs(got.astype(np.float64) - derivative)
    assert np.all(gap <= error + slack), (
        f"{what}: {got} differs from the numeric {derivative} by {gap} > {error}"
    )


def assert_tape_close(got: Any, want: Any, what: str) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, what
    rtol = TAPE_RTOL[got.dtype] if got.dtype in TAPE_RTOL else 1e-10
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, err_msg=what)


def assert_unchanged(before: Sequence[Any], after: Sequence[Any], what: str) -> None:
    for b, a in zip(before, after, strict=True):
        if isinstance(b, np.ndarray):
            assert np.array_equal(a, b), f"{what} wrote into the caller's argument: {b} became {a}"


def check_gradient(f: Callable, *args: Any, mode: str, argnums: int | tuple = 0, tape: bool = True) -> tuple:
    """grad f by the source backend in `mode`: f's value exactly as f computes it, each gradient in
    its argument's dtype and shape, equal to the tape's (or the tape refuses, when `tape` is False)
    and to the numeric backend's within its error. Returns the gradients (a tuple)."""
    value = f(*fresh(args))
    estimate = adcore.grad(f, argnums, backend="numeric", method="richardson", return_error=True)(
        *fresh(args)
    )
    estimates = list(
        zip(as_tuple(estimate.derivative, argnums), as_tuple(estimate.error, argnums), strict=True)
    )
    if tape:
        wants = as_tuple(adcore.grad(f, argnums)(*fresh(args)), argnums)
    else:
        tape_refuses(f, args, argnums)
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    what = f"{f.__name__} ({mode} mode)"
    given = fresh(args)
    got_value, g = adcore.value_and_grad(f, argnums, backend="source", mode=mode)(*given)
    assert_unchanged(args, given, what)
    assert np.asarray(got_value).dtype == np.asarray(value).dtype, what
    assert np.array_equal(got_value, value), f"{what}: value {got_value!r}, f computes {value!r}"
    gs = as_tuple(g, argnums)
    for k, (i, gi) in enumerate(zip(nums, gs, strict=True)):
        arg = np.asarray(args[i])
        assert np.asarray(gi).dtype == arg.dtype, f"{what}: gradient {gi!r} for a {arg.dtype} argument"
        assert np.shape(gi) == arg.shape, what
        if tape:
            assert_tape_close(gi, wants[k], f"{what} vs the tape, argument {i}")
        assert_within_estimate(gi, estimates[k], f"{what} vs numeric, argument {i}")
    return gs


def second_derivative(f: Callable, mode: str, argnums: int, tape: bool) -> tuple[str, Callable]:
    """A second derivative with the source backend in `mode` inside: over the generated reverse
    sweep, forward mode (hessian's default outer); over the generated tangent code, the tape's
    reverse. Where the tape refuses f, the source backend over itself (the generated code
    transformed again)."""
    source_grad = adcore.grad(f, argnums, backend="source", mode=mode)
    if mode == "reverse":
        if tape:
            return "forward over source reverse", adcore.hessian(f, argnums, inner="source")
        return "source reverse over source reverse", adcore.hessian(f, argnums, backend="source")
    if tape:
        return "reverse over source forward", adcore.jacobian(source_grad, argnums=argnums)
    return "source forward over source forward", adcore.jacobian(
        source_grad, argnums=argnums, backend="source", mode="forward"
    )


def check_second_derivative(f: Callable, *args: Any, mode: str, argnums: int = 0, tape: bool = True) -> None:
    """d2 f / d args[argnums]^2 with the source backend inside (`second_derivative`), against the
    tape's Hessian (when it takes f) and the numeric Jacobian of a gradient (the tape's, else the
    source's: checked against the numeric oracle by check_gradient)."""
    first = adcore.grad(f, argnums) if tape else adcore.grad(f, argnums, backend="source", mode=mode)
    estimate = adcore.jacobian(
        first, argnums=argnums, backend="numeric", method="richardson", return_error=True
    )(*fresh(args))
    what, second = second_derivative(f, mode, argnums, tape)
    what = f"{f.__name__}: {what}"
    h = second(*fresh(args))
    assert np.shape(h) == np.shape(estimate.derivative), (
        f"{what}: shape {np.shape(h)}, a Hessian's is {np.shape(estimate.derivative)}"
    )
    assert np.asarray(h).dtype == np.asarray(args[argnums]).dtype, what
    if tape:
        assert_tape_close(h, adcore.hessian(f, argnums)(*fresh(args)), f"{what} vs the tape's hessian")
    assert_within_estimate(h, estimate, f"{what} vs numeric")
