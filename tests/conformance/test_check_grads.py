"""adcore.check_grads: it passes right derivatives and names the wrong ones (backend, argument,
order, worst entry), against the engine's corroborated reference."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from throwaway_plugin import throwaway_plugin as _plugin

import adcore
import adcore.numpy as anp
from adcore.conformance import cases
from adcore.errors import (
    InvalidInputError,
    InvalidOutputError,
    InvalidValueError,
    MissingRuleError,
    TracerConversionError,
    UnknownBackendError,
    UnsupportedByBackendError,
)
from adcore.spec import OpSpec

X = np.array([0.3, -1.2, 2.0])  # d x^3 / dx at 2.0 is 12; a rule giving 2 x^2 says 8


def rosenbrock(x):
    """sum 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2, the optimizers' test function ([-1.2, 1] its classic start)."""
    return anp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _failures(info: pytest.ExceptionInfo) -> list[str]:
    return str(info.value).splitlines()[1:]


# --- a wrong rule is caught, a right one passes ---------------------------------------------------


def test_a_plugin_op_with_a_right_vjp_passes_and_a_wrong_one_is_named(register_plugin):
    right = OpSpec("cube", lambda x: x**3, elementwise=True)
    wrong = OpSpec("bad_cube", lambda x: x**3, elementwise=True)
    vjps = {"cube": (lambda g, ans, x: g * 3 * x * x,), "bad_cube": (lambda g, ans, x: g * 2 * x * x,)}
    register_plugin(_plugin([right, wrong], vjps), "cubes")

    report = adcore.check_grads(lambda x: adcore.ops.cube(x), (X,))
    assert set(report.checked) == {"reverse", "numeric", "source"}  # source applies the vjp rules
    # forward and symbolic have no rule for the op: skipped, saying so; reverse is corroborated by numeric
    assert "no 'jvp' rule" in report.skipped["forward"] and "no 'sympy' rule" in report.skipped["symbolic"]
    assert report.references[1] == "reverse = numeric"

    with pytest.raises(AssertionError) as info:
        adcore.check_grads(lambda x: adcore.ops.bad_cube(x), (X,), order=1)
    line, source_line = _failures(info)  # source applies the same vjp rule
    assert source_line.startswith("  backend 'source', argument 0, order 1 (jacobian)")
    assert line.startswith(
        "  backend 'reverse', argument 0, order 1 (jacobian): worst entry d out[2] / d argument 0[2]"
    )
    assert re.search(r"got 8, expected 12(\.0+\d*)?, .* > tolerance ", line)
    assert "reference: numeric (its own estimate" in line
    # the next call works
    assert "reverse" in adcore.check_grads(lambda x: adcore.ops.cube(x), (X,), order=1).checked
    # a backend named explicitly that cannot take f raises its error rather than being skipped
    with pytest.raises(MissingRuleError, match="op 'cube' has no 'jvp' rule") as info:
        adcore.check_grads(lambda x: adcore.ops.cube(x), (X,), backends=["forward", "reverse"])
    assert "check_grads: raised by backend 'forward' (jacobian)" in info.value.__notes__[-1]


def test_a_custom_vjp_whose_bwd_is_off_by_a_factor_fails_on_reverse_only():
    @adcore.custom_vjp
    def cube(x):
        return x**3

    cube.defvjp(lambda x: (x**3, x), lambda x, g: (g * 1.5 * x * x,))  # half of 3 x^2
    # source (reverse mode) runs the same bwd
    with pytest.raises(AssertionError, match="on backend 'reverse', 'source':\n") as info:
        adcore.check_grads(lambda x: anp.sum(cube(x)), (X,))
    first, first_source, second, second_source = _failures(info)  # forward differentiates the body: right
    assert first_source.startswith("  backend 'source', argument 0, order 1 (jacobian)")
    assert second_source.startswith("  backend 'source', argument 0, order 2 (second by ")
    assert first.startswith(
        "  backend 'reverse', argument 0, order 1 (jacobian): worst entry d out / d argument 0[2]"
    )
    assert "got 6, expected 12, |difference| 6 > tolerance " in first
    assert "reference: symbolic = forward" in first
    assert second.startswith("  backend 'reverse', argument 0, order 2 (second by ")


