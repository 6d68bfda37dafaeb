"""adcore_symbolic.program: the chain rule through common subexpressions gives sympy.diff's
derivatives exactly, reads Dirac deltas as 0, refuses what sympy cannot differentiate, and
names its lines without clashing with the trace's symbols."""

from __future__ import annotations

import pytest
import sympy as sp
from adcore_symbolic.errors import ExpressionTooLargeError
from adcore_symbolic.printing import compile_numpy
from adcore_symbolic.program import Program, differentiate, lines_for

x, y, z = sp.symbols("x y z", real=True)

EXPRESSIONS = {
    "product": (x * y * z * sp.sin(x), [x, y, z]),
    "nested": (sp.exp(sp.sin(sp.log(x * y))) * sp.log(sp.exp(x) + sp.sin(y) ** 2), [x, y]),
    "rational": ((x**3 - 2 * x * y + 1) / (x**2 + y**2 + 1) - y / (x - y), [x, y]),
    # x at depth 1 (the square) and at depth 4 (inside exp, inside sin, inside the product)
    "input twice": (x**2 + sp.sin(y * sp.exp(x * z)), [x, y, z]),
    "shared subexpression": (sp.sin(x * y) ** 2 + sp.cos(x * y) * sp.exp(sp.sin(x * y)), [x, y]),
}


def _closed_derivatives(program: Program) -> list[list]:
    return [program.closed_form(row) for row in program.derivatives]


@pytest.mark.parametrize("name", EXPRESSIONS)
def test_derivatives_equal_sympy_diff(name):
    expr, inputs = EXPRESSIONS[name]
    program = differentiate([expr], inputs, inputs)
    (row,) = _closed_derivatives(program)
    assert len(row) == len(inputs)
    for d, s in zip(row, inputs):
        assert sp.simplify(d - sp.diff(expr, s)) == 0, (name, s, d)


def test_values_closed_form_equals_the_outputs():
    outputs = [expr for expr, _ in EXPRESSIONS.values()]
    program = differentiate(outputs, [x, y, z], [x, y, z])
    assert program.closed_form(program.values) == outputs


def test_several_outputs_at_once():
    outputs = [x * y, sp.sin(x * y) + z, sp.exp(x) / (1 + y**2), sp.Integer(7)]
    program = differentiate(outputs, [x, y, z], [x, y, z])
    assert len(program.derivatives) == len(outputs)
    for out, row in zip(outputs, _closed_derivatives(program)):
        assert [sp.simplify(d - sp.diff(out, s)) for d, s in zip(row, [x, y, z])] == [0, 0, 0], out


def test_a_large_polynomial_is_exact_at_rational_points():
    # the 7th logistic iterate: a degree-64 polynomial, too large to simplify quickly
    p = x
    for _ in range(6):
        p = 4 * p * (1 - p)
    program = differentiate([p], [x], [x])
    (d,) = program.closed_form(program.derivatives[0])
    gap = d - sp.diff(p, x)
    assert all(gap.xreplace({x: sp.Rational(k, 5)}) == 0 for k in range(-2, 8))
    # and the program is small, where sympy.diff's expression swells
    assert program.count_ops() < sp.count_ops(sp.diff(p, x)) / 10


def test_sign_derivative_reads_the_dirac_delta_as_zero():
    program = differentiate([sp.sign(x) * x], [x], [x])
    (d,) = program.closed_form(program.derivatives[0])  # sign(x), 0 selected where it is 0
    assert not d.has(sp.DiracDelta)
    assert [d.xreplace({x: v}) for v in (-2, 0, 3)] == [-1, 0, 1]
    assert sp.diff(sp.sign(x) * x, x).has(sp.DiracDelta)  # what sympy itself gives


def test_second_derivative_of_abs_is_zero():
    first = differentiate([sp.Abs(x)], [x], [x])
    (d1,) = first.closed_form(first.derivatives[0])  # sign(x), 0 selected where it is 0
    assert [d1.xreplace({x: v}) for v in (-2, 0, 3)] == [-1, 0, 1]
    second = differentiate([d1], [x], [x])
    assert second.closed_form(second.derivatives[0]) == [0]


def test_heaviside_and_max_derivatives_have_no_dirac_delta():
    exprs = [sp.Heaviside(x) * x, sp.Max(x, y)]
    program = differentiate(exprs, [x, y], [x, y])
    rows = _closed_derivatives(program)
    assert [rows[0][0].xreplace({x: v}) for v in (-2, 0, 3)] == [0, sp.S.Half, 1]  # Heaviside(x)
    assert rows[0][1] == 0
    assert not any(d.has(sp.DiracDelta) for row in rows for d in row)
    # the tie split of Max: the two halves of a tie add up to 1
    at_tie = [d.xreplace({x: 2, y: 2}) for d in rows[1]]
    assert at_tie == [sp.S.Half, sp.S.Half]
    # d/dx of the derivative of Max is a delta in sympy, 0 here
    second = differentiate([rows[1][0]], [x], [x])
    assert second.closed_form(second.derivatives[0]) == [0]


