"""adcore_source.forward: the emitted `f_jvp`, exec'd, against adcore.jvp(backend="forward") and
central finite differences, construct by construct; and the shape of the emitted code (zero
tangents not materialised, comments before each line of f)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest
from adcore_source import generate

import adcore
import adcore.numpy as anp


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


def check(fn: Any, *args: Any, active: tuple = (0,), seed: int = 0, twin: Any = None) -> tuple[Any, Any, str]:
    """f_jvp's value is f's, bit for bit; its tangent the forward backend's (of `twin`, f written
    without what the dual numbers refuse: in-place writes, np.array of values) and the numeric one.
    Returns (out, dout, the generated source)."""
    rng = np.random.default_rng(seed)
    tangents = tuple(
        np.asarray(rng.standard_normal(np.shape(args[i]))).astype(np.result_type(args[i])) for i in active
    )
    jvp, source = jvp_of(fn, active)
    out, dout = jvp(*[_copy(a) for a in args], *tangents)
    np.testing.assert_array_equal(out, fn(*[_copy(a) for a in args]))

    def of_active(*xs: Any, fn: Any = fn) -> Any:
        full = [_copy(a) for a in args]
        for i, x in zip(active, xs):
            full[i] = x
        return fn(*full)

    primals = tuple(_copy(args[i]) for i in active)
    _, reference = adcore.jvp(
        functools.partial(of_active, fn=twin or fn), primals, tangents, backend="forward"
    )
    single = np.result_type(*primals) == np.float32
    np.testing.assert_allclose(
        dout, reference, rtol=1e-5 if single else 1e-10, atol=1e-6 if single else 1e-12
    )
    estimate = numeric(of_active, tuple(np.asarray(p, np.float64) for p in primals), tangents)
    rtol = 1e-2 if single else 1e-5
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


# --- break, continue, early return -------------------------------------------------------------


def until_large(x, limit):
    total = 0.0
    for i in range(10):
        if total > limit:
            break
        if i % 3 == 1:
            continue
        total = total + np.sin(x * i) + x
    return total


@pytest.mark.parametrize("limit", [-1.0, 0.5, 3.0, 100.0])
def test_break_and_continue(limit):
    check(until_large, 0.7, limit)


def early(x, a):
    if a > 0:
        return np.sin(x) * a
    y = np.cos(x)
    for i in range(3):
        if y > 0.9:
            return y * i
        y = y * x
    return y


@pytest.mark.parametrize("a,x", [(1.0, 0.3), (-1.0, 0.3), (-1.0, 0.1), (-1.0, 2.5)])
def test_early_returns(a, x):
    check(early, x, a, active=(0, 1))


# --- subscripts and in-place writes ------------------------------------------------------------


def cumulative(x):
    out = np.zeros(len(x))
    out[0] = x[0]
    for i in range(1, len(x)):
        out[i] = out[i - 1] * 0.5 + np.sin(x[i])
    return out


def cumulative_twin(x):
    out = [x[0]]
    for i in range(1, len(x)):
        out.append(out[i - 1] * 0.5 + np.sin(x[i]))
    return anp.stack(out)


def test_in_place_writes_into_a_constant_array():
    _, _, source = check(cumulative, X, twin=cumulative_twin)
    assert "dout = zero_tangent(out)" in source  # materialised at the first write of a tangent
    assert "dout[" in source


def scaled_in_place(x, a):
    x[1:3] = x[1:3] * a
    x[0] += a
    return x * x


def scaled_twin(x, a):
    x = anp.concatenate([x[:1] + a, x[1:3] * a, x[3:]])
    return x * x


def test_in_place_writes_into_a_parameter_leave_the_callers_arrays_alone():
    x, t = X.copy(), np.ones(4)
    jvp, _ = jvp_of(scaled_in_place, (0, 1))
    jvp(x, 2.0, t, 1.0)
    np.testing.assert_array_equal(x, X)
    np.testing.assert_array_equal(t, np.ones(4))
    check(scaled_in_place, X, 2.0, active=(0, 1), twin=scaled_twin)
    check(scaled_in_place, X, 2.0, active=(1,), twin=scaled_twin)


def overwrite_with_constant(x):
    y = x * 2.0
    y[0] = 5.0
    return y


def overwrite_twin(x):
    y = x * 2.0
    return anp.concatenate([anp.array([5.0]), y[1:]])


def test_writing_a_constant_zeroes_that_part_of_the_tangent():
    _, dout, _ = check(overwrite_with_constant, X, twin=overwrite_twin)
    assert dout[0] == 0.0


# --- lists, tuples, dicts ----------------------------------------------------------------------


def from_list(x, a):
    parts = []
    for i in range(3):
        parts.append(np.sin(x * i) * a)
    parts.append(2.0)
    return np.array(parts) * np.array([a, x, 1.0, a])


def from_list_twin(x, a):
    parts = [np.sin(x * i) * a for i in range(3)] + [2.0]
    return anp.array(parts) * anp.array([a, x, 1.0, a])


def test_a_list_of_active_values_becomes_an_array():
    check(from_list, 0.4, 1.3, active=(0, 1), twin=from_list_twin)
    check(from_list, 0.4, 1.3, active=(1,), twin=from_list_twin)


def containers(x, a):
    pair = (x, a)
    table = {"x": x * a, "k": 3.0}
    first, second = pair
    return table["x"] + first * second + table["k"]


def test_tuples_and_dicts_carry_tangent_containers():
    _, _, source = check(containers, 0.4, 1.3, active=(0,))
    assert "zero_tangent(a)" in source  # the inactive entry of the tuple with an active one


# --- calls ---------------------------------------------------------------------------------------


def inner(u, v):
    return np.tanh(u) * v


def outer(x, a):
    y = inner(x, a)
    z = inner(a, x) + inner(a, 2.0)
    return y + z


def test_user_callees_get_their_own_jvp():
    _, _, source = check(outer, 0.4, 1.3, active=(0,))
    assert "def inner_jvp" in source
    check(outer, 0.4, 1.3, active=(0, 1))


def methods_and_ops(x, w):
    s = x.sum(axis=1)
    m = x @ w
    n = np.linalg.norm(x)
    return s * m + n + x.T[0]


def test_methods_of_values_and_tier_two_ops():
    x, w = np.arange(6.0).reshape(3, 2) / 7, np.array([0.5, -1.5])
    _, _, source = check(methods_and_ops, x, w, active=(0, 1))
    assert "call_jvp(" in source
    check(methods_and_ops, x, w, active=(1,))


def nested(x, a):
    def scaled(u):
        return np.sin(u) * a

    return scaled(x) + scaled(a)


def test_nested_functions_lifted():
    check(nested, 0.4, 1.3, active=(0, 1))
    check(nested, 0.4, 1.3, active=(0,))


# --- dtypes ------------------------------------------------------------------------------------


def test_float32_stays_float32():
    x = X.astype(np.float32)
    out, dout, _ = check(straight, x, np.float32(1.5), active=(0, 1))
    assert out.dtype == np.float32 and dout.dtype == np.float32
    out, dout, _ = check(cumulative, x, twin=cumulative_twin)
    assert dout.dtype == out.dtype


def eigenvalue_energy(a):
    m = np.outer(a, a) + np.diag(a)
    e = np.linalg.eigh(m)
    return np.sum(e.eigenvalues * e.eigenvalues)


def test_a_field_of_a_named_tuple_output_carries_its_tangent():
    check(eigenvalue_energy, np.array([1.0, 0.4, 2.0]))


def shifted(u, shift=0.5, scale=2.0):
    return np.sin(u) * scale + shift


def keywords_and_defaults(x, a):
    return shifted(x, scale=a) + shifted(a)


def test_a_user_callee_with_keywords_and_defaults_gets_its_parameters_in_place():
    _, _, source = check(keywords_and_defaults, 0.4, 1.3, active=(0, 1))
    assert "def shifted_jvp" in source and "call_jvp" not in source


def test_a_comment_names_each_line_of_f_before_its_statements():
    _, source = jvp_of(straight, (0, 1))
    lines = [line.strip() for line in source.splitlines()]
    for text in ("sin_x = np.sin(x)", "y = sin_x * a", "z = y + x", "return z"):
        comment = next(
            k for k, line in enumerate(lines) if line.startswith("# test_forward.py:") and line.endswith(text)
        )
        assert not lines[comment + 1].startswith("#")  # the statements of that line follow


def table_write(x):
    table = {"a": 0.0, "b": 1.0}
    table["a"] = np.sin(x)
    return table["a"] * table["b"]


def test_a_write_into_a_dict_writes_its_tangent_dict():
    check(table_write, 0.6)


def rounded_into_integers(x):
    counts = np.zeros(3, dtype=int)
    counts[0] = x * 10.0
    return counts * 1.0 + x


def test_a_value_written_into_an_integer_array_carries_no_tangent():
    jvp, _ = jvp_of(rounded_into_integers)
    out, dout = jvp(0.37, 1.0)
    np.testing.assert_array_equal(out, rounded_into_integers(0.37))
    np.testing.assert_array_equal(dout, [1.0, 1.0, 1.0])  # d/dx of round(10x) + x is 1