def test_a_custom_jvp_with_a_wrong_rule_fails_on_forward_and_on_reverse_which_transposes_it():
    @adcore.custom_jvp
    def square(x):
        return x * x

    @square.defjvp
    def square_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return x * x, 3 * x * t  # 2 x t is right

    with pytest.raises(AssertionError, match="on backend 'forward', 'reverse', 'source':\n") as info:
        adcore.check_grads(square, (X,), order=1)
    lines = _failures(info)
    assert {line.split(",")[0] for line in lines} == {
        "  backend 'forward'",
        "  backend 'reverse'",
        "  backend 'source'",  # source's reverse mode transposes the jvp rule as reverse does
    }
    # the body, differentiated by symbolic, is the reference, corroborated by numeric
    assert all("got 6, expected 4" in line and "symbolic = numeric" in line for line in lines)


def test_a_wrong_custom_jvp_rule_that_forward_and_reverse_share_fails_against_numeric_and_says_so():
    @adcore.custom_jvp
    def square(x):
        if np.max(adcore.concrete(x)) > 1e6:  # control flow: symbolic cannot trace the body
            return x
        return x * x

    @square.defjvp
    def square_jvp(primals, tangents):
        return square(primals[0]), 3 * primals[0] * tangents[0]

    with pytest.raises(AssertionError) as info:
        adcore.check_grads(square, (X,), order=1)
    line, why = _failures(info)
    # forward and reverse agree (one rule), so they are the reference; numeric's estimate says otherwise
    assert line.startswith("  backend 'numeric', argument 0, order 1 (jacobian)")
    assert "got 4, expected 6" in line and "reference: reverse = forward" in line
    assert why.startswith(
        "numeric's estimate disagrees with reverse = forward: either those backends share a wrong rule"
    )
    # numeric is checked whatever `backends` says: it is what corroborates the reference
    with pytest.raises(AssertionError, match="on backend 'numeric':"):
        adcore.check_grads(square, (X,), order=1, backends=["reverse"])


def test_a_shared_custom_jvp_rule_right_at_first_order_only_fails_numeric_over_numeric_at_order_2():
    @adcore.custom_jvp
    def cube(x):
        if np.max(adcore.concrete(x)) > 1e6:  # control flow: symbolic cannot trace the body
            return x
        return x**3

    @cube.defjvp
    def cube_jvp(primals, tangents):  # 3 x^2 t, right; but frozen, so its own derivative is 0
        (x,), (t,) = primals, tangents
        return cube(x), 3 * adcore.ops.stop_gradient(x) ** 2 * t

    f = lambda x: anp.sum(cube(x))  # noqa: E731
    adcore.check_grads(f, (X,), order=1)
    with pytest.raises(AssertionError) as info:
        adcore.check_grads(f, (X,), backends=["reverse"])
    line, why = _failures(info)
    assert line.startswith("  backend 'numeric', argument 0, order 2 (second, numeric over numeric)")
    # d2 <w, x^3> / dx2 = 6 w x, which the frozen rule says is 0
    assert re.search(r"got 1\d\.\d+, expected 0, ", line) and "reference: reverse = forward" in line
    assert why.startswith("numeric's estimate disagrees with reverse = forward")


def test_a_right_custom_vjp_passes_on_every_backend_at_order_2():
    @adcore.custom_vjp
    def stable_sigmoid(x):
        return 1 / (1 + anp.exp(-x))

    def fwd(x):
        s = stable_sigmoid(x)
        return s, s

    stable_sigmoid.defvjp(fwd, lambda s, g: (g * s * (1 - s),))
    report = adcore.check_grads(lambda x: anp.sum(stable_sigmoid(x) ** 2), (X,))
    assert set(report.checked) == {"forward", "numeric", "reverse", "source", "symbolic"}
    assert report.checked["reverse"] == ["jacobian", "vjp", "second by forward", "second by reverse"]
    assert report.references == {1: "symbolic = reverse = forward", 2: "symbolic = reverse = forward"}


