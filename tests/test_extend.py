"""adcore.extend: the helpers rule and backend authors use, with values worked out by hand; the
sympy-rule helpers import without sympy, and the lazy module imports it when used."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import adcore
from adcore import extend
from adcore.plugins import get_registry


def test_the_helpers_the_docs_name_are_public():
    # docs/plugins.md writes rules with adcore.unbroadcast and adcore.lift
    assert adcore.extend is extend
    assert (adcore.unbroadcast, adcore.lift, adcore.batched_axis) == (
        extend.unbroadcast,
        extend.lift,
        extend.batched_axis,
    )
    RULE_KINDS = get_registry().kinds  # each declared by the plugin that brings it
    assert set(RULE_KINDS) >= {"vjp", "jvp", "sympy"}
    assert not hasattr(extend, "RULE_KINDS")  # the contract lives with the plugins, not here


def test_unbroadcast_sums_the_broadcast_axes_back():
    # a (2, 1) input broadcast against (3, 2, 4): summed over the new leading axis and the 4 copies
    g = np.arange(24.0).reshape(3, 2, 4)
    np.testing.assert_array_equal(extend.unbroadcast(g, np.zeros((2, 1))), g.sum(axis=(0, 2))[:, None])
    assert extend.unbroadcast(g, 0.0).shape == ()  # a Python number is a 0-d target


def test_lift_lines_a_batched_tangent_up_under_the_output():
    t = np.ones((5, 3))  # 5 directions of a (3,) input, whose output is (2, 3)
    assert extend.lift(t, np.zeros((2, 3))).shape == (5, 1, 3)


@pytest.mark.parametrize(
    ("axis", "ndim", "moved"), [(None, 2, (1, 2)), (0, 2, 1), (-1, 2, -1), ((0, -1), 3, (1, -1))]
)
def test_batched_axis_moves_an_axis_past_the_batch(axis, ndim, moved):
    assert extend.batched_axis(axis, ndim) == moved


def test_tie_weights_share_the_derivative_of_max_among_ties():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, -1.0]])
    weights = extend.tie_weights(x, x.max(axis=1), axis=1, dtype=np.float64)
    np.testing.assert_array_equal(weights, [[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]])


def test_prod_partials_with_zeros_are_the_products_of_the_others():
    # d prod / d x_i = prod of the others: (0*3, 2*3, 2*0) at a lone zero; all 0 with two zeros
    np.testing.assert_array_equal(extend.prod_partials(np.array([2.0, 0.0, 3.0]), 0.0, None), [0.0, 6.0, 0.0])
    np.testing.assert_array_equal(extend.prod_partials(np.array([0.0, 0.0, 3.0]), 0.0, None), [0.0, 0.0, 0.0])


# --- the sympy-rule helpers -------------------------------------------------------------------


def test_the_sympy_rule_helpers_import_without_sympy_and_a_lazy_module_imports_it_when_used():
    script = (
        "import sys\n"
        "import adcore.extend\n"
        "from adcore.extend import LazyModule, each, reduce_with\n"
        "assert 'sympy' not in sys.modules, 'adcore.extend imported sympy'\n"
        "sp = LazyModule('sympy')\n"
        "assert 'sympy' not in sys.modules, 'making a LazyModule imported it'\n"
        "x = sp.Symbol('x')\n"
        "assert 'sympy' in sys.modules and type(x).__module__.startswith('sympy.')\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)


def test_the_one_module_of_adcore_that_imports_sympy_is_extend_sympy_functions_and_adcore_never_imports_it():
    imports = {}
    for path in Path(adcore.__file__).parent.rglob("*.py"):
        nodes = [
            n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Import | ast.ImportFrom)
        ]
        names = {a.name for n in nodes if isinstance(n, ast.Import) for a in n.names}
        for n in nodes:
            if isinstance(n, ast.ImportFrom) and n.module:  # the module and module.name, for each name
                names |= {n.module} | {f"{n.module}.{a.name}" for a in n.names}
        imports[path.relative_to(Path(adcore.__file__).parent).as_posix()] = names
    assert [m for m, names in imports.items() if any(n.split(".")[0] == "sympy" for n in names)] == [
        "extend/sympy_functions.py"
    ]
    assert [m for m, names in imports.items() if "adcore.extend.sympy_functions" in names] == []


def test_a_lazy_module_that_cannot_be_imported_fails_when_used_not_when_made():
    missing = extend.LazyModule("adcore_no_such_module")
    assert repr(missing) == "<lazy module 'adcore_no_such_module'>"
    with pytest.raises(ModuleNotFoundError, match="adcore_no_such_module"):
        missing.anything  # noqa: B018


def test_each_applies_a_sympy_function_elementwise_broadcasting():
    sp = pytest.importorskip("sympy")
    x, y = sp.symbols("x y")
    out = extend.each(sp.Max, np.array([[x], [y]], dtype=object), np.array([1, 2], dtype=object))
    assert out.shape == (2, 2) and out.dtype == object
    assert out[1, 0] == sp.Max(y, 1) and out[0, 1] == sp.Max(x, 2)
    assert extend.each(sp.sin, np.array(x, dtype=object)) == sp.sin(x)  # 0-d in, 0-d out


def test_reduce_with_reduces_each_slice_with_numpys_shapes():
    sp = pytest.importorskip("sympy")
    a = np.array(sp.symbols("a0:6"), dtype=object).reshape(2, 3)
    rows = extend.reduce_with(sp.Add, a, axis=1)
    assert rows.shape == (2,) and rows[1] == a[1, 0] + a[1, 1] + a[1, 2]
    assert extend.reduce_with(sp.Add, a, axis=0, keepdims=True).shape == (1, 3)
    assert extend.reduce_with(sp.Mul, a)[()] == sp.Mul(*a.ravel())


def test_an_op_call_prints_as_a_call_of_the_op_and_differentiates_and_evaluates_as_it_says():
    sp = pytest.importorskip("sympy")
    from sympy.printing.numpy import NumPyPrinter

    from adcore.extend.sympy_functions import OpCall

    class cube(OpCall):
        op = "cube"
        nargs = 1

        def fdiff(self, argindex=1):
            return 3 * self.args[0] ** 2

        def elementary(self):
            return self.args[0] ** 3

    class opaque(OpCall):
        op = "opaque"
        nargs = 1

    x = sp.Symbol("x")
    assert NumPyPrinter().doprint(cube(x) * sp.sin(x)) == "numpy.sin(x)*ops.cube(x)"
    assert sp.diff(cube(x**2), x) == 6 * x**5
    assert float(cube(sp.Integer(2)).evalf()) == 8.0 and sp.Max(cube(sp.Integer(2)), 7) == cube(2)
    assert opaque(sp.Integer(2)).evalf() == opaque(2)  # no elementary form: left as it is


def test_reduced_axes_and_kept_shape_of_an_int_a_tuple_none_and_a_0d_array():
    """reduced_axes answers an int axis without building an array (the reverse sweep asks at every sum):
    the same non-negative positions as for the tuple holding it, plain ints."""
    from adcore.extend import kept_shape, reduced_axes

    assert reduced_axes(3, 1) == reduced_axes(3, (1,)) == (1,)
    assert reduced_axes(3, -1) == (2,) and all(type(a) is int for a in reduced_axes(3, -1))
    assert reduced_axes(3, (0, -1)) == (0, 2) and reduced_axes(3, None) == (0, 1, 2)
    assert reduced_axes(0, 0) == reduced_axes(0, -1) == ()
    assert kept_shape(np.zeros((2, 3, 4)), -2) == (2, 1, 4) and kept_shape(np.zeros((2, 3)), None) == (1, 1)
