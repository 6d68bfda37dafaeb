"""adcore_source.forward: the emitted `f_jvp`, exec'd, against adcore.jvp(backend="forward") and
central finite differences, construct by construct; and the shape of the emitted code (zero
tangents not materialised, comments before each line of f)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from adcore_source import generate

import adcore


def jvp_of(fn: Any, active: tuple = (0,)) -> tuple[Any, str]:
    """fn's generated jvp (called jvp(*args, *tangents)) and the module's text."""
    generated = generate.forward_function(fn, active)
    source = generate.derivative_source(fn, mode="forward", argnums=active)

    def jvp(*args: Any) -> Any:
        n = len(args) - len(active)
        return generated(args[:n], args[n:], {})

    return jvp, source


def numeric(fn: Any, args: tuple, tangents: tuple, eps: float = 1e-6) -> Any:
    plus = fn(*[a + eps * t for a, t in zip(args, tangents)])
    minus = fn(*[a - eps * t for a, t in zip(args, tangents)])
    return (np.asarray(plus) - np.asarray(minus)) / (2 * eps)


def check(fn: Any, *args: Any, active: tuple = (0,), seed: int = 0) -> tuple[Any, Any, str]:
    """f_jvp's value is f's, bit for bit; its tangent the forward backend's and the numeric one.
    Returns (out, dout, the generated source)."""
    rng = np.random.default_rng(seed)
    tangents = tuple(
        np.asarray(rng.standard_normal(np.shape(args[i]))).astype(np.result_type(args[i])) for i in active
    )
    jvp, source = jvp_of(fn, active)
    out, dout = jvp(*[_copy(a) for a in args], *tangents)
    np.testing.assert_array_equal(out, fn(*[_copy(a) for a in args]))

    def of_active(*xs: Any) -> Any:
        full = [_copy(a) for a in args]
        for i, x in zip(active, xs):
            full[i] = x
        return fn(*full)

    primals = tuple(_copy(args[i]) for i in active)
    _, reference = adcore.jvp(of_active, primals, tangents, backend="forward")
    np.testing.assert_allclose(dout, reference, rtol=1e-10, atol=1e-12)
    estimate = numeric(of_active, tuple(np.asarray(p, np.float64) for p in primals), tangents)
    rtol = 1e-5 if np.result_type(*primals) == np.float64 else 1e-2
    np.testing.assert_allclose(np.asarray(dout, np.float64), estimate, rtol=rtol, atol=rtol)
    return out, dout, source


def _copy(a: Any) -> Any:
    return np.copy(a) if isinstance(a, np.ndarray) else list(a) if isinstance(a, list) else a


X = np.array([0.3, -1.2, 0.8, 2.1])


# --- straight line ---------------------------------------------------------------------------


def straight(x, a):
    sin_x = np.sin(x)
    y = sin_x * a
    z = y + x
    return z


def test_straight_line_code_with_the_templates():
    _, _, source = check(straight, X, 1.7, active=(0, 1))
    assert "dsin_x = dx * cos(x)" in source.replace("cos_", "cos")


def test_an_inactive_argument_has_no_tangent_and_zero_tangents_are_not_materialised():
    _, _, source = check(straight, X, 1.7, active=(1,))
    assert "dsin_x" not in source  # sin(x) of an inactive x: no tangent statement at all
    assert "def straight_jvp(x, a, da):" in source


def constant(x):
    y = 2.0
    z = y * 3.0
    return z


def test_a_returned_zero_tangent_is_zeros_of_the_outputs_shape_and_dtype():
    jvp, source = jvp_of(constant)
    out, dout = jvp(np.float32(1.0), np.float32(1.0))
    assert out == 6.0 and dout == 0.0 and np.shape(dout) == ()
    assert source.count("zero_tangent(") == 1


# --- if / else -------------------------------------------------------------------------------


def branches(x, a):
    positive = a > 0
    if positive:
        y = np.sin(x)
    else:
        y = 1.0
    z = y * a
    return z


@pytest.mark.parametrize("a", [1.5, -0.5])
def test_if_else_on_a_value_materialises_the_zero_branch(a):
    _, _, source = check(branches, X, a)
    assert "dy = zero_tangent(y)" in source


# --- loops -------------------------------------------------------------------------------------


def recurrence(x, a, n):
    for _ in range(n):
        sin_x = np.sin(x)
        sin_x_times_a = sin_x * a
        x = sin_x_times_a + x
    return x


@pytest.mark.parametrize("n", [0, 1, 5])
def test_for_loop_with_a_data_dependent_trip_count(n):
    check(recurrence, 0.7, 0.9, n, active=(0, 1))
    check(recurrence, 0.7, 0.9, n, active=(1,))


def halving(x):
    big = x > 0.1
    while big:
        x = x * 0.5
        y = np.exp(-x)  # x shrinks every trip: the loop ends for every x
        x = x * y
        big = x > 0.1
    return x


@pytest.mark.parametrize("x", [0.05, 3.0, 40.0])
def test_while_loop_on_a_value(x):
    check(halving, x)


def loop_carried_from_zero(x, n):
    acc = 0.0
    for _ in range(n):
        acc_times_x = acc * x
        sin_x = np.sin(x)
        acc = acc_times_x + sin_x
    return acc


def test_a_loop_carried_value_with_zero_tangent_on_entry_is_materialised_before_the_loop():
    _, _, source = check(loop_carried_from_zero, 0.4, 4)
    loop = source.index("for _ in range_n")
    assert source.index("dacc = zero_tangent(acc)") < loop
    check(loop_carried_from_zero, 0.4, 0)
