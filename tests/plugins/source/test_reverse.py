"""adcore_source.reverse: the emitted `f_fwd` / `f_bwd`, exec'd (through generate.reverse_functions),
against the reverse tape and the numeric backend, construct by construct, float64 and float32 (the
in-place and list cases the tape refuses against numeric alone); and the shape of the emitted code
(what is pushed, known-zero adjoints not added into, comments before each line of f)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from adcore_source import generate
from source_checks import assert_tape_close, assert_within_estimate, tape_refuses

import adcore

DTYPES = (np.float64, np.float32)
X = np.array([0.4, -1.1, 0.9, 0.25])


def adjoints(f: Any, *args: Any, argnums: tuple = (0,), seed: Any = 1.0) -> tuple:
    """(f's value, the adjoints of args[argnums]) from the emitted forward and adjoint sweeps."""
    fwd, bwd = generate.reverse_functions(f, argnums)
    out, saved = fwd(*args)
    return out, tuple(bwd(saved, seed))


def check(f: Any, *args: Any, argnums: tuple = (0,), tape: bool = True) -> tuple:
    """The emitted sweeps give f's value exactly and, per active argument, an adjoint of its dtype
    and shape equal to the tape's (or the tape refuses f) and to numeric's within its error."""
    value = f(*[np.copy(a) for a in args])
    out, got = adjoints(f, *[np.copy(a) for a in args], argnums=argnums)
    assert np.array_equal(out, value) and np.asarray(out).dtype == np.asarray(value).dtype
    estimate = adcore.grad(f, argnums, backend="numeric", method="richardson", return_error=True)(*args)
    if tape:
        want = adcore.grad(f, argnums)(*[np.copy(a) for a in args])
    else:
        tape_refuses(f, args, argnums)
    for k, i in enumerate(argnums):
        assert np.asarray(got[k]).dtype == np.asarray(args[i]).dtype, f"argument {i}: {got[k]!r}"
        assert np.shape(got[k]) == np.shape(args[i])
        if tape:
            assert_tape_close(got[k], want[k], f"{f.__name__} vs the tape, argument {i}")
        estimated = (estimate.derivative[k], estimate.error[k])
        assert_within_estimate(got[k], estimated, f"{f.__name__} vs numeric, argument {i}")
    return got


def source(f: Any, argnums: tuple = (0,)) -> str:
    return generate.derivative_source(f, mode="reverse", argnums=argnums)


def bwd_text(f: Any, argnums: tuple = (0,)) -> str:
    text = source(f, argnums)
    return text[text.index(f"def {f.__name__}_bwd") :]


def fwd_text(f: Any, argnums: tuple = (0,)) -> str:
    text = source(f, argnums)
    return text[text.index(f"def {f.__name__}_fwd") : text.index(f"def {f.__name__}_bwd")]


def cast(dtype: Any, *args: Any) -> tuple:
    return tuple(np.asarray(a, dtype) for a in args)


# --- straight-line code ---------------------------------------------------------------------------


def broadcast_chain(x, a):
    y = np.sin(x) * a + x / (1.0 + a * a)
    z = np.exp(-y) - np.tanh(x * y)
    return np.sum(z * z) + a


@pytest.mark.parametrize("dtype", DTYPES)
def test_straight_line_code_with_broadcasting(dtype):
    check(broadcast_chain, *cast(dtype, X, 0.7), argnums=(0, 1))


def chain(x):
    y = np.sin(x)
    return y * 3.0


def test_a_first_contribution_assigns_the_adjoint():
    text = bwd_text(chain)
    assert "bx = " in text and "bx = bx +" not in text and "add_adjoint" not in text
    assert "# test_reverse.py:" in text and "y = np.sin(x)" in text  # the comment naming f's line


def unused_intermediate(x, w):
    scale = np.cos(w)  # w is not differentiated: no adjoint code for it
    return np.sum(np.sin(x) * scale)


def test_no_adjoint_code_for_inactive_values():
    text = bwd_text(unused_intermediate)
    assert "bw =" not in text and "bscale" not in text
    check(unused_intermediate, X, 0.3)


# --- control flow --------------------------------------------------------------------------------


def recurrence(x, a, b):
    for _ in range(6):
        x = np.sin(x) * a + x * b
    return x


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_loop_carried_recurrence(dtype):
    check(recurrence, *cast(dtype, 0.3, 1.2, 0.5), argnums=(0, 1, 2))


def test_only_overwritten_values_the_adjoint_reads_are_pushed():
    text = fwd_text(recurrence, (0, 1, 2))
    assert "x_stack.append(x)" in text
    assert "trips = 0" in text  # the trip count kept for the adjoint loop
    assert "i_stack" not in text and "__stack" not in text  # the target is read by no adjoint


def target_reused(x):
    i = 1
    y = x[i] * 2.0  # the adjoint reads i = 1 here ...
    for i in range(3):  # noqa: B007 (the loop's effect is to change i)
        pass  # no adjoint in the loop
    return y * x[i]  # ... and i = 2 here


def test_a_loop_target_read_before_the_loop_is_restored():
    check(target_reused, X)


def carried(x, a):
    cur = x
    total = 0.0
    for k in range(4):
        prev = cur  # cur of the trip before: pushed before it is overwritten
        cur = np.sin(prev * a) + k  # prev, cur, t: values of this trip, pushed at its end
        if cur > 2.0:
            t = cur * prev
        else:
            t = cur - prev
        total = total + t * t
    return total + cur


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a", [0.9, -2.5])
def test_values_carried_between_trips_and_values_of_one_trip(dtype, a):
    check(carried, *cast(dtype, 0.4, a), argnums=(0, 1))


def branchy(x, a):
    s = np.sum(x * a)
    if s > 0:
        y = np.log(s) * x
    elif s < -1.0:
        y = s * s
    else:
        y = -x * a
    return np.sum(y)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a", [0.8, -2.0, -0.1])
def test_if_elif_else_on_values(dtype, a):
    check(branchy, *cast(dtype, X, a), argnums=(0, 1))


def flag_reassigned(x):
    big = np.sum(x) > 0
    for _ in range(3):
        if big:
            x = x * 0.5
            big = np.sum(x) > 0.3  # the branch changes its own flag
        else:
            x = x + np.sin(x)
    return np.sum(x * x)


@pytest.mark.parametrize("dtype", DTYPES)
def test_an_if_whose_branch_rewrites_its_flag(dtype):
    (x,) = cast(dtype, np.abs(X) + 0.2)
    check(flag_reassigned, x)


def newton_sqrt(x):
    y = x
    while np.abs(y * y - x) > 1e-6:
        y = 0.5 * (y + x / y)
    return y


@pytest.mark.parametrize("x", [2.0, 30.0])
def test_while_with_a_data_dependent_trip_count(x):
    check(newton_sqrt, np.float64(x))


def first_above(x, a):
    total = 0.0
    for i in range(len(x)):
        total = total + np.sin(x[i] * a)
        if total > 0.5:
            break
    return total * a


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a", [2.0, 0.3])
def test_break(dtype, a):
    check(first_above, *cast(dtype, np.abs(X), a), argnums=(0, 1))


def over_rows(x, w):
    h = np.zeros(w.shape[1], dtype=x.dtype)
    for row in x:  # the target's adjoint goes to x's row of that trip
        h = np.tanh(row @ w + h)
    return np.sum(h)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_for_loop_over_an_active_array(dtype):
    x, w = cast(
        dtype, np.arange(8.0).reshape(4, 2) / 10 - 0.3, np.array([[0.5, -0.3, 0.2], [0.1, 0.4, -0.6]])
    )
    check(over_rows, x, w, argnums=(0, 1))


def early_exit(x):
    if np.sum(x) > 10.0:
        return np.sum(x)
    for i in range(len(x)):
        if x[i] < -1.0:
            return x[i] * x[i]
    return np.sum(np.cos(x))


@pytest.mark.parametrize("x", [X, X + 5.0, X * 0.5])
def test_early_return(x):
    check(early_exit, x)


# --- in-place writes, lists, containers ------------------------------------------------------------


def smoothing(x, a):
    s = np.zeros_like(x)
    s[0] = x[0]
    for t in range(1, len(x)):
        s[t] = a * x[t] + (1.0 - a) * s[t - 1]  # s[t - 1] is read before it is overwritten? no: kept
    s[1] = s[1] * s[2]  # overwrites a value the adjoint of the loop reads
    return np.sum(s * s)


@pytest.mark.parametrize("dtype", DTYPES)
def test_in_place_writes_overwriting_values_the_adjoint_reads(dtype):
    check(smoothing, *cast(dtype, X, 0.35), argnums=(0, 1), tape=False)


def test_the_overwritten_item_is_pushed_as_a_copy():
    text = fwd_text(smoothing, (0, 1))
    assert "s_items.append(snapshot(s[1]))" in text


def in_place_parameter(x):
    x[0] = x[0] * x[1]
    x[1:3] = np.sin(x[1:3])
    return np.sum(x**2)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_parameter_written_in_place_and_the_callers_array_unchanged(dtype):
    (x,) = cast(dtype, X)
    before = x.copy()
    check(in_place_parameter, x, tape=False)
    adjoints(in_place_parameter, x)
    assert np.array_equal(x, before)


def written_after_an_op(x, w):
    s = np.zeros_like(x)
    s[0] = x[0]
    y = np.sum(np.outer(s, x) @ w)  # the op's pullback keeps s ...
    s[0] = 3.0  # ... which is written next
    s[1] = x[1] * x[2]
    return y + np.sum(s * x)


@pytest.mark.parametrize("dtype", DTYPES)
def test_an_array_written_after_an_op_read_it(dtype):
    check(written_after_an_op, *cast(dtype, X, np.ones((4, 2)) * 0.3), argnums=(0, 1), tape=False)


def test_the_sweeps_of_an_in_place_function_run_under_an_outer_derivative():
    # forward over the source backend's reverse: the writes take traced values (set_at)
    v = np.array([0.3, -0.2, 0.5, 1.0])
    got = adcore.hvp(in_place_parameter, inner="source")(X.copy(), v)
    first = adcore.grad(in_place_parameter, backend="source")
    estimate = adcore.jacobian(first, backend="numeric", method="richardson", return_error=True)(X.copy())
    assert_within_estimate(got, (estimate.derivative @ v, np.abs(estimate.error) @ np.abs(v)), "hvp")


def appended(x, a):
    values = []
    for i in range(len(x)):
        values.append(np.sin(x[i]) * a)
        values.append(x[i] * x[i])
    return np.sum(np.array(values) * np.arange(len(values)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_list_of_active_values_made_an_array(dtype):
    check(appended, *cast(dtype, X, 0.6), argnums=(0, 1), tape=False)


def concatenated(x, a):
    firsts = [np.sin(v) * a for v in x]
    squares = [v * v for v in x[:2]]
    total = 0.0
    for k, t in enumerate(firsts + squares + [a]):
        total = total + t * (k + 1)
    return total


@pytest.mark.parametrize("dtype", DTYPES)
def test_lists_concatenated(dtype):
    check(concatenated, *cast(dtype, X, 0.6), argnums=(0, 1))


def containers(p, x):
    pair = (p["w"] * x, p["b"])
    table = {"first": pair[0], "second": np.cos(pair[1])}
    return np.sum(table["first"] * table["second"])


def test_dicts_and_tuples_with_a_pytree_parameter():
    p = {"w": np.array([0.3, -0.2, 0.5, 0.1]), "b": np.float64(0.4), "unused": np.ones(2)}
    _, (bp,) = adjoints(containers, p, X)
    want = adcore.grad(containers)(p, X)
    assert set(bp) == {"w", "b", "unused"}
    assert_tape_close(bp["w"], want["w"], "w")
    assert_tape_close(bp["b"], want["b"], "b")
    assert np.array_equal(bp["unused"], np.zeros(2)) and bp["unused"].dtype == np.float64


# --- calls ------------------------------------------------------------------------------------------


def polar(r, t):
    return r * np.cos(t), r * np.sin(t)


def user_calls(x, a):
    u, v = polar(x, a)
    return np.sum(u * v + polar(v, u)[0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_user_callees_with_a_tuple_result(dtype):
    check(user_calls, *cast(dtype, X, 0.4), argnums=(0, 1))
    assert "polar_fwd(" in fwd_text(user_calls, (0, 1)) and "polar_bwd(" in bwd_text(user_calls, (0, 1))


def power_sum(x, n):
    if n == 0:
        return np.sum(x * 0.0)
    return np.sum(x**n) + power_sum(x, n - 1)


def test_recursion():
    check(power_sum, X, 3)


def methods_and_dynamic(x):
    m = x.reshape(2, 2)
    f = np.sin if m.sum() > 0 else np.cos
    return f(m.sum(axis=0)).max() + m.T[0, 1]


@pytest.mark.parametrize("x", [X, -X])
def test_methods_and_a_dynamic_callee(x):
    check(methods_and_dynamic, x)


def guarded_log(x):
    return np.sum(np.where(x > 0, np.log(x), 0.0))


def test_structural_zeros_of_where_keep_the_gradient_finite():
    x = np.array([0.0, 0.5, -1.0, 2.0])
    _, (got,) = adjoints(guarded_log, x)
    want = adcore.grad(guarded_log)(x)
    assert np.all(np.isfinite(got))
    np.testing.assert_array_equal(got, want)


def guarded_log_of_a_slice(u):
    x = np.sqrt(u)
    v = x[1:]
    return np.sum(np.where(v > 0, np.log(v), 0.0))


def test_structural_zeros_move_through_a_subscript():
    # where's zeros reach u through x[1:] (and x[0], which nothing reads): sqrt's 0.5 / x there is inf
    u = np.array([1.0, 0.0, 2.0, 0.0])
    _, (got,) = adjoints(guarded_log_of_a_slice, u)
    np.testing.assert_array_equal(got, adcore.grad(guarded_log_of_a_slice)(u))
    assert np.all(np.isfinite(got))


def masked_copy(x):
    y = np.sin(x)
    z = y  # a copy whose adjoint carries where's structural zeros, added to y's
    r = np.where(z > 0, np.log(z), 0.0)
    return np.sum(r) + np.sum(y * 2.0)


def test_an_adjoint_with_structural_zeros_added_to_another():
    x = np.array([0.0, 0.5, -1.0, 2.0])
    _, (got,) = adjoints(masked_copy, x)
    np.testing.assert_allclose(got, adcore.grad(masked_copy)(x), rtol=1e-12)


# --- the saved state --------------------------------------------------------------------------------


def keeps_its_input(x, w):
    y = w @ x
    return np.sum(np.sin(y) * x)


def test_the_saved_state_is_independent_of_the_callers_arrays():
    x, w = X.copy(), np.arange(16.0).reshape(4, 4) / 10
    fwd, bwd = generate.reverse_functions(keeps_its_input, (0, 1))
    _, saved = fwd(x, w)
    want = adcore.grad(keeps_its_input, (0, 1))(x.copy(), w.copy())
    x[:] = 7.0  # the caller reuses its arrays before the adjoint sweep
    w[:] = -3.0
    got = bwd(saved, 1.0)
    assert_tape_close(got[0], want[0], "x")
    assert_tape_close(got[1], want[1], "w")


# --- a statement reading its own target twice -------------------------------------------------------


def squares_itself(x):
    x = x * x
    return np.sum(x)


def hypot_of_itself(x):
    x = np.hypot(x, x)
    return np.sum(x)


@pytest.mark.parametrize("f", [squares_itself, hypot_of_itself])
@pytest.mark.parametrize("x", [np.float64(3.0), X])
def test_each_input_of_y_eq_op_y_y_takes_ys_adjoint_from_before_the_statement(f, x):
    # the first contribution assigned bx and the second read that: 12 for 6 at x = 3
    check(f, x)
    text = bwd_text(f)
    assert "bx_out = bx" in text, text


def test_x_times_x_at_3_is_6():
    assert adjoints(squares_itself, np.float64(3.0))[1] == (6.0,)


def test_a_real_inputs_complex_cotangent_under_an_outer_forward_is_its_real_part():
    """A real input joined into a complex value (x + y * 1j) gets Re of its cotangent, also when an
    outer forward level traces the adjoint (astype of a complex Dual refused before)."""

    def f(x, y):
        z = x + y * 1j
        return np.sum(np.real(np.sin(z) * np.conj(z)))

    x, y = np.array([0.3, -0.5]), np.array([0.7, 0.2])
    hessians = {}
    for backend in ("reverse", "source"):
        inner = adcore.grad(f, argnums=(0, 1), backend=backend)
        hessians[backend] = adcore.jacobian(
            lambda a, b, inner=inner: inner(a, b)[1], argnums=(0, 1), backend="forward"
        )(x, y)
    for got, expected in zip(hessians["source"], hessians["reverse"]):
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-13)