def test_an_undefined_function_is_refused_by_name():
    g = sp.Function("g")
    with pytest.raises(NotImplementedError) as info:
        differentiate([sp.sin(x) + g(x * y)], [x, y], [x, y])
    message = str(info.value)
    for word in ["g(x*y)", "adcore_symbolic.functions", "'symbolic'"]:
        assert word in message, f"{word!r} not in {message!r}"


def test_count_ops_of_a_bare_symbol_is_zero():
    program = differentiate([x], [x], [x])
    assert program.closed_form(program.derivatives[0]) == [1]
    assert program.count_ops() == 0
    assert differentiate([x * y], [x, y], [x, y]).count_ops() == 1  # one multiply; d/dx = y, d/dy = x


def test_count_ops_grows_with_more_operations():
    chain = [x]
    for func in (sp.sin, sp.exp, sp.log, sp.cos):
        chain.append(func(chain[-1]) * x)
    counts = [differentiate([e], [x], [x]).count_ops() for e in chain]
    assert all(a < b for a, b in zip(counts, counts[1:])), counts


def test_count_ops_counts_every_line():
    program = differentiate([sp.sin(x) * sp.exp(y)], [x, y], [x, y])
    lines = [e for _, e in program.definitions] + program.values + sum(program.derivatives, [])
    assert program.count_ops() == sum(sp.count_ops(e) for e in lines) > 0


U = sp.symbols("u0:6", real=True)
DEFINITIONS = [
    (U[0], x + 1),
    (U[1], 2 * U[0]),
    (U[2], y**2),
    (U[3], sp.sin(x)),  # needed by nothing below
    (U[4], U[1] + U[2]),
    (U[5], U[3] * z),
]


@pytest.mark.parametrize(
    "outputs, needed",
    [
        ([U[4]], [0, 1, 2, 4]),
        ([U[1]], [0, 1]),
        ([U[2] + x], [2]),
        ([U[5], U[2]], [2, 3, 5]),
        ([U[4] * U[5]], [0, 1, 2, 3, 4, 5]),
        ([x + y], []),
        ([sp.Integer(3)], []),
    ],
)
def test_lines_for_keeps_exactly_the_needed_definitions_in_order(outputs, needed):
    assert lines_for(DEFINITIONS, outputs) == [DEFINITIONS[i] for i in needed]


def _names_used(program: Program) -> list[str]:
    return [str(s) for s, _ in program.definitions]


def test_generated_names_avoid_the_inputs_and_taken_symbols():
    t0, b0, c0, t1, b1, c1 = sp.symbols("t0 b0 c0 t1 b1 c1", real=True)
    u = t0 * b0
    expr = sp.sin(u) ** 2 + sp.exp(c0 * u) ** 2 + sp.cos(t1 * b1 * c1) * sp.sin(t1 * b1 * c1)
    inputs, taken = [t0, b0, t1], [t0, b0, c0, t1, b1, c1]
    program = differentiate([expr], inputs, taken)
    names = _names_used(program)
    assert len(names) == len(set(names)) > 0
    assert {"t", "b", "c"} <= {n[0] for n in names}  # all three kinds of lines were made
    assert not set(names) & {str(s) for s in taken}
    # the compiled program computes the right numbers, so nothing was shadowed
    point = {t0: 0.3, b0: -0.7, c0: 0.2, t1: 1.1, b1: 0.4, c1: -0.6}
    fn, _ = compile_numpy(taken, program.definitions, program.values + program.derivatives[0])
    got = fn(*(point[s] for s in taken))
    want = [expr] + [sp.diff(expr, s) for s in inputs]
    assert got == pytest.approx([float(w.xreplace(point)) for w in want], rel=1e-13)


def test_generated_names_avoid_taken_names_whatever_their_assumptions():
    t0, b0, c0 = sp.symbols("t0 b0 c0")  # no real=True
    expr = sp.sin(t0 * b0) ** 2 + sp.exp(c0 * t0 * b0) ** 2
    program = differentiate([expr], [t0, b0], [t0, b0, c0])
    assert not set(_names_used(program)) & {"t0", "b0", "c0"}


def _nodes(expr) -> int:
    return sum(1 for _ in sp.preorder_traversal(expr))


def test_closed_form_size_counts_the_substituted_tree():
    expr = sp.sin(x * y) ** 2 + sp.exp(sp.sin(x * y)) * sp.cos(sp.sin(x * y) + z)
    program = differentiate([expr], [x, y, z], [x, y, z])
    assert program.definitions  # sin(x*y) is shared, so there is something to substitute
    assert program.closed_form_size(program.values) == _nodes(expr)
    # substituting a product into a product flattens it, so for the derivatives the count is
    # an upper bound: the guard never underestimates
    closed = program.closed_form(program.derivatives[0])
    assert program.closed_form_size(program.derivatives[0]) >= sum(_nodes(e) for e in closed)


