"""The forward backend's errors: bad tangents, bad options, an op without a JVP rule; each leaves nothing broken."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
import adcore.numpy as anp
from adcore.core import _stack

X = np.array([0.5, -1.0, 2.0])


def _sin_sum(x):
    return anp.sum(anp.sin(x))


def _works_afterwards():
    out, tangent = adcore.jvp(_sin_sum, (X,), (np.ones(3),))
    np.testing.assert_allclose(tangent, np.sum(np.cos(X)))
    assert _stack() == []


# --- jvp's tangents -------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["forward", "reverse"])
def test_a_tangent_of_the_wrong_shape_names_both_shapes(backend):
    with pytest.raises(
        adcore.InvalidInputError, match=r"tangent of argument 0 has shape \(2,\).*primal has shape \(3,\)"
    ):
        adcore.jvp(_sin_sum, (X,), (np.ones(2),), backend=backend)
    _works_afterwards()


@pytest.mark.parametrize("backend", ["forward", "reverse"])
def test_a_tangent_of_the_wrong_dtype_names_both_dtypes_and_the_fix(backend):
    with pytest.raises(
        adcore.InvalidInputError, match=r"dtype float32 but its primal has dtype float64.*asarray"
    ):
        adcore.jvp(_sin_sum, (X,), (np.ones(3, np.float32),), backend=backend)
    _works_afterwards()


def test_the_second_tangent_is_named_when_it_is_the_wrong_one():
    with pytest.raises(adcore.InvalidInputError, match="tangent of argument 1"):
        adcore.jvp(lambda x, y: x * y, (1.0, X), (1.0, np.ones((3, 1))))


def test_a_python_number_tangent_takes_its_primals_dtype():
    x = np.float32(0.5)
    out, tangent = adcore.jvp(anp.sin, (np.asarray(x),), (2.0,))
    assert tangent.dtype == np.float32
    np.testing.assert_allclose(tangent, 2 * np.cos(0.5), rtol=1e-6)


def test_primals_and_tangents_must_be_tuples_of_equal_length():
    with pytest.raises(adcore.InvalidInputError, match=r"jvp\(f, \(x,\), \(v,\)\)"):
        adcore.jvp(_sin_sum, X, np.ones(3))
    with pytest.raises(adcore.InvalidInputError, match="2 primal.*1 tangent"):
        adcore.jvp(lambda x, y: x * y, (X, X), (np.ones(3),))
    _works_afterwards()


def test_an_integer_primal_is_refused():
    with pytest.raises(adcore.InvalidInputError, match="int64"):
        adcore.jvp(_sin_sum, (np.arange(3),), (np.ones(3),))


def test_jvp_agrees_between_forward_and_the_reverse_backends_generic_jvp():
    rng = np.random.default_rng(0)
    a, v = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))

    def f(a):
        return anp.tanh(a @ a.T) * 2.0

    out_f, t_f = adcore.jvp(f, (a,), (v,), backend="forward")
    out_r, t_r = adcore.jvp(f, (a,), (v,), backend="reverse")
    np.testing.assert_allclose(out_f, out_r)
    np.testing.assert_allclose(t_f, t_r, rtol=1e-12)
    # and both equal the analytic derivative: d tanh(A A^T) = (1 - tanh^2) * (V A^T + A V^T)
    np.testing.assert_allclose(t_f, 2 * (1 - np.tanh(a @ a.T) ** 2) * (v @ a.T + a @ v.T), rtol=1e-12)


def test_jvp_of_a_function_that_ignores_its_input_is_zero():
    out, tangent = adcore.jvp(lambda x: np.ones((2, 2)), (X,), (np.ones(3),))
    np.testing.assert_array_equal(tangent, np.zeros((2, 2)))


def test_jvp_of_a_non_array_output_is_an_error():
    with pytest.raises(adcore.InvalidOutputError, match="'forward'.*returned str"):
        adcore.jvp(lambda x: "x", (X,), (np.ones(3),))  # a tuple of arrays is a pytree output
    _works_afterwards()


# --- options ----------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk_size", [0, -3, 2.5, "4"])
def test_a_bad_chunk_size_names_the_backend_and_what_it_must_be(chunk_size):
    with pytest.raises(adcore.InvalidInputError, match="'forward': chunk_size must be a positive int"):
        adcore.jacobian(anp.sin, backend="forward", chunk_size=chunk_size)(X)
    _works_afterwards()


# --- an op without a JVP rule ---------------------------------------------------------------


class _OnlyVjp:
    """A third-party op with a VJP rule and no JVP rule."""

    @adcore.hookimpl
    def adcore_register_ops(self, register):
        register(adcore.OpSpec("vjp_only", lambda x: 3 * x))

    @adcore.hookimpl
    def adcore_register_rules(self, register):
        register("vjp", "vjp_only", (lambda g, ans, x: 3 * g,))


def test_forward_on_an_op_without_a_jvp_rule_names_the_op_and_who_can(register_plugin):
    register_plugin(_OnlyVjp(), "only_vjp")
    f = lambda x: adcore.ops.vjp_only(x) * 2.0  # noqa: E731
    assert adcore.grad(f, backend="reverse")(1.5) == 6.0
    with pytest.raises(adcore.MissingRuleError) as info:
        adcore.grad(f, backend="forward")(1.5)
    message = str(info.value)
    for word in [
        "'vjp_only'",
        "'jvp'",
        "'forward'",
        "backends that can: numeric, reverse",  # numeric needs no rules
        "register('jvp', 'vjp_only'",
    ]:
        assert word in message, f"{word!r} not in {message!r}"
    with pytest.raises(adcore.MissingRuleError):
        adcore.hessian(f)(1.5)  # forward over reverse meets the same op
    assert _stack() == []
    _works_afterwards()
    np.testing.assert_allclose(adcore.grad(_sin_sum, backend="forward")(X), np.cos(X))


def test_an_op_without_a_jvp_rule_is_fine_when_no_tangent_reaches_it(register_plugin):
    register_plugin(_OnlyVjp(), "only_vjp")
    # the op is applied to a constant: forward never needs its rule
    f = lambda x: anp.sin(x) + adcore.ops.vjp_only(np.float64(1.0))  # noqa: E731
    assert adcore.grad(f, backend="forward")(0.0) == 1.0


def test_the_contract_jvp_gives_none_where_no_tangent_reaches_the_output():
    be = adcore.get_backend("forward")
    x, c = np.array([0.5, 1.5]), np.array([2.0, -1.0])
    value, tangents = be.jvp(lambda x, c: anp.sin(c), (x, c), (np.eye(2), None))
    np.testing.assert_array_equal(value, np.sin(c))
    assert tangents is None  # sin(c) does not depend on x
    value, tangents = be.jvp(lambda x, c: x * c, (x, c), (np.eye(2), None))
    np.testing.assert_array_equal(tangents, np.diag(c))  # row k: d(x c) along e_k
    _works_afterwards()
