"""The helpers generated code calls: zeros, adjoint sums, tier-2 calls through the tape and the dual
numbers, and structural zeros (a where's untaken branch gives 0, not nan, as on the tape)."""

from __future__ import annotations

import collections
import math

import numpy as np
import pytest
from adcore_source.runtime import (
    Masked,
    add_adjoint,
    broadcast_like,
    keep_zeros,
    method,
    plain,
    unbroadcast,
    zero_adjoint,
    zero_tangent,
)
from adcore_source.templates import vjp_expression
from adcore_source.tier2 import call_jvp, call_vjp

import adcore

A = np.array([[2.0, 1.0], [1.0, 3.0]])
X = np.array([0.5, -1.0, 2.0])


def test_zeros_keep_shape_and_dtype_and_work_for_scalars_and_containers():
    assert zero_tangent(1.5) == 0.0 and type(zero_tangent(1.5)) is float
    z = zero_tangent(np.float32(2.0))
    assert z == 0 and z.dtype == np.float32 and z.shape == ()
    z = zero_adjoint(np.ones((2, 3), np.float32))
    assert z.dtype == np.float32 and z.shape == (2, 3) and not z.any()
    pair = collections.namedtuple("Pair", "a b")
    zeros = zero_tangent([1.0, (2.0, pair(np.ones(2), 3.0))])
    assert zeros[0] == 0.0 and zeros[1][0] == 0.0 and isinstance(zeros[1][1], pair)
    np.testing.assert_array_equal(zeros[1][1].a, np.zeros(2))
    assert zero_tangent({"w": 1.0}) == {"w": 0.0}


def test_add_adjoint_treats_none_as_zero_and_adds_containers_entry_by_entry():
    assert add_adjoint(None, 2.0) == 2.0 and add_adjoint(2.0, None) == 2.0
    assert add_adjoint([1.0, None], [2.0, 3.0]) == [3.0, 3.0]  # not a concatenation
    assert add_adjoint((1.0,), (2.0,)) == (3.0,)
    assert add_adjoint({"a": 1.0}, {"a": 2.0, "b": 1.0}) == {"a": 3.0, "b": 1.0}
    both = add_adjoint(
        Masked(np.zeros(2), np.array([True, False])), Masked(np.ones(2), np.array([True, True]))
    )
    np.testing.assert_array_equal(both.zeros, [True, False])
    np.testing.assert_array_equal(
        add_adjoint(Masked(np.zeros(2), np.array([True, False])), np.ones(2)), [1.0, 1.0]
    )


def test_broadcast_like():
    wide = broadcast_like(2.0, np.ones((2, 3)))
    assert wide.shape == (2, 3) and wide.flags.writeable
    assert broadcast_like(1.0, np.ones(2, np.float32)).dtype == np.float32  # y's dtype
    t = np.ones(3)
    assert broadcast_like(t, X) is t


def test_method_is_one_function_per_name():
    assert method("sum") is method("sum")
    assert method("reshape")(np.arange(4.0), 2, 2).shape == (2, 2)


def _tape_vjp(f, *args, g):
    out, vjp_fn = adcore.vjp(f, *args, backend="reverse")
    return out, vjp_fn(g)


def test_call_vjp_with_static_arguments_agrees_with_the_tape():
    out, pullback = call_vjp(np.sum, (X * A[0, 0],), {"axis": 0})
    assert out == np.sum(X * 2.0)
    (cotangent, axis) = pullback(2.0)
    np.testing.assert_array_equal(cotangent, np.full(3, 2.0))
    assert axis is None  # an int: no derivative flows to it
    out, pullback = call_vjp(np.sum, (A, 1), {})  # axis given positionally
    np.testing.assert_array_equal(out, A.sum(1))
    assert pullback(np.ones(2))[1] is None


