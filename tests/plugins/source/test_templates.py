"""Tier-1 derivative text from PARTIALS: evaluated on each op's own samples, it gives what the
registered reverse (vjp) and forward (jvp) rules give, dtype included."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_source.templates import jvp_expression, template_op, vjp_expression

import adcore  # noqa: F401 (loads the registry)
from adcore.extend.elementwise_partials import PARTIALS
from adcore.plugins import get_registry

TEMPLATE_OPS = sorted(op for op in PARTIALS if template_op(op))
INPUTS = ("x", "a")


def _samples(op, dtype):
    spec = get_registry().op(op)
    rng = np.random.default_rng(35)
    samples = [s.args for s in spec.samples(rng, np.dtype(dtype)) if not s.params]
    assert samples
    return samples


def _evaluated(text_names, env):
    text, names = text_names
    return eval(text, {**names, **env})  # noqa: S307 (the text under test)


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0, equal_nan=True)


def test_every_elementwise_op_with_a_flowing_partial_is_a_template():
    assert {"sin", "add", "multiply", "divide", "power", "log", "tanh", "sigmoid", "arctan2", "mod"} <= set(
        TEMPLATE_OPS
    )
    assert not template_op("sign") and not template_op("floor_divide")  # no derivative flows
    assert not template_op("abs") and not template_op("where")  # steps: not in PARTIALS


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("op", TEMPLATE_OPS)
def test_vjp_text_computes_the_registered_vjp_rule(op, dtype):
    rules = get_registry().rules["vjp"][op]
    nin = len(PARTIALS[op])
    names = INPUTS[:nin]
    for args in _samples(op, dtype):
        ans = get_registry().op(op).impl(*args)
        g = np.random.default_rng(1).normal(size=np.shape(ans)).astype(dtype)
        env = {"by": g, "y": ans, **dict(zip(names, args))}
        for i in range(nin):
            expression = vjp_expression(op, i, "by", "y", names)
            if rules[i] is None:
                assert expression is None
                continue
            _same(_evaluated(expression, env), rules[i](g, ans, *args))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("op", TEMPLATE_OPS)
def test_jvp_text_computes_the_sum_of_the_registered_jvp_rules(op, dtype):
    rules = get_registry().rules["jvp"][op]
    nin = len(PARTIALS[op])
    names = INPUTS[:nin]
    rng = np.random.default_rng(2)
    for args in _samples(op, dtype):
        ans = get_registry().op(op).impl(*args)
        tangents = [rng.normal(size=np.shape(a)).astype(dtype) for a in args]
        for given in ([True] * nin, *([[j == i for j in range(nin)] for i in range(nin)] if nin > 1 else [])):
            env = {"y": ans, **dict(zip(names, args)), "dx": tangents[0], "da": tangents[-1]}
            texts = [("dx", "da")[i] if on else None for i, on in enumerate(given)]
            expression = jvp_expression(op, texts, "y", names)
            shares = [
                rules[i](t[None], ans, *args)
                for i, (t, on) in enumerate(zip(tangents, given))
                if on and rules[i]
            ]
            if not shares:
                assert expression is None
                continue
            want = shares[0] if len(shares) == 1 else shares[0] + shares[1]
            want = np.broadcast_to(want, (1, *np.shape(ans)))[0]  # the forward backend's fit to ans
            _same(_evaluated(expression, env), np.asarray(want).astype(np.result_type(ans)))


def test_text_reads_like_the_hand_written_derivative():
    assert vjp_expression("sin", 0, "by", "y", ["x"])[0] == "by * cos(x)"
    assert vjp_expression("arctan", 0, "by", "y", ["x"])[0] == "by / (1 + x * x)"
    assert vjp_expression("multiply", 0, "by", "y", ["x", "a"])[0] == "unbroadcast(by * a, x)"
    assert vjp_expression("subtract", 1, "by", "y", ["x", "a"])[0] == "unbroadcast(-by, a)"
    assert jvp_expression("multiply", ["dx", "da"], "y", ["x", "a"])[0] == "dx * a + da * x"
    assert jvp_expression("subtract", ["dx", "da"], "y", ["x", "a"])[0] == "dx - da"
    assert jvp_expression("sin", [None], "y", ["x"]) is None
    assert jvp_expression("multiply", ["dx", None], "y", ["x", "2.0"])[0] == "dx * 2.0"  # a constant input


def test_names_are_bound_and_renamed_away_from_taken_ones():
    text, names = vjp_expression("sin", 0, "by", "y", ["x"], taken={"cos"})
    assert text == "by * cos_(x)" and names == {"cos_": np.cos}  # the op's ufunc: the same value
    text, names = vjp_expression("sin", 0, "by", "y", ["x"], taken={"cos": np.cos})
    assert text == "by * cos(x)"  # the same object under the same name: shared
    text, names = vjp_expression("exp2", 0, "by", "y", ["x"])
    assert text == "by * (y * LN2)" and isinstance(names["LN2"], float)  # a Python float: dtype kept


def test_masked_text_keeps_the_structural_zeros_of_its_cotangent():
    from adcore_source.runtime import Masked

    text, names = vjp_expression("log", 0, "b_log_x", "log_x", ["x"], masked=True)
    assert text == "keep_zeros(b_log_x, plain(b_log_x) / nan_where_value_is(x, log_x))"
    x = np.array([0.0, 2.0])
    g = Masked(np.array([0.0, 3.0]), np.array([True, False]))
    with np.errstate(divide="ignore", invalid="ignore"):
        got = eval(text, {**names, "b_log_x": g, "x": x, "log_x": np.log(x)})  # noqa: S307
    np.testing.assert_array_equal(got.cotangent, [0.0, 1.5])
    np.testing.assert_array_equal(got.zeros, [True, False])


@pytest.mark.parametrize("op", ["sin", "tanh", "log", "arctan", "sigmoid", "power"])
def test_the_text_is_itself_differentiable(op):
    """Second order: the tape differentiates the derivative text (its helpers trace) and agrees
    with its own second derivative."""
    spec = get_registry().op(op)
    names_in = INPUTS[: len(PARTIALS[op])]
    text, names = vjp_expression(op, 0, "by", "y", names_in)

    def first(*xs):  # d op / d input 0, the op's value computed inside so the tape sees it depend on x
        return eval(text, {**names, "by": 1.0, "y": spec(*xs), **dict(zip(names_in, xs))})  # noqa: S307

    xs = (0.7, 1.3)[: len(names_in)]
    want = adcore.grad(adcore.grad(spec, backend="reverse"), backend="reverse")(*xs)
    assert adcore.grad(first, backend="reverse")(*xs) == pytest.approx(want, rel=1e-12)
