"""The symbolic backend: its cache, its option, its errors, nesting with other backends, and
that `import adcore` does not import sympy."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from adcore_symbolic import ExpressionTooLargeError, SymbolicControlFlowError

import adcore
import adcore.numpy as anp
from adcore.core import _stack

X = np.array([0.5, -1.25, 2.0])


def derivations() -> int:
    """How many times the symbolic backend has traced and compiled a derivative so far."""
    return adcore.api.get_backend("symbolic").derivations


# --- the cache (what invalidates it: tests/plugins/symbolic/test_recording.py) ------------------


def test_the_second_call_only_evaluates():
    g = adcore.grad(lambda x: anp.sum(anp.sin(x) * x), backend="symbolic")
    np.testing.assert_allclose(g(X), np.cos(X) * X + np.sin(X), rtol=1e-15)
    before = derivations()
    np.testing.assert_allclose(g(2 * X), np.cos(2 * X) * 2 * X + np.sin(2 * X), rtol=1e-15)
    assert derivations() == before  # new values, same shapes and dtypes: no new derivation


@pytest.mark.parametrize(
    "other",
    [np.ones(4), np.ones((3, 1)), X.astype(np.float32)],
    ids=["length", "shape", "dtype"],
)
def test_a_new_shape_or_dtype_traces_again(other):
    g = adcore.grad(lambda x: anp.sum(x**3), backend="symbolic")
    g(X)
    before = derivations()
    np.testing.assert_allclose(g(other), 3 * other**2, rtol=1e-6)
    assert derivations() == before + 1


def test_static_arguments_are_part_of_the_key():
    d = adcore.grad(lambda x, n: x**n, argnums=0, backend="symbolic")
    assert (d(2.0, 3), d(2.0, 2)) == (12.0, 4.0)  # a cached x**3 must not answer for x**2
    before = derivations()
    assert (d(3.0, 3), d(3.0, 2)) == (27.0, 6.0) and derivations() == before  # both stay cached


def test_the_cache_keeps_a_bounded_number_of_derivatives_per_function():
    from adcore_symbolic.backend import ENTRIES_PER_FUNCTION

    f = lambda x, n: x**n  # noqa: E731
    d = adcore.grad(f, argnums=0, backend="symbolic")
    for n in range(ENTRIES_PER_FUNCTION + 6):
        assert d(1.0, n) == n  # d x^n / dx at 1 = n
    before = derivations()
    newest = ENTRIES_PER_FUNCTION + 5
    assert d(1.0, newest) == newest and derivations() == before  # the newest are kept
    assert d(1.0, 0) == 0 and derivations() == before + 1  # the oldest was dropped


def test_an_argument_outside_argnums_is_a_symbol_so_the_cache_stays_right():
    d = adcore.grad(lambda x, y: anp.sum(x * y), argnums=0, backend="symbolic")
    np.testing.assert_array_equal(d(X, X), X)
    before = derivations()
    np.testing.assert_array_equal(d(X, 2 * X), 2 * X)
    assert derivations() == before


# --- the option and the errors ---------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -5, 2.5, "10"])
def test_max_nodes_must_be_a_positive_int(bad):
    with pytest.raises(adcore.InvalidInputError, match="max_nodes"):
        adcore.grad(lambda x: x * x, backend="symbolic", max_nodes=bad)(1.0)


def test_an_unknown_option_names_the_one_there_is():
    with pytest.raises(adcore.InvalidInputError, match="max_nodes"):
        adcore.grad(lambda x: x * x, backend="symbolic", max_node=10)


def test_control_flow_on_a_traced_value_is_a_clear_error_and_leaves_nothing_behind():
    def f(x):
        return x if x > 0 else -x

    with pytest.raises(SymbolicControlFlowError) as info:
        adcore.grad(f, backend="symbolic")(1.5)
    message = str(info.value)
    assert "symbolic" in message and "where" in message and "reverse" in message
    assert isinstance(info.value, TypeError) and isinstance(info.value, adcore.AdcoreError)
    assert _stack() == []
    assert adcore.grad(lambda x: anp.where(x > 0, x, -x), backend="symbolic")(1.5) == 1.0
    assert adcore.grad(f, backend="reverse")(1.5) == 1.0  # as the message says


def test_the_size_guard_on_symbols_names_the_op_that_needed_them():
    x = np.ones(300)
    with pytest.raises(ExpressionTooLargeError) as info:
        adcore.grad(lambda v: anp.sum(v[1:] * v[:-1]), backend="symbolic", max_nodes=100)(x)
    message = str(info.value)
    for word in ["max_nodes=100", "300", "getitem", "reverse"]:
        assert word in message, word
    assert adcore.grad(lambda v: anp.sum(v[1:] * v[:-1]), backend="symbolic", max_nodes=10_000)(x).shape == (
        300,
    )


def test_the_size_guard_on_nodes_stops_a_large_trace():
    a = np.random.default_rng(0).uniform(-1, 1, (30, 30))
    with pytest.raises(ExpressionTooLargeError, match="at op 'matmul'"):
        adcore.grad(lambda v: anp.sum(a @ v @ a), backend="symbolic", max_nodes=2000)(np.ones((30, 30)))
    assert _stack() == []


def test_the_size_guard_on_the_jacobian_stops_before_differentiating():
    a = np.ones((30, 30))  # every entry of a @ v the same few expressions: few nodes, many entries
    with pytest.raises(ExpressionTooLargeError, match="900 x 900 entries"):
        adcore.jacobian(lambda v: a @ v, backend="symbolic")(np.ones((30, 30)))


def test_a_function_returning_a_non_array_is_refused():
    with pytest.raises(adcore.InvalidOutputError, match="symbolic"):
        adcore.grad(lambda x: "x", backend="symbolic")(1.0)  # a list of arrays is a pytree output


def test_a_bool_output_is_refused_and_the_next_call_works():
    with pytest.raises(adcore.InvalidOutputError, match="bool"):
        adcore.jacobian(lambda x: x > 0, backend="symbolic")(1.0)
    assert _stack() == []
    assert adcore.jacobian(lambda x: anp.where(x > 0, x, 0.0), backend="symbolic")(1.0) == 1.0


def test_a_list_argument_is_an_array():
    np.testing.assert_array_equal(
        adcore.grad(lambda x: x[0] * x[1], backend="symbolic")([1.0, 2.0]), [2.0, 1.0]
    )


def test_grad_needs_a_scalar_output():
    with pytest.raises(adcore.NonScalarOutputError):
        adcore.grad(lambda x: x * 2, backend="symbolic")(X)


def test_closing_over_another_transformations_value_is_a_clear_error():
    def outer(y):
        return adcore.grad(lambda x: anp.sum(x * y), backend="symbolic")(X)

    with pytest.raises(NotImplementedError, match="pass it to f as an argument"):
        adcore.jacobian(outer, backend="reverse")(X)
    assert _stack() == []


# --- nesting ---------------------------------------------------------------------------------


def rosenbrock(x):
    return anp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


@pytest.mark.parametrize(
    "inner, outer",
    [("symbolic", "symbolic"), ("symbolic", "forward"), ("symbolic", "reverse"), ("reverse", "symbolic")],
)
def test_hessians_nest_with_every_backend(inner, outer):
    x = np.array([1.5, -0.5, 2.0, 0.25])
    h = adcore.hessian(rosenbrock, inner=inner, outer=outer)(x)
    np.testing.assert_allclose(h, adcore.hessian(rosenbrock)(x), rtol=1e-14)


def test_jvp_through_the_jacobian():
    out, t = adcore.jvp(lambda x: anp.sin(x) * x, (X,), (np.ones(3),), backend="symbolic")
    np.testing.assert_allclose(t, np.cos(X) * X + np.sin(X), rtol=1e-15)
    np.testing.assert_allclose(out, np.sin(X) * X, rtol=1e-15)


# --- import cost -----------------------------------------------------------------------------


def test_import_adcore_does_not_import_sympy():
    script = (
        "import sys, adcore\n"
        "assert 'symbolic' in adcore.backends()\n"  # the plugin and its rules are registered
        "adcore.grad(lambda x: x * x, backend='reverse')(1.0)\n"
        "assert 'sympy' not in sys.modules, 'sympy imported before use'\n"
        "assert adcore.grad(lambda x: x * x, backend='symbolic')(3.0) == 6.0\n"
        "assert 'sympy' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)


def test_sign_of_an_expression_sympy_cannot_tell_is_real_has_derivative_zero():
    # found by the fuzzer: sympy has no derivative of sign(acos(x)); the convention is sign' = 0
    f = lambda x: adcore.ops.sign(adcore.ops.arccos(x)) * x  # noqa: E731
    x = np.array([0.82, -0.3])
    np.testing.assert_array_equal(adcore.jacobian(f, backend="symbolic")(x), np.diag(np.sign(np.arccos(x))))


def test_a_sum_over_one_argument_ignores_another_that_does_not_broadcast_with_it():
    # found by the fuzzer: x0's zero derivative was broadcast against x1's (2,) and failed
    f = lambda x0, x1: adcore.ops.sum(x1 * x1)  # noqa: E731
    g0, g1 = adcore.jacobian(f, argnums=(0, 1), backend="symbolic")(np.ones(3), np.array([1.0, -2.0]))
    np.testing.assert_array_equal(g0, np.zeros(3))
    np.testing.assert_array_equal(g1, [2.0, -4.0])