def test_a_wrong_rule_on_a_large_argument_is_caught_along_random_directions():
    @adcore.custom_vjp
    def cube(x):
        return x**3

    cube.defvjp(lambda x: (x**3, x), lambda x, g: (g * 3 * x * x * 1.001,))
    x = np.random.default_rng(0).uniform(-1, 1, 200)  # past FULL_SIZE: checked as J V
    with pytest.raises(AssertionError) as info:
        adcore.check_grads(lambda x: anp.sum(cube(x)), (x,), order=1, backends=["reverse"])
    assert "d out / d argument 0 along random direction " in _failures(info)[0]


# --- real functions pass -------------------------------------------------------------------------


REAL_FUNCTIONS = {
    # the seeds' worked example at the seeds' point (gradient (5.5, 2 - cos 5))
    "seed_example": (cases.seed_example, lambda dt: (np.asarray(2.0, dt), np.asarray(5.0, dt))),
    "seed_softmax": (cases.seed_softmax, lambda dt: (np.array([[0.5, -1.0, 2.0], [0.1, 0.2, 0.3]], dt),)),
    "mlp_loss": (cases.mlp_loss, lambda dt: cases._mlp_samples(np.random.default_rng(0), dt)[0].args),
    "rosenbrock": (rosenbrock, lambda dt: (np.array([-1.2, 1.0, 0.5, 2.0], dt),)),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(REAL_FUNCTIONS))
def test_real_functions_pass_at_orders_1_and_2_in_both_dtypes(name, dtype):
    f, args = REAL_FUNCTIONS[name]
    report = adcore.check_grads(f, args(np.dtype(dtype)))
    assert set(report.checked) == {"forward", "numeric", "reverse", "source", "symbolic"}
    assert all("second by forward" in report.checked[b] for b in ("forward", "reverse", "symbolic"))
    assert report.references[1] == report.references[2] == "symbolic = reverse = forward"


def test_order_1_checks_no_second_derivatives_and_a_large_rosenbrock_passes_along_directions():
    x = np.random.default_rng(1).uniform(-1, 1, 100)
    report = adcore.check_grads(rosenbrock, (x,), order=1, modes="rev")
    assert report.checked == {
        "numeric": ["jacobian"],
        "reverse": ["jacobian", "vjp"],
        "source": ["jacobian", "vjp"],
        "symbolic": ["jacobian"],
    }
    assert list(report.references) == [1]


def test_pytree_arguments_are_named_by_their_path():
    @adcore.custom_vjp
    def cube(x):
        return x**3

    cube.defvjp(lambda x: (x**3, x), lambda x, g: (g * 2 * x * x,))
    params = {"layers": [{"w": np.array([0.5, -0.3]), "b": np.array(0.1)}], "scale": 2.0, "unused": None}

    def loss(params, wrong):
        layer = params["layers"][0]
        h = cube(layer["b"]) if wrong else layer["b"] ** 3
        return params["scale"] * anp.sum(layer["w"] * h)

    report = adcore.check_grads(lambda p: loss(p, wrong=False), (params,))
    assert "reverse" in report.checked
    with pytest.raises(AssertionError) as info:
        adcore.check_grads(lambda p: loss(p, wrong=True), (params,), order=1)
    assert _failures(info)[0].startswith(
        "  backend 'reverse', argument 0['layers'][0]['b'], order 1 (jacobian)"
    )


def test_a_pytree_output_is_checked_leaf_by_leaf_and_its_entries_named_by_path():
    @adcore.custom_vjp
    def cube(x):
        return x**3

    cube.defvjp(lambda x: (x**3, x), lambda x, g: (g * 2 * x * x,))

    def f(x, wrong):
        return {"loss": anp.sum(x**2), "cubes": cube(x) if wrong else x**3}

    assert "reverse" in adcore.check_grads(lambda x: f(x, wrong=False), (X,)).checked
    with pytest.raises(AssertionError) as info:
        adcore.check_grads(lambda x: f(x, wrong=True), (X,), order=1)
    # leaves in sorted key order: out['cubes'] (3 entries), then out['loss']
    assert "worst entry d out['cubes'][2] / d argument 0[2]: got 8, expected 12" in _failures(info)[0]


