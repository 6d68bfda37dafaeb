"""adcore_symbolic.trace: f run on Sym values. Comparisons build sympy booleans for where,
Python control flow on a traced value is refused with a clear error, shape queries work,
the size guard stops expression swell, constants get one symbol, and inputs an op
declares non-differentiable get no derivative."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from adcore_symbolic import ExpressionTooLargeError, SymbolicControlFlowError, derivative_expr
from adcore_symbolic.functions import stop_gradient
from traceable_ops import OPAQUE_SIN, SCALED_SIN, SOFTPLUS, TraceableOps, sigmoid

import adcore
import adcore.numpy as anp
from adcore.errors import TracerConversionError

POINTS = np.array([-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5])  # the conditions below flip at some of these


def _both(f, x, **kwargs):
    return (
        adcore.grad(f, backend="symbolic", **kwargs)(x),
        adcore.grad(f, backend="reverse", **kwargs)(x),
    )


CONDITIONS = {
    "<": lambda v: v < 0.5,
    "<=": lambda v: v <= 0.5,
    ">": lambda v: v > 0,
    ">=": lambda v: v >= 0,
    "==": lambda v: v == 1.0,
    "!=": lambda v: v != 1.0,
    "reflected <": lambda v: 0 < v,
    "np.greater": lambda v: np.greater(v, -0.5),
    "np.less_equal": lambda v: np.less_equal(v, -0.5),
    "np.logical_and": lambda v: np.logical_and(v > -1, v < 1),
    "np.logical_or": lambda v: np.logical_or(v < -1, v >= 1),
    "np.logical_not": lambda v: np.logical_not(v > 0),
    "&": lambda v: (v > -1) & (v <= 1),
    "|": lambda v: (v <= -1) | (v > 1),
    "~": lambda v: ~(v >= 0.5),
    "& python bool": lambda v: True & (v > 0),
    "& constant array": lambda v: (v > -1) & (np.arange(7) % 2 == 0),
    "between two traced values": lambda v: v**2 > v,
}


@pytest.mark.parametrize("where", [anp.where, np.where], ids=["adcore.numpy.where", "np.where"])
@pytest.mark.parametrize("name", CONDITIONS)
def test_comparisons_choose_where_branches_as_reverse_does(name, where):
    condition = CONDITIONS[name]

    def f(v):
        return anp.sum(where(condition(v), anp.sin(v) * v, v**3 - 2 * v))

    symbolic, reverse = _both(f, POINTS)
    np.testing.assert_allclose(symbolic, reverse, rtol=1e-14, atol=1e-15)


def test_a_comparison_is_a_sympy_boolean_in_the_expression():
    d = derivative_expr(lambda v: anp.where((v > 0) & (v != 1.0), v**2, -v), ())
    v = sp.Symbol("v", real=True)  # the symbol is named after f's parameter
    condition = (v > 0) & sp.Ne(v, 1.0)
    assert d.value == sp.Piecewise((v**2, condition), (-v, True))
    assert d.derivatives[0] == sp.Piecewise((2 * v, condition), (-1, True))


@pytest.mark.parametrize("x", [0.5, 1.0, np.nextafter(1.0, 2.0), 2.0])
def test_derivative_at_the_point_where_the_condition_flips(x):
    f = lambda v: anp.where(v > 1.0, v**3, 2 * v)  # noqa: E731
    symbolic, reverse = _both(f, x)
    assert symbolic == reverse == (3 * x**2 if x > 1.0 else 2.0)


@pytest.mark.parametrize(
    "condition",
    [
        lambda v: (np.arange(7) % 2 == 0) & (v > -1),
        lambda v: (np.arange(7) % 2 == 0) | (v > 1),
        lambda v: np.invert(v > 0),
    ],
    ids=["array & traced", "array | traced", "np.invert"],
)
def test_boolean_operators_with_a_plain_array_on_the_left(condition):
    f = lambda v: anp.sum(np.where(condition(v), v**2, -v))  # noqa: E731
    symbolic, reverse = _both(f, POINTS)
    np.testing.assert_allclose(symbolic, reverse)


# --- Python control flow on a traced value ------------------------------------------


def _if(v):
    if v > 0:
        return v
    return -v


CONTROL_FLOW = {
    "if": _if,
    "bool": lambda v: v * bool(v),
    "np.isfinite": lambda v: v * np.isfinite(v),
    "and": lambda v: (v > 0 and v < 1) * v,
    "while": lambda v: v if _loop_until_small(v) else v,
}


def _loop_until_small(v):
    while v > 1:
        v = v / 2
    return True


@pytest.mark.parametrize("name", CONTROL_FLOW)
def test_control_flow_on_a_traced_value_is_refused(name):
    with pytest.raises(SymbolicControlFlowError) as info:
        adcore.grad(CONTROL_FLOW[name], backend="symbolic")(1.5)
    error = info.value
    assert isinstance(error, TypeError) and isinstance(error, adcore.AdcoreError)
    message = str(error)
    for word in ["'symbolic'", "where", "another backend", "reverse"]:
        assert word in message, f"{word!r} not in {message!r}"
    # the trace is left clean: the next call with a proper f works
    assert adcore.grad(lambda v: anp.where(v > 0, v, -v) * v, backend="symbolic")(-1.5) == 3.0


CONVERSIONS = {
    "float": lambda v: float(v) * v,
    "int": lambda v: int(v) * v,
    "item": lambda v: v.item() * v,
}


@pytest.mark.parametrize("name", CONVERSIONS)
def test_a_number_taken_from_a_traced_value_is_refused_on_every_backend(name):
    # would cut v out of the derivative (issue 15, class 1): refused, as on the tape backends
    for backend in ("symbolic", "reverse"):
        with pytest.raises(TracerConversionError) as info:
            adcore.grad(CONVERSIONS[name], backend=backend)(1.5)
        assert isinstance(info.value, TypeError) and f"'{backend}'" in str(info.value)
    assert adcore.grad(lambda v: anp.where(v > 0, v, -v) * v, backend="symbolic")(-1.5) == 3.0


def test_control_flow_on_an_array_is_refused_too():
    with pytest.raises(SymbolicControlFlowError):
        adcore.grad(lambda v: anp.sum(v) if np.all(np.isfinite(v)) else 0.0, backend="symbolic")(POINTS)


# --- shape queries --------------------------------------------------------------------


@pytest.mark.parametrize("reduce", [anp.sum, lambda v: anp.sum(anp.matmul(v, v))], ids=["sum", "matmul"])
def test_shape_functions_answer_inside_f(reduce):
    seen = []

    def f(v):
        seen.append((np.shape(v), np.ndim(v), np.size(v), v.shape, v.ndim, v.size, v.dtype))
        zeros, ones = np.zeros_like(v), np.ones_like(v)
        assert isinstance(zeros, np.ndarray) and zeros.shape == v.shape and zeros.dtype == v.dtype
        return reduce((v + zeros) * ones) / np.size(v) + np.ndim(v)

    x = np.array([[1.0, -2.0], [0.5, 3.0]])
    symbolic, reverse = _both(f, x)
    np.testing.assert_allclose(symbolic, reverse, rtol=1e-15)
    assert set(seen) == {((2, 2), 2, 4, (2, 2), 2, 4, np.dtype(np.float64))}


# --- the size guard ---------------------------------------------------------------


def logistic(n):
    def iterate(x):
        for _ in range(n):
            x = 4 * x * (1 - x)
        return x

    return iterate


def _logistic_derivative(x, n):
    v, dv = x, 1.0
    for _ in range(n):
        v, dv = 4 * v * (1 - v), 4 * (1 - 2 * v) * dv
    return dv


def test_the_logistic_map_iterated_30_times_stops_at_a_small_guard():
    with pytest.raises(ExpressionTooLargeError) as info:
        adcore.grad(logistic(30), backend="symbolic", max_nodes=30)(0.3)
    error = info.value
    assert isinstance(error, adcore.AdcoreError)
    message = str(error)
    for word in ["max_nodes=30 ", "another backend", "reverse", "raise the guard"]:
        assert word in message, f"{word!r} not in {message!r}"
    # reverse has no such limit
    assert adcore.grad(logistic(30), backend="reverse")(0.3) == pytest.approx(_logistic_derivative(0.3, 30))


def test_the_work_is_linear_in_the_number_of_traced_ops():
    # the 30th iterate's tree has about 2^30 nodes; its program a few dozen per level
    work = {n: derivative_expr(logistic(n), ()).work for n in (30, 60)}
    assert work[60] <= 2.05 * work[30] and work[30] <= 50 * 30, work
    g = adcore.grad(logistic(30), backend="symbolic", max_nodes=50 * 30)(0.3)
    assert g == pytest.approx(_logistic_derivative(0.3, 30), rel=1e-12)
    assert adcore.grad(logistic(30), backend="symbolic")(0.3) == g  # the default guard lets it through


def test_a_tiny_max_nodes_stops_a_small_function():
    f = lambda v: anp.sin(v) * anp.exp(v) + v**2  # noqa: E731
    assert adcore.grad(f, backend="symbolic")(0.5) == pytest.approx(
        np.cos(0.5) * np.exp(0.5) + np.sin(0.5) * np.exp(0.5) + 1.0, rel=1e-15
    )
    with pytest.raises(ExpressionTooLargeError, match="max_nodes=4 "):
        adcore.grad(lambda v: anp.sin(v) * anp.exp(v) + v**2, backend="symbolic", max_nodes=4)(0.5)
    with pytest.raises(ExpressionTooLargeError, match="max_nodes=4 "):
        derivative_expr(f, (), max_nodes=4)


def test_raising_max_nodes_lets_a_larger_function_through():
    f = logistic(12)
    with pytest.raises(ExpressionTooLargeError, match="max_nodes=40 "):
        adcore.grad(f, backend="symbolic", max_nodes=40)(0.3)
    g = adcore.grad(f, backend="symbolic", max_nodes=50 * 12)(0.3)
    assert g == pytest.approx(_logistic_derivative(0.3, 12), rel=1e-12)


def test_a_full_trace_counts_its_symbols_against_the_guard():
    f = lambda v: anp.sum(anp.matmul(v, v))  # noqa: E731  (not elementwise: one symbol per element)
    with pytest.raises(ExpressionTooLargeError, match="16 of them, over max_nodes=10"):
        adcore.grad(f, backend="symbolic", max_nodes=10)(np.ones((4, 4)))


# --- constants ----------------------------------------------------------------------


def test_a_constant_array_used_twice_is_one_symbol():
    c = np.array([1.0, -2.0, 3.0])
    f = lambda v: anp.sum(v * c + c * v**2 - anp.sin(c * v))  # noqa: E731
    d = derivative_expr(f, (3,))
    assert d.elementwise
    ((symbol, array),) = d.constants
    assert array is c or np.array_equal(array, c)
    x = sp.Symbol("v", real=True)
    assert sp.simplify(d.derivatives[0] - sp.diff(symbol * x + symbol * x**2 - sp.sin(symbol * x), x)) == 0
    v = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(
        adcore.grad(f, backend="symbolic")(v), c + 2 * c * v - c * np.cos(c * v), rtol=1e-15
    )


def test_two_equal_constant_arrays_are_two_symbols():
    c = np.array([1.0, -2.0, 3.0])
    d = derivative_expr(lambda v: anp.sum(v * c + v * c.copy()), (3,))
    assert len(d.constants) == 2


def test_a_boolean_constant_array_is_a_where_condition():
    mask = np.array([True, False, True, False])
    f = lambda v: anp.sum(anp.where(mask, v**2, 3 * v))  # noqa: E731
    d = derivative_expr(f, (4,))
    assert d.elementwise and len(d.constants) == 1
    v = np.array([0.5, -1.0, 2.0, 4.0])
    symbolic, reverse = _both(f, v)
    np.testing.assert_array_equal(symbolic, reverse)
    np.testing.assert_array_equal(symbolic, np.where(mask, 2 * v, 3.0))


# --- inputs without a derivative ------------------------------------------------------


def test_an_unused_branch_with_an_infinite_derivative_gives_zero_not_nan():
    # the chain rule keeps the where's branches, so the unused branch's derivative (1/v at
    # v = 0) is never multiplied by 0; reverse masks it too (docs/conventions.md, issue 15 class 13)
    f = lambda v: anp.sum(anp.where(v > 0, anp.log(v), 0.0))  # noqa: E731
    with np.errstate(divide="ignore", invalid="ignore"):
        symbolic, reverse = _both(f, np.array([0.0, 2.0]))
    np.testing.assert_array_equal(symbolic, [0.0, 0.5])
    np.testing.assert_array_equal(reverse, symbolic)


@pytest.mark.parametrize(
    "c, v",
    [
        (np.array(0.0), np.array(0.5)),
        (np.array(-2.0), np.array(0.5)),
        (np.array([0.0, 1.0, -2.0, 0.0]), np.array([0.5, -1.0, 2.0, 4.0])),
    ],
    ids=["scalar false", "scalar true", "elementwise"],
)
def test_a_float_where_condition_gets_no_derivative(c, v):
    def f(c, v):
        return anp.sum(anp.where(c, v**2, 3 * v))

    d = derivative_expr(f, c.shape, v.shape, argnums=(0, 1))
    assert d.derivatives[0] == 0
    dc, dv = adcore.grad(f, argnums=(0, 1), backend="symbolic")(c, v)
    rc, rv = adcore.grad(f, argnums=(0, 1), backend="reverse")(c, v)
    np.testing.assert_array_equal(dc, np.zeros(c.shape))
    np.testing.assert_array_equal(dc, rc)
    np.testing.assert_array_equal(dv, rv)
    np.testing.assert_array_equal(dv, np.where(c != 0, 2 * v, 3.0))


def test_a_float_where_condition_in_a_full_trace_gets_no_derivative():
    def f(c, v):
        return anp.sum(anp.matmul(anp.where(c, v, -v), v))

    c = np.array([[0.0, 1.0], [2.0, 0.0]])
    v = np.array([[0.5, -1.0], [2.0, 4.0]])
    symbolic = adcore.grad(f, argnums=(0, 1), backend="symbolic")(c, v)
    reverse = adcore.grad(f, argnums=(0, 1), backend="reverse")(c, v)
    np.testing.assert_array_equal(symbolic[0], np.zeros((2, 2)))
    np.testing.assert_allclose(symbolic[1], reverse[1], rtol=1e-15)


@pytest.mark.parametrize("shape", [(), (3,)], ids=["scalar", "elementwise"])
def test_stop_gradient_inside_f_gets_no_derivative(shape):
    f = lambda v: anp.sum(adcore.ops.stop_gradient(v) * v + adcore.ops.stop_gradient(v**2))  # noqa: E731
    v = np.array([0.5, -1.0, 2.0])[: 3 if shape else 1].reshape(shape)
    symbolic, reverse = _both(f, v)
    np.testing.assert_array_equal(symbolic, v)  # not 2v + 2v: only the unstopped factor counts
    np.testing.assert_array_equal(symbolic, reverse)
    (d,) = derivative_expr(f, shape).derivatives
    assert d.has(stop_gradient)  # the derivative's value is v, but it carries no derivative itself
    while d.has(stop_gradient):
        d = d.replace(stop_gradient, lambda u: u)
    assert d == sp.Symbol("v", real=True)


# --- modes --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "f, elementwise",
    [
        (lambda v: anp.sum(v**2) * anp.mean(anp.sin(v)), True),  # a function of two sums
        (lambda v: anp.sum(anp.sum(v) * v), False),  # a sum combined with an array
        (lambda v: anp.sum(v[::-1] * v), False),  # indexing
        (lambda v: anp.max(v) + anp.sum(v), False),  # a reduction other than sum/mean
    ],
    ids=["two sums", "sum times array", "indexing", "max"],
)
def test_elementwise_mode_or_full_trace_agree_with_reverse(f, elementwise):
    assert derivative_expr(f, (4,)).elementwise is elementwise
    v = np.array([0.5, -1.0, 2.0, 1.25])
    symbolic, reverse = _both(f, v)
    np.testing.assert_allclose(symbolic, reverse, rtol=1e-14)


def test_a_value_traced_by_an_outer_transformation_must_be_an_argument():
    def outer(y):
        return adcore.grad(lambda x: x * y, backend="symbolic")(1.0)

    with pytest.raises(NotImplementedError, match="pass it to f as an argument"):
        adcore.grad(outer, backend="reverse")(2.0)
    # passed as an argument, it works
    assert adcore.grad(lambda y: adcore.grad(lambda x, y: x * x * y, backend="symbolic")(1.5, y))(2.0) == 3.0


def test_a_closed_over_outer_value_is_a_typed_error_on_either_outer_backend():
    # a nested optimiser (GradBench's saddle) closes over the outer point: refused as an AdcoreError
    def outer(y):
        return adcore.grad(lambda x: x * y, backend="symbolic")(1.0)

    for backend in ("reverse", "forward"):
        with pytest.raises(adcore.UnsupportedByBackendError, match="pass it to f as an argument"):
            adcore.grad(outer, backend=backend)(2.0)


# --- traceable ops (OpSpec.traceable): with no sympy rule, the body is traced op by op -------


def test_a_traceable_op_without_a_sympy_rule_is_differentiated_through_its_body(register_plugin):
    register_plugin(TraceableOps(), "traceable_ops")
    x = np.array([-30.0, -1.0, 0.0, 2.5])
    g = adcore.grad(lambda x: SOFTPLUS(x).sum(), backend="symbolic")(x)
    np.testing.assert_allclose(g, sigmoid(x), rtol=1e-14)  # d softplus / dx is the sigmoid
    gx, gy = adcore.grad(SCALED_SIN, argnums=(0, 1), backend="symbolic")(1.5, 0.4)
    assert (gx, gy) == (pytest.approx(np.sin(0.4)), pytest.approx(1.5 * np.cos(0.4)))  # the body's


def test_an_op_neither_traceable_nor_with_a_sympy_rule_is_refused_and_the_next_call_works(register_plugin):
    register_plugin(TraceableOps(), "traceable_ops")
    with pytest.raises(
        adcore.MissingRuleError, match=r"'opaque_sin' has no 'sympy' rule.*backends that can: numeric"
    ):
        adcore.grad(OPAQUE_SIN, backend="symbolic")(0.3)
    assert adcore.grad(SOFTPLUS, backend="symbolic")(0.3) == pytest.approx(sigmoid(0.3), rel=1e-14)
