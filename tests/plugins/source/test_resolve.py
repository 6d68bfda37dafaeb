"""What each callee is to the emitters: tier-1 template, tier-2 op, user function, or inactive."""

from __future__ import annotations

import ast
import builtins
import collections
import functools
import math

import numpy as np
import pytest
from adcore_source.resolve import Callee, callee_kind, operator_callee, operator_op

import adcore
import adcore.numpy as anp


def helper(x):
    return np.sin(x) * x


@pytest.mark.parametrize(
    ("obj", "op"),
    [
        (np.sin, "sin"),
        (np.add, "add"),
        (np.true_divide, "divide"),
        (anp.sin, "sin"),
        (adcore.ops.tanh, "tanh"),
    ],
)
def test_ufuncs_and_ops_in_partials_are_templates(obj, op):
    assert callee_kind(obj) == Callee("template", op, obj)


def test_a_template_called_with_keywords_or_other_arguments_is_a_tier_2_op():
    assert callee_kind(np.sin, 1, ["dtype"]).kind == "op"
    assert callee_kind(np.add, 3).kind == "op"  # np.add(x, y, out)
    assert callee_kind(np.sin, 1).kind == "template"


@pytest.mark.parametrize(
    ("obj", "value"),
    [
        (np.sum, "sum"),
        (np.matmul, "matmul"),
        (np.where, "where"),
        (np.abs, "abs"),
        (np.stack, "stack"),
        (np.linalg.eigh, "numpy.linalg.eigh"),
        (np.linalg.slogdet, "numpy.linalg.slogdet"),
        (anp.linalg.norm, "norm"),
    ],
)
def test_other_ops_and_numpy_functions_over_ops_are_tier_2(obj, value):
    callee = callee_kind(obj)
    assert (callee.kind, callee.value, callee.fn) == ("op", value, obj)


def test_structural_zero_ops_are_flagged_so_their_cotangents_may_come_masked():
    assert callee_kind(np.where).masks and callee_kind(np.maximum).masks and callee_kind(max).masks
    assert not callee_kind(np.sum).masks


def test_functions_numpy_cannot_dispatch_get_adcore_stand_ins():
    assert callee_kind(np.array) == Callee("op", "array", anp.array)
    assert callee_kind(np.asarray).fn is anp.asarray


def test_math_functions_are_their_ops_and_the_value_stays_maths():
    assert callee_kind(math.sin) == Callee("template", "sin", math.sin)
    assert callee_kind(math.atan2) == Callee("template", "arctan2", math.atan2)
    fabs = callee_kind(math.fabs)
    assert (fabs.kind, fabs.fn) == ("op", adcore.ops.fabs)
    refused = callee_kind(math.log, 2)  # math.log(x, base)
    assert refused.kind == "inactive" and not refused.takes_active and "math.log" in refused.why
    assert callee_kind(math.floor) == Callee("inactive", math.floor)  # no derivative flows
    assert not callee_kind(math.gamma).takes_active


@pytest.mark.parametrize(
    "obj", [len, isinstance, print, range, np.shape, np.zeros_like, np.argmax, np.greater]
)
def test_readers_are_inactive_and_may_take_active_values(obj):
    assert callee_kind(obj) == Callee("inactive", obj)


@pytest.mark.parametrize("obj", [np.sign, np.floor, np.floor_divide])
def test_ops_with_no_flowing_derivative_are_inactive(obj):
    assert callee_kind(obj) == Callee("inactive", obj)


def test_np_where_of_a_condition_alone_gives_indices():
    assert callee_kind(np.where, 1) == Callee("inactive", np.where)


@pytest.mark.parametrize(
    ("obj", "said"),
    [
        (float, "float() converts"),
        (np.float64, "float64() converts"),
        (np.zeros, "np.zeros makes a constant array"),
        (zip, "zip() of active values"),
        (np.random.normal, "RandomState.normal"),
        (open, "open()"),
    ],
)
def test_calls_that_would_drop_a_derivative_are_refused_with_an_active_argument(obj, said):
    callee = callee_kind(obj)
    assert callee.kind == "inactive" and not callee.takes_active and said in callee.why


@pytest.mark.parametrize("obj", [builtins.max, builtins.min, builtins.abs, builtins.sum, builtins.pow])
def test_builtins_on_numbers_are_differentiated_by_the_tape(obj):
    callee = callee_kind(obj)
    assert (callee.kind, callee.fn) == ("op", obj)


def test_user_functions_are_transformed_and_functions_without_source_go_to_the_tape():
    assert callee_kind(helper) == Callee("user", helper)
    assert callee_kind(lambda x: x * 2).kind == "user"
    namespace: dict = {}
    exec("def nosource(x):\n    return x * 2\n", namespace)  # noqa: S102 (no source file to read)
    assert callee_kind(namespace["nosource"]) == Callee("op", "nosource", namespace["nosource"])
    assert callee_kind(functools.partial(helper, 2.0)).kind == "user"
    partial = functools.partial(np.sum, axis=0)
    assert callee_kind(partial) == Callee("op", "sum", partial)


def test_custom_rules_and_containers_are_tier_2():
    custom = adcore.custom_vjp(lambda x: x)
    assert callee_kind(custom).kind == "op"
    pair = collections.namedtuple("Pair", "a b")
    assert callee_kind(pair) == Callee("op", "Pair", pair)
    assert callee_kind(list).kind == "op"


@pytest.mark.parametrize(
    ("node", "op"),
    [
        (ast.Add(), "add"),
        (ast.Sub(), "subtract"),
        (ast.Mult(), "multiply"),
        (ast.Div(), "divide"),
        (ast.Pow(), "power"),
        (ast.MatMult(), "matmul"),
        (ast.Mod(), "mod"),
        (ast.FloorDiv(), "floor_divide"),
        (ast.USub(), "negative"),
        (ast.UAdd(), None),
        (ast.Not(), None),
        (ast.BitAnd(), None),
    ],
)
def test_python_operators_map_to_ops(node, op):
    assert operator_op(node) == op


def test_operator_callees():
    assert operator_callee(ast.Mult()) == Callee("template", "multiply", operator_callee(ast.Mult()).fn)
    assert operator_callee(ast.MatMult()) == Callee(
        "op", "matmul", adcore.ops.matmul
    )  # its rules apply directly
    assert operator_callee(ast.FloorDiv()).kind == "inactive"
    assert operator_callee(ast.UAdd()).kind == "op"  # +x: the tape's identity
    assert not operator_callee(ast.BitOr()).takes_active


def test_scipy_functions_that_take_plain_arrays_are_refused_naming_the_plugin_and_its_ufuncs_are_ops():
    scipy_linalg = pytest.importorskip("scipy.linalg")
    scipy_special = pytest.importorskip("scipy.special")
    refused = callee_kind(scipy_linalg.expm)
    assert not refused.takes_active and "adcore_scipy.linalg.expm" in refused.why
    erf = callee_kind(scipy_special.erf)
    if erf.kind == "op":  # the adcore-scipy plugin is installed
        assert erf.value == "erf" and erf.fn is scipy_special.erf