# --- a wrong second derivative alone is caught ------------------------------------------------


def test_a_vjp_rule_written_with_raw_numpy_passes_order_1_and_fails_order_2(register_plugin):
    # right at first order, but on concrete values: its own derivative is 0, not 6 x
    frozen = OpSpec("frozen_cube", lambda x: x**3, elementwise=True)
    vjps = {"frozen_cube": (lambda g, ans, x: g * 3 * np.square(adcore.concrete(x)),)}
    register_plugin(_plugin([frozen], vjps), "frozen")
    f = lambda x: anp.sum(adcore.ops.frozen_cube(x))  # noqa: E731

    assert "reverse" in adcore.check_grads(f, (X,), order=1).checked
    with pytest.raises(AssertionError) as info:
        adcore.check_grads(f, (X,), order=2)
    line, source_line = _failures(info)  # source applies the same vjp rule
    assert source_line.startswith("  backend 'source', argument 0, order 2 (second by reverse)")
    assert line.startswith(
        "  backend 'reverse', argument 0, order 2 (second by reverse): worst entry d2 <w, out>"
    )
    assert "got 0, expected " in line and "numeric (its own estimate" in line


def test_a_custom_vjp_whose_bwd_is_not_differentiable_fails_order_2_only():
    @adcore.custom_vjp
    def sine(x):
        return anp.sin(x)

    sine.defvjp(lambda x: (anp.sin(x), x), lambda x, g: (g * adcore.ops.stop_gradient(anp.cos(x)),))
    f = lambda x: anp.sum(sine(x))  # noqa: E731
    adcore.check_grads(f, (X,), order=1)
    with pytest.raises(AssertionError) as info:
        adcore.check_grads(f, (X,))
    line, source_line = _failures(info)  # source runs the same bwd
    assert "backend 'reverse', argument 0, order 2" in line
    assert "backend 'source', argument 0, order 2" in source_line
    assert "reference: symbolic = forward" in line


def test_with_more_leaves_than_second_dimensions_order_2_runs_along_joint_directions():
    @adcore.custom_vjp
    def sine(x):
        return anp.sin(x)

    sine.defvjp(lambda x: (anp.sin(x), x), lambda x, g: (g * adcore.ops.stop_gradient(anp.cos(x)),))
    layers = [{"w": np.array([0.3 * k, -0.2]), "b": np.array(0.1 * k)} for k in range(4)]  # 8 leaves

    def loss(layers, frozen):
        return sum(anp.sum((sine if frozen else anp.sin)(layer["w"]) * layer["b"]) for layer in layers)

    report = adcore.check_grads(lambda p: loss(p, frozen=False), (layers,))
    assert "second by forward" in report.checked["reverse"]
    with pytest.raises(AssertionError) as info:
        adcore.check_grads(lambda p: loss(p, frozen=True), (layers,))
    line = _failures(info)[0]
    assert line.startswith("  backend 'reverse', every argument, order 2 (second by ")
    assert "worst entry d2 <w, out> / d every argument along joint random direction " in line


# --- bad input: typed errors, and the next call works ------------------------------------------


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda: adcore.check_grads("sin", (X,)), InvalidInputError, "expected a function"),
        (lambda: adcore.check_grads(anp.sin, X), InvalidInputError, "write check_grads(f, (x,))"),
        (
            lambda: adcore.check_grads(anp.sin, (X,), backends=["reverse", "nope"]),
            UnknownBackendError,
            "nope",
        ),
        (lambda: adcore.check_grads(anp.sin, (X.astype(np.float16),)), InvalidInputError, "dtype float16"),
        (
            lambda: adcore.check_grads(lambda x, n: x * n, (X, np.arange(3))),
            InvalidInputError,
            "argument 1 has dtype int",
        ),
        (lambda: adcore.check_grads(anp.sin, (X,), order=3), InvalidValueError, "order must be 1 or 2"),
        (lambda: adcore.check_grads(anp.sin, (X,), modes=("sideways",)), InvalidValueError, "modes must be"),
        (
            lambda: adcore.check_grads(anp.sin, (X,), modes="fwd", backends=["reverse"]),
            InvalidValueError,
            "reverse is 'rev'",
        ),
    ],
)
def test_bad_input_is_a_typed_error_and_the_next_call_works(call, error, words):
    with pytest.raises(error, match=re.escape(words)):
        call()
    assert "reverse" in adcore.check_grads(anp.sin, (X,), order=1).checked


