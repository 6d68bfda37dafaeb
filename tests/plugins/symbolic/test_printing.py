"""adcore_symbolic.printing: compile_numpy's code matches NumPy, keeps every bit of a float
literal, calls only functions adcore has ops for, and runs on other backends' traced values."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from adcore_symbolic.printing import AdcoreNumPyPrinter, compile_numpy

import adcore
import adcore.numpy as anp

x, y, z = sp.symbols("x y z", real=True)
t0, t1 = sp.symbols("t0 t1", real=True)
rng = np.random.default_rng(0)
A, B, C = rng.uniform(-2, 2, (3, 7))


def test_returns_a_callable_and_its_source():
    fn, source = compile_numpy([x, y], [(t0, sp.sin(x) * y), (t1, t0 + sp.exp(y))], [t1 * x, t0 - 1])
    assert callable(fn)
    assert source.startswith("def ") and "(x, y):" in source
    assert "t0 = " in source and "t1 = " in source and "return " in source
    assert source.index("t0 = ") < source.index("t1 = ")  # definitions in the given order
    got = fn(A, B)
    assert isinstance(got, list) and len(got) == 2
    t = np.sin(A) * B
    np.testing.assert_allclose(got[0], (t + np.exp(B)) * A, rtol=1e-15)
    np.testing.assert_allclose(got[1], t - 1, rtol=1e-15)


def test_elementary_functions_match_numpy():
    exprs = [
        sp.log(x**2 + 1) / (y**2 + 1),
        sp.atan2(y, x) + sp.tanh(z) * sp.cosh(x),
        sp.sqrt(x**2 + y**2) - sp.Abs(z) * sp.sign(x),
        sp.Abs(x) ** sp.Abs(y) * sp.asin(sp.tanh(z)) + 1 / (x**2 + 1) ** sp.Rational(3, 2),
    ]
    fn, _ = compile_numpy([x, y, z], [], exprs)
    want = [
        np.log(A**2 + 1) / (B**2 + 1),
        np.arctan2(B, A) + np.tanh(C) * np.cosh(A),
        np.hypot(A, B) - np.abs(C) * np.sign(A),
        np.abs(A) ** np.abs(B) * np.arcsin(np.tanh(C)) + 1 / (A**2 + 1) ** 1.5,
    ]
    for got, w in zip(fn(A, B, C), want):
        np.testing.assert_allclose(got, w, rtol=1e-13, atol=1e-15)


def test_float_literals_keep_every_bit():
    fn, source = compile_numpy([x], [], [sp.Float(0.1 + 0.2) * x, sp.Float(1 / 3) + x])
    third, tenths = fn(1.0)[1], fn(1.0)[0]
    assert tenths == 0.30000000000000004  # sympy's printer writes 0.300000000000000
    assert third == 1 / 3 + 1.0
    assert "0.30000000000000004" in source


def test_piecewise_compiles_to_nested_where():
    pw = sp.Piecewise((x, x < -1), (x**2, x < 1), (2 * x + y, True))
    fn, source = compile_numpy([x, y], [], [pw])
    assert "numpy.where" in source and "select" not in source
    v = np.array([-2.0, -1.0, 0.5, 1.0, 3.0])
    np.testing.assert_array_equal(fn(v, 0.25)[0], np.where(v < -1, v, np.where(v < 1, v**2, 2 * v + 0.25)))


def test_piecewise_without_a_default_is_nan_where_no_condition_holds():
    fn, _ = compile_numpy([x], [], [sp.Piecewise((x, x < 0), (x**2, x < 1))])
    np.testing.assert_array_equal(fn(np.array([-2.0, 0.5, 3.0]))[0], [-2.0, 0.25, np.nan])


def test_heaviside_has_no_numpy_heaviside_and_is_one_half_at_zero():
    v = np.array([-2.0, 0.0, 3.0])
    fn, source = compile_numpy([x], [], [sp.Heaviside(x), sp.Heaviside(x, 0), sp.Heaviside(x, 1)])
    assert "heaviside" not in source
    half, zero, one = fn(v)
    np.testing.assert_array_equal(half, np.heaviside(v, 0.5))
    np.testing.assert_array_equal(zero, np.heaviside(v, 0.0))
    np.testing.assert_array_equal(one, np.heaviside(v, 1.0))
    assert half[1] == 0.5 and zero[1] == 0.0


def test_max_and_min_of_three_compile_to_nested_maximum_and_minimum():
    fn, source = compile_numpy([x, y, z], [], [sp.Max(x, y, z), sp.Min(x, y, z), sp.Max(x, 0.5 * y)])
    assert "amax" not in source and "amin" not in source
    assert source.count("numpy.maximum(") >= 3 and source.count("numpy.minimum(") == 2
    big, small, two = fn(A, B, C)
    np.testing.assert_array_equal(big, np.max([A, B, C], axis=0))
    np.testing.assert_array_equal(small, np.min([A, B, C], axis=0))
    np.testing.assert_array_equal(two, np.maximum(A, 0.5 * B))


def test_element_symbols_compute_the_right_values():
    elements = [sp.Symbol(f"x[{i}, {j}]", real=True) for i in range(2) for j in range(2)]
    fn, _ = compile_numpy(elements, [], [elements[0] * elements[3] - elements[1] * elements[2]])
    assert fn(1.0, 2.0, 3.0, 4.0) == [-2.0]


def test_element_symbols_are_the_parameter_names_in_the_source():
    elements = [sp.Symbol("x[0, 0]", real=True), sp.Symbol("x[0, 1]", real=True)]
    t = sp.Symbol("t0", real=True)
    fn, source = compile_numpy(elements, [(t, elements[0] * elements[1])], [t + elements[1]])
    assert "(x_0_0, x_0_1):" in source and "Dummy" not in source
    assert "t0 = x_0_0*x_0_1" in source
    assert fn(2.0, 3.0) == [9.0]


def test_an_element_name_does_not_clash_with_an_input_of_that_name():
    element, other = sp.Symbol("x[0]", real=True), sp.Symbol("x_0", real=True)
    fn, _ = compile_numpy([element, other], [], [element - other])
    assert fn(1.0, 3.0) == [-2.0]


def test_an_input_named_like_a_module_does_not_shadow_it():
    numpy_symbol = sp.Symbol("numpy", real=True)
    fn, _ = compile_numpy([numpy_symbol], [], [sp.sin(numpy_symbol)])
    assert fn(0.5) == [np.sin(0.5)]


def _analytic(v):
    """d/dx of sin(x) x + Piecewise((x^2, x < 0), (3x, x < 1), (e^x, True)) + Max(x, x/2, -x)."""
    branch = np.where(v < 0, 2 * v, np.where(v < 1, 3.0, np.exp(v)))
    biggest = np.where(v > 0, 1.0, -1.0)  # max(x, x/2, -x) is x for x > 0, -x for x < 0
    return np.sin(v) + v * np.cos(v) + branch + biggest


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_the_compiled_code_runs_on_another_backends_traced_values(backend):
    expr = (
        sp.sin(x) * x + sp.Piecewise((x**2, x < 0), (3 * x, x < 1), (sp.exp(x), True)) + sp.Max(x, x / 2, -x)
    )
    fn, _ = compile_numpy([x], [], [expr])
    v = np.array([-1.5, -0.5, 0.25, 0.75, 1.5, 2.0])
    g = adcore.grad(lambda u: anp.sum(fn(u)[0]), backend=backend)(v)
    np.testing.assert_allclose(g, _analytic(v), rtol=1e-14)


def test_the_compiled_heaviside_differentiates_as_zero_on_a_traced_value():
    fn, _ = compile_numpy([x], [], [sp.Heaviside(x) * x**2])
    v = np.array([-1.0, 0.5, 2.0])
    g = adcore.grad(lambda u: anp.sum(fn(u)[0]), backend="reverse")(v)
    np.testing.assert_allclose(g, np.heaviside(v, 0.5) * 2 * v, rtol=1e-15)


def test_and_or_print_as_binary_calls_so_a_traced_hessian_runs_through_them():
    # clip's derivative is where(x < a_min | x > a_max, 0, 1); logical_or.reduce((c0, c1)) would
    # turn the traced conditions of the outer pass into one array and fail
    x, y = sp.symbols("x y")
    code = AdcoreNumPyPrinter().doprint(sp.Or(x > 1, y < 0, x > y) & (y > -1))
    assert "reduce" not in code and code.count("logical_or(") == 2 and "logical_and(" in code
    clipped = lambda v: anp.sum(anp.clip(v, -1.0, 1.0) * np.array([2.0, 3.0, 4.0]))  # noqa: E731
    for point in (np.array([-2.0, 0.5, 1.0]), np.array([-1.0, 0.0, 3.0])):
        h = adcore.hessian(clipped, backend="symbolic")(point)
        np.testing.assert_array_equal(h, np.zeros((3, 3)))


def test_complex_infinity_in_an_unused_branch_prints_as_nan():
    # found by the fuzzer: log(relu(x)) differentiates to a Piecewise with 1/0 where x <= 0
    assert AdcoreNumPyPrinter().doprint(sp.zoo) == "numpy.nan"
    f = lambda v: anp.log(anp.relu(v))  # noqa: E731
    x = np.array([0.82, 2.0])
    np.testing.assert_allclose(adcore.jacobian(f, backend="symbolic")(x), np.diag(1 / x), rtol=1e-15)


def test_a_printer_prints_a_repeated_node_once_and_equal_valued_numbers_apart():
    printer = AdcoreNumPyPrinter()
    shared = sp.sin(x) * y
    calls = []
    original = printer._print_Mul
    printer._fast[sp.Mul] = lambda e: calls.append(e) or original(e)
    first, second = printer.doprint(shared + 1), printer.doprint(shared - z)
    assert first == "1 + y*numpy.sin(x)" and second == "y*numpy.sin(x) - z"
    assert calls.count(shared) == 1  # printed for the first expression, reused for the second
    # numbers equal in value but not in kind print apart: an int 1 is not a float 1.0
    assert printer.doprint(sp.Integer(1)) == "1" and printer.doprint(sp.Float(1.0)) == "1.0"
    assert printer.doprint(sp.Float(2.0)) == "2.0" and printer.doprint(sp.Integer(2)) == "2"


def test_a_new_compile_does_not_reuse_another_programs_code():
    fn, source = compile_numpy([x, y], [], [sp.sin(x) * y])
    _, renamed = compile_numpy(
        [sp.Symbol("x[0]", real=True), y], [], [sp.sin(sp.Symbol("x[0]", real=True)) * y]
    )
    assert "x_0" in renamed and "x_0" not in source
    np.testing.assert_array_equal(fn(A, B)[0], np.sin(A) * B)


def test_an_output_with_a_subs_and_a_keyword_parameter_compile_through_lambdify_as_before():
    fn, source = compile_numpy([x], [], [sp.Subs(x**2 + y, y, 1), x])
    assert fn(2.0) == [5.0, 2.0] and "return [" in source
    keyword = sp.Symbol("lambda", real=True)
    fn, source = compile_numpy([keyword, x], [(t0, keyword * x)], [t0 + 1])
    assert fn(3.0, 2.0) == [7.0] and "lambda" not in source.split("\n")[0]


def test_has_re_or_subs_finds_them_at_any_depth_and_remembers_no_wrong_answer():
    printer = AdcoreNumPyPrinter()
    w = sp.Symbol("w")
    plain = sp.sin(x) * y
    assert not printer.has_re_or_subs(plain)
    assert printer.has_re_or_subs(plain + sp.exp(sp.re(w)))  # shares plain, answered before
    assert printer.has_re_or_subs(plain * sp.Subs(x**2 + y, y, 1))
    assert not printer.has_re_or_subs(plain + 1)
    # an re() of a real UnevaluatedExpr is still taken off before printing
    assert printer.doprint(sp.re(sp.UnevaluatedExpr(x)) + plain) == "y*numpy.sin(x) + x"


def test_a_program_compiled_again_is_reused_and_any_change_compiles_anew():
    from adcore_symbolic import printing

    printing._COMPILED.clear()
    program = ([x, y], [(t0, sp.sin(x) * y)], [t0 + 1])
    fn, source = compile_numpy(*program)
    assert compile_numpy([x, y], [(t0, sp.sin(x) * y)], [t0 + 1]) == (fn, source)
    changes = {
        "input order": ([y, x], [(t0, sp.sin(x) * y)], [t0 + 1]),
        "definition": ([x, y], [(t0, sp.cos(x) * y)], [t0 + 1]),
        "output": ([x, y], [(t0, sp.sin(x) * y)], [t0 + 2]),
    }
    for name, changed in changes.items():
        other, other_source = compile_numpy(*changed)
        assert other is not fn and other_source != source, name
    # a symbol of the same name but other assumptions is another program, printed alike
    first, first_source = compile_numpy([x, y], [], [x + y])
    second, second_source = compile_numpy([x, y], [], [sp.Symbol("x") + y])
    assert second is not first and second_source == first_source
    # Python's 1 and 1.0 are equal keys, but an int and a float line
    one, one_source = compile_numpy([x], [(t0, 1)], [t0 * x])
    one_float, one_float_source = compile_numpy([x], [(t0, 1.0)], [t0 * x])
    assert "t0 = 1\n" in one_source and "t0 = 1.0\n" in one_float_source
    assert len(printing._COMPILED) == 8