def test_call_vjp_of_tuple_outputs_with_zero_entries():
    out, pullback = call_vjp(np.linalg.eigh, (A,), {})
    np.testing.assert_allclose(out.eigenvalues, np.linalg.eigh(A).eigenvalues, rtol=1e-15)
    (got,) = pullback((np.array([1.0, 2.0]), None))
    _, (want,) = _tape_vjp(lambda a: np.linalg.eigh(a).eigenvalues, A, g=np.array([1.0, 2.0]))
    np.testing.assert_allclose(got, want, rtol=1e-12)
    out, pullback = call_vjp(np.linalg.slogdet, (A,), {})
    assert out.logabsdet == pytest.approx(np.log(5.0), rel=1e-15)
    np.testing.assert_allclose(pullback((None, 1.0))[0], np.linalg.inv(A).T, rtol=1e-12)


def test_call_vjp_of_a_list_with_plain_numbers_and_of_keyword_values():
    out, pullback = call_vjp(np.array, ([1.5, 2.0, 3],), {})
    np.testing.assert_array_equal(out, [1.5, 2.0, 3.0])
    ([a, b, c],) = pullback(np.array([1.0, 2.0, 3.0]))
    assert (a, b, c) == (1.0, 2.0, None)  # the int 3 is static
    out, pullback = call_vjp(lambda x, *, w: x * w, (2.0,), {"w": 3.0})
    assert out == 6.0 and pullback(1.0) == (3.0, 2.0)  # positional, then keyword
    out, pullback = call_vjp(lambda x, w: x * w, (2.0, 3.0), {}, active=(True, False))
    assert pullback(1.0) == (3.0, None)


def test_call_vjp_of_builtins_on_active_values_is_the_tapes_answer():
    out, pullback = call_vjp(max, (1.0, 2.0), {})
    assert out == 2.0
    first, second = pullback(1.0)
    assert plain(first) == 0.0 and second == 1.0
    out, pullback = call_vjp(abs, (-3.0,), {})
    assert out == 3.0 and plain(pullback(1.0)[0]) == -1.0


def test_call_vjp_of_a_dynamic_callee_and_a_method():
    out, pullback = call_vjp(method("sum"), (A,), {"axis": 0})
    np.testing.assert_array_equal(out, A.sum(axis=0))
    np.testing.assert_array_equal(pullback(np.ones(2))[0], np.ones((2, 2)))
    bound = A.sum  # a bound method of a constant: nothing to differentiate
    assert call_vjp(bound, (), {})[0] == A.sum()


def test_call_jvp_agrees_with_the_dual_numbers():
    out, dout = call_jvp(np.sum, (X,), (np.ones(3),), {"axis": 0})
    assert out == X.sum() and dout == 3.0
    out, dout = call_jvp(np.linalg.eigh, (A,), (np.eye(2),), {})
    _, want = adcore.jvp(np.linalg.eigh, (A,), (np.eye(2),), backend="forward")
    np.testing.assert_allclose(dout.eigenvalues, want.eigenvalues, rtol=1e-12)
    out, dout = call_jvp(np.array, ([1.0, 2.0],), ([None, 1.0],), {})  # a list with a zero entry
    np.testing.assert_array_equal(dout, [0.0, 1.0])
    out, dout = call_jvp(np.sum, (X,), (None,), {})
    assert out == X.sum() and dout is None


def test_call_jvp_of_a_math_function_keeps_maths_value():
    out, dout = call_jvp(math.fabs, (-3.0,), (1.0,), {})
    assert out == 3.0 and type(out) is float and dout == -1.0


def test_keep_zeros_zeroes_the_known_positions_and_keeps_the_mask():
    g = Masked(np.array([0.0, 1.0]), np.array([True, False]))
    with np.errstate(divide="ignore", invalid="ignore"):
        c = keep_zeros(g, plain(g) / np.array([0.0, 2.0]))  # 0/0 at the masked position
    np.testing.assert_array_equal(c.cotangent, [0.0, 0.5])
    assert keep_zeros(np.ones(2), 5.0) == 5.0  # no mask: the cotangent itself
    wide = keep_zeros(Masked(np.zeros((2, 2)), np.array([[True, False], [True, False]])), np.zeros((2, 1)))
    np.testing.assert_array_equal(wide.zeros, [[False], [False]])  # summed over a broadcast axis