def test_an_error_a_backend_raises_propagates_naming_the_backend():
    def f(x):
        return x * float(x[0])  # cut out of the derivative: refused, not a wrong number

    with pytest.raises(TracerConversionError) as info:
        adcore.check_grads(f, (X,), order=1)
    assert "check_grads: raised by backend 'forward' (jacobian)" in info.value.__notes__[-1]


def test_a_bwd_returning_the_wrong_number_of_cotangents_is_its_typed_error_not_a_skip():
    @adcore.custom_vjp
    def cube(x):
        return x**3

    cube.defvjp(lambda x: (x**3, x), lambda x, g: (g * 3 * x * x, g))
    with pytest.raises(InvalidOutputError) as info:
        adcore.check_grads(lambda x: anp.sum(cube(x)), (X,), order=1)
    assert "check_grads: raised by backend 'reverse' (jacobian)" in info.value.__notes__[-1]


def test_numeric_failing_to_estimate_is_skipped_unless_asked_for(monkeypatch):
    def broken(self, *args, **kwargs):
        raise RuntimeError("planted: no estimate today")

    monkeypatch.setattr(type(adcore.get_backend("numeric")), "value_and_jacobian", broken)
    report = adcore.check_grads(anp.sin, (X,), order=1, backends=["reverse", "forward"])
    assert "planted" in report.skipped["numeric"] and report.references[1] == "symbolic = reverse = forward"
    with pytest.raises(RuntimeError, match="planted") as info:
        adcore.check_grads(anp.sin, (X,), order=1)
    assert "check_grads: raised by backend 'numeric' (jacobian)" in info.value.__notes__[-1]


def test_an_op_no_rule_backend_can_take_is_an_error_not_numeric_checked_against_itself(register_plugin):
    register_plugin(_plugin([OpSpec("mystery", np.sin, elementwise=True)]), "mysteries")
    with pytest.raises(
        UnsupportedByBackendError, match="no backend that differentiates by rules could take f"
    ) as info:
        adcore.check_grads(lambda x: adcore.ops.mystery(x), (X,), order=1)
    assert "reverse: MissingRuleError: op 'mystery' has no 'vjp' rule" in str(info.value)


def test_nothing_to_corroborate_the_reference_is_an_error(clean_plugins, monkeypatch):
    monkeypatch.setenv("ADCORE_PLUGINS", "reverse")
    adcore.plugins.reset()
    with pytest.raises(
        UnsupportedByBackendError,
        match=r"no corroborated reference for f's order-1 derivatives \(only reverse",
    ):
        adcore.check_grads(anp.sin, (X,), order=1)


def test_the_docs_example_runs_and_prints_the_report_it_shows(capsys):
    page = (Path(__file__).resolve().parents[2] / "docs" / "check-grads.md").read_text()
    block = re.findall(r"```python\n(.*?)```", page, flags=re.S)[1]
    exec(compile(block, "docs/check-grads.md", "exec"), {})
    shown = re.search(r"print\(report\)\n```\n\n```text\n(.*?)```", page, flags=re.S).group(1)
    assert capsys.readouterr().out == shown


def test_import_adcore_does_not_import_the_engine_until_check_grads_is_used():
    code = (
        "import sys, adcore\n"
        "assert 'adcore.conformance.engine' not in sys.modules\n"
        "check_grads = adcore.check_grads\n"
        "assert check_grads.__module__ == 'adcore.conformance.check_grads'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=os.environ.copy())
