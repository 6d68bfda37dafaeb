"""activity.active_names: the locals that depend on a differentiated parameter, and the refusals of
conversions that would drop a derivative."""

from __future__ import annotations

import re

import numpy as np
import pytest
from adcore_source.activity import active_names, inactive_callee
from adcore_source.errors import SourceTransformError
from adcore_source.normalize import normalized


def mixed(x, a, n=3):
    y = np.sin(x) * a
    size = x.shape[0] + len(x)
    z = np.floor(y) + np.sign(x)
    k = y > 0
    c = n * 2
    b = a * c
    return y + z + size + k + b


def loop_carried(x, a):
    s = 0.0
    t = 1.0
    for i in range(3):
        t = t * 2
        u = s
        s = s + x * i
    return s + t + u


def containers(x, a):
    out = []
    for v in x:
        out.append(v * 2)
    pair = (a, 1.0)
    first = pair[0]
    ys = np.zeros(3)
    ys[0] = x[0]
    return out, first, ys


def lifted_calls(x, a):
    def g(u):
        return u * a

    w = g(2.0)
    v = g(x)
    return v + w


def test_values_through_operations_with_derivatives_are_active():
    active = active_names(normalized(mixed), ["x"])
    assert {"x", "y", "sin_x"} <= active
    assert not {"a", "size", "k", "c", "b", "n"} & active


def test_piecewise_constant_ops_comparisons_and_shapes_are_inactive():
    active = active_names(normalized(mixed), ["x", "a"])
    assert {"y", "b"} <= active
    assert not {"size", "k", "z", "c"} & active  # floor + sign: no derivative; shape, len, >: none


def test_parameters_may_be_given_by_position():
    assert active_names(normalized(mixed), [1]) == active_names(normalized(mixed), ["a"])


def test_activity_flows_around_loops_to_a_fixpoint():
    active = active_names(normalized(loop_carried), ["x"])
    assert {"s", "u"} <= active  # u = s reads the s of the previous iteration
    assert "t" not in active and "i" not in active


def test_containers_in_place_writes_and_loop_variables_carry_activity():
    active = active_names(normalized(containers), ["x"])
    assert {"out", "ys", "v"} <= active
    assert not {"pair", "first"} & active
    assert {"pair", "first"} <= active_names(normalized(containers), ["a"])


def test_calls_of_lifted_functions_are_active_through_their_arguments():
    active = active_names(normalized(lifted_calls), ["x"])
    assert "v" in active and "w" not in active
    assert {"v", "w"} <= active_names(normalized(lifted_calls), ["a"])  # a is g's extra parameter


@pytest.mark.parametrize(
    ("body", "construct"),
    [
        ("    return float(x) * 2\n", "float() of a differentiated value"),
        ("    return int(x[0])\n", "int() of a differentiated value"),
        ("    y = x * 2\n    return y.item()\n", "y.item() of a differentiated value"),
        ("    return x.sum().tolist()\n", ".tolist() of a differentiated value"),
    ],
)
def test_conversions_that_drop_the_derivative_are_refused(tmp_path, body, construct):
    path = tmp_path / "m.py"
    source = "def f(x, n):\n" + body
    path.write_text(source)
    line = len(source.splitlines())  # the conversion is on the last line
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    norm = normalized(namespace["f"])
    with pytest.raises(SourceTransformError, match=re.escape(construct)) as info:
        active_names(norm, ["x"])
    assert info.value.line == line and f"{path}:{line}" in str(info.value)
    active_names(norm, ["n"])  # the same conversions of an inactive value are fine


def test_inactive_callees():
    assert all(inactive_callee(f) for f in (len, range, np.floor, np.sign, np.argmax, np.shape, np.less))
    assert not any(inactive_callee(f) for f in (np.sin, np.sum, np.dot, abs, max))