def _log_vjp(b_log_x, x, log_x):
    text, names = vjp_expression("log", 0, "b_log_x", "log_x", ["x"], masked=True)
    return eval(text, {**names, "b_log_x": b_log_x, "x": x, "log_x": log_x})  # noqa: S307


def test_where_of_log_at_zero_gives_the_tapes_finite_gradient_not_nan():
    # def f(x): return np.sum(np.where(x > 0, np.log(x), 0.0)), as generated reverse code runs it
    x = np.array([0.0, 2.0, 4.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        log_x = np.log(x)
        c = x > 0
        y, where_pullback = call_vjp(np.where, (c, log_x, 0.0), {})
        s, sum_pullback = call_vjp(np.sum, (y,), {})
        (by,) = sum_pullback(1.0)
        _, b_log_x, _ = where_pullback(by)
        bx = plain(_log_vjp(b_log_x, x, log_x))
        want = adcore.grad(lambda x: np.sum(np.where(x > 0, np.log(x), 0.0)), backend="reverse")(x)
    np.testing.assert_array_equal(bx, want)
    assert np.isfinite(bx).all() and bx[0] == 0.0


def test_structural_zeros_move_through_ops_that_only_move_entries():
    # def f(x): return np.sum(np.where(c, np.log(x).reshape(2, 2), 0.0))
    x = np.array([0.0, 1.0, 2.0, 3.0])
    c = np.array([[False, True], [True, True]])
    with np.errstate(divide="ignore", invalid="ignore"):
        log_x = np.log(x)
        r, reshape_pullback = call_vjp(np.reshape, (log_x, (2, 2)), {})
        _, where_pullback = call_vjp(np.where, (c, r, 0.0), {})
        _, br, _ = where_pullback(np.ones((2, 2)))
        b_log_x, _ = reshape_pullback(br)
        assert isinstance(b_log_x, Masked)
        bx = plain(_log_vjp(b_log_x, x, log_x))
        want = adcore.grad(lambda x: np.sum(np.where(c, np.log(x).reshape(2, 2), 0.0)), backend="reverse")(x)
    np.testing.assert_array_equal(bx, want)
    assert bx[0] == 0.0


def _core_ops():
    from adcore.ops import CORE_OPS

    return sorted(op.name for op in CORE_OPS if not op.variadic)


@pytest.mark.parametrize("name", _core_ops())
def test_rules_applied_directly_agree_with_the_tape_and_the_dual_numbers(name):
    op = adcore.ops[name]
    rng = np.random.default_rng(0)
    for sample in (op.samples(rng, np.dtype("float64")) if op.samples else [])[:4]:
        args, params = sample.args, sample.params
        floats = [i for i, a in enumerate(args) if np.result_type(a).kind == "f" and op.is_differentiable(i)]
        if not floats:
            continue

        def of_floats(*values, args=args, params=params, floats=floats):
            full = list(args)
            for i, v in zip(floats, values):
                full[i] = v
            return op(*full, **params)

        # the params are constants here, as generated code flags them (an active one is refused)
        active = tuple(i in floats for i in range(len(args))) + (False,) * len(params)
        out, pullback = call_vjp(op, args, params, active=active)
        if isinstance(out, tuple):
            continue
        _, vjp_fn = adcore.vjp(of_floats, *(args[i] for i in floats), backend="reverse")
        g = rng.normal(size=np.shape(out)).astype(np.result_type(out))
        got, want = pullback(g), vjp_fn(g)
        for i, w in zip(floats, want):
            gi = plain(got[i]) if got[i] is not None else np.zeros_like(w)
            np.testing.assert_allclose(gi, w, rtol=1e-12, atol=1e-14)
            assert np.result_type(gi) == np.result_type(w)
        tangents = [rng.normal(size=np.shape(args[i])).astype(np.result_type(args[i])) for i in floats]
        full = [None] * len(args)
        for i, t in zip(floats, tangents):
            full[i] = t
        _, dout = call_jvp(op, args, tuple(full), params)
        _, want_dout = adcore.jvp(
            of_floats, tuple(args[i] for i in floats), tuple(tangents), backend="forward"
        )
        np.testing.assert_allclose(
            np.zeros_like(want_dout) if dout is None else dout, want_dout, rtol=1e-12, atol=1e-14
        )


def test_list_concatenation_and_repetition_are_refused_not_differentiated_as_arithmetic():
    from adcore_source.errors import SourceTransformError

    with pytest.raises(SourceTransformError, match=r"`\+` or `\*` of a list"):
        unbroadcast([1.0, 2.0], [3.0])  # the adjoint of xs in `xs + [y]`
    with pytest.raises(SourceTransformError, match="concatenation or repetition"):
        broadcast_like([1.0], [3.0, 4.0])  # the tangent of xs alone in `xs + [y]`
    np.testing.assert_array_equal(unbroadcast(np.ones((2, 3)), np.ones(3)), np.full(3, 2.0))


@pytest.mark.parametrize(
    ("fn", "args", "kwargs"),
    [
        (np.mean, (A,), {"axis": 0, "keepdims": True}),
        (np.maximum, (np.array([-1.0, 0.0, 2.0]), 0.0), {}),
        (np.dot, (A, X[:2]), {}),
        (np.sum, (A,), {"axis": 1}),
        (np.where, (np.array([True, False]), np.array([1.0, 2.0]), 3.0), {}),
    ],
)
def test_numpy_functions_called_with_their_ops_params_agree_with_the_tape(fn, args, kwargs):
    floats = [i for i, a in enumerate(args) if np.result_type(a).kind == "f"]

    def of_floats(*values):
        full = list(args)
        for i, v in zip(floats, values):
            full[i] = v
        return fn(*full, **kwargs)

    out, pullback = call_vjp(fn, args, kwargs)
    want_out, vjp_fn = adcore.vjp(of_floats, *(args[i] for i in floats), backend="reverse")
    np.testing.assert_array_equal(out, fn(*args, **kwargs))  # f's own value
    g = np.arange(1.0, 1.0 + np.size(out)).reshape(np.shape(out))
    got = pullback(g)
    for i, w in zip(floats, vjp_fn(g)):
        np.testing.assert_array_equal(plain(got[i]), w)


def test_a_method_of_a_value_gives_the_structural_zeros_of_its_numpy_function():
    # def f(x): return np.log(x).max() at a tie-free x: the max's losers are structural zeros
    x = np.array([0.0, 2.0, 4.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        log_x = np.log(x)
        _, pullback = call_vjp(method("max"), (log_x,), {})
        (b_log_x,) = pullback(1.0)
        assert isinstance(b_log_x, Masked)
        bx = plain(_log_vjp(b_log_x, x, log_x))
        want = adcore.grad(lambda x: np.log(x).max(), backend="reverse")(x)
    np.testing.assert_array_equal(bx, want)


def test_an_attribute_of_an_active_namedtuple_through_the_tape_and_the_dual_numbers():
    from adcore_source.runtime import attribute

    assert attribute("eigenvalues") is attribute("eigenvalues")
    e, _ = call_vjp(np.linalg.eigh, (A,), {})
    values, pullback = call_vjp(attribute("eigenvalues"), (e,), {})
    np.testing.assert_array_equal(values, e.eigenvalues)
    (be,) = pullback(np.ones(2))
    np.testing.assert_array_equal(be.eigenvalues, np.ones(2))
    assert not np.any(be.eigenvectors)  # no cotangent reached that field
    _, dvalues = call_jvp(attribute("eigenvalues"), (e,), ((np.ones(2), np.zeros((2, 2))),), {})
    np.testing.assert_array_equal(dvalues, np.ones(2))