def test_a_closed_form_too_large_to_build_is_refused():
    p = x
    for _ in range(30):  # the tree doubles per level: about 2^30 nodes written out
        p = 4 * p * (1 - p)
    program = differentiate([p], [x], [x])
    assert program.count_ops() < 10 * 30  # the program itself is small
    with pytest.raises(ExpressionTooLargeError) as info:
        program.closed_form(program.derivatives[0])
    assert "max_nodes=" in str(info.value) and ".cse" in str(info.value)
    assert program.closed_form_size(program.derivatives[0]) > 2**30
    small = differentiate([x**3], [x], [x])
    with pytest.raises(ExpressionTooLargeError):
        small.closed_form(small.derivatives[0], max_nodes=2)
    assert small.closed_form(small.derivatives[0], max_nodes=10) == [3 * x**2]


def test_replaced_is_xreplace_and_its_rebuilt_nodes_follow_the_rule():
    from adcore_symbolic import functions as F
    from adcore_symbolic.program import _replaced

    xs = sp.symbols("a0:4", real=True)
    t, u = sp.symbols("t u", real=True)
    m = F.amax(*xs)
    rebuilt: dict = {}
    for i in range(len(xs)):  # the partials share the ties, rebuilt once
        outer = m.fdiff(i + 1)
        assert sp.srepr(_replaced(outer, {m: t}, rebuilt)) == sp.srepr(outer.xreplace({m: t}))
    # a new rule gets a new memo: the nodes rebuilt for t are not reused for u
    assert _replaced(m.fdiff(1), {m: u}, {}) == m.fdiff(1).xreplace({m: u})
    assert _replaced(m.fdiff(1), {m: u}, {}).has(u) and not _replaced(m.fdiff(1), {m: u}, {}).has(t)


def _sweep(definitions, outputs, inputs, max_nodes=10**9):
    from adcore_symbolic.budget import WorkBudget
    from adcore_symbolic.program import chain_rule, fresh_names

    budget = WorkBudget(max_nodes)
    program = chain_rule(definitions, outputs, inputs, fresh_names("b", set(inputs)), budget, {})
    return program, budget.spent


def test_partials_met_again_are_reused_with_the_work_they_took_and_a_changed_input_misses():
    from adcore_symbolic import functions as F
    from adcore_symbolic import program as P

    t1, t2 = sp.symbols("t1 t2", real=True)
    definitions = [(t1, F.amax(x, y, z)), (t2, sp.exp(t1) * y)]
    P._PARTIALS.clear()
    first, work = _sweep(definitions, [t2], [x, y, z])
    assert len(P._PARTIALS) == 2
    again, work_again = _sweep(definitions, [t2], [x, y, z])
    assert len(P._PARTIALS) == 2 and again == first and work_again == work
    # by x only: y is no longer differentiated, so t1's and t2's partials are new entries
    by_x, _ = _sweep(definitions, [t2], [x])
    assert len(P._PARTIALS) == 4 and by_x.derivatives[0][0] == first.derivatives[0][0]
    # another definition under the same symbol: a new entry, its own derivative (t2's is reused)
    changed, _ = _sweep([(t1, F.amin(x, y, z)), (t2, sp.exp(t1) * y)], [t2], [x, y, z])
    assert len(P._PARTIALS) == 5
    point = {x: 0.5, y: 2.0, z: -1.0}
    got = [float(d.subs(point)) for d in changed.closed_form(changed.derivatives[0])]
    assert got == pytest.approx([0.0, float(sp.exp(-1.0)), float(2 * sp.exp(-1.0))])
    assert float(first.closed_form(first.derivatives[0])[1].subs(point)) == pytest.approx(
        float(sp.exp(2.0) * (1 + 2.0))
    )


def test_a_reused_partial_hits_the_budget_where_the_first_did():
    definitions = [(sp.Symbol("t1", real=True), sp.sin(x * y) * sp.exp(x + z))]
    t1 = definitions[0][0]
    from adcore_symbolic import program as P

    _, work = _sweep(definitions, [t1], [x, y])
    P._PARTIALS.clear()
    for _ in range(2):  # once computed, once reused
        with pytest.raises(ExpressionTooLargeError) as caught:
            _sweep(definitions, [t1], [x, y], max_nodes=work - 1)
        assert f"built so far: {work}" in str(caught.value)


def test_free_symbols_of_is_sympys_free_symbols_bound_ones_left_out():
    from adcore_symbolic.program import free_symbols_of

    shared = sp.sin(x) * y
    exprs = [
        shared + 1,
        shared * z,
        sp.Lambda(x, x + z),  # x is bound here
        sp.Subs(x**2 + y, x, z),
        sp.Integral(x * y, (x, 0, 1)),
        sp.Piecewise((x, y > 0), (1, True)),
        sp.Integer(3),
    ]
    for some in (exprs, exprs[2:5], exprs[-1:], []):
        assert free_symbols_of(some) == set().union(*(e.free_symbols for e in some))
    assert free_symbols_of(exprs[2:4]) == {y, z}
