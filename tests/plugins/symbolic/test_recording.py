"""The symbolic cache is checked by a recording of what f did (adcore_symbolic.recording):
whatever changed since f was traced (an attribute, a global, an argument object, an array
mutated in place, -0.0 for 0.0, np.random) gives the derivative of f as it is now, the same
as reverse's and the analytic one; a call where nothing changed is still a cache hit."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_symbolic.recording import Unkeyable, value_key

import adcore
import adcore.numpy as anp
from adcore.core import _stack

X = np.array([0.5, -1.25, 2.0])


def derivations() -> int:
    """How many times the symbolic backend has traced and compiled a derivative so far."""
    return adcore.api.get_backend("symbolic").derivations


def both(f, *args, argnums=0):
    """f's gradient by symbolic and by reverse."""
    return tuple(adcore.grad(f, argnums=argnums, backend=b)(*args) for b in ("symbolic", "reverse"))


def assert_right(f, expected, *args, argnums=0):
    symbolic, reverse = both(f, *args, argnums=argnums)
    np.testing.assert_allclose(symbolic, expected, rtol=1e-14)
    np.testing.assert_allclose(reverse, expected, rtol=1e-14)


# --- class 6: what the cache used to miss -----------------------------------------------------


class Scaled:
    """A callable object whose attribute f reads."""

    def __init__(self, a: float) -> None:
        self.a = a

    def __call__(self, x):
        return anp.sum(anp.sin(self.a * x))


def test_a_callable_object_whose_attribute_changes():
    f = Scaled(2.0)
    g = adcore.grad(f, backend="symbolic")
    np.testing.assert_allclose(g(X), 2.0 * np.cos(2.0 * X), rtol=1e-14)  # d sin(a x)/dx = a cos(a x)
    f.a = 3.0
    np.testing.assert_allclose(g(X), 3.0 * np.cos(3.0 * X), rtol=1e-14)
    assert_right(f, 3.0 * np.cos(3.0 * X), X)


SCALE = 2.0


def scaled_by_global(x):
    return anp.sum(x**2) * SCALE


def test_a_rebound_global():
    global SCALE
    g = adcore.grad(scaled_by_global, backend="symbolic")
    try:
        np.testing.assert_allclose(g(X), 4.0 * X, rtol=1e-15)  # d (s x^2)/dx = 2 s x
        SCALE = 5.0
        np.testing.assert_allclose(g(X), 10.0 * X, rtol=1e-15)
        assert_right(scaled_by_global, 10.0 * X, X)
    finally:
        SCALE = 2.0


class Params:
    def __init__(self, w: float) -> None:
        self.w = w


def test_a_mutable_argument_object():
    f = lambda x, p: anp.sum(anp.exp(p.w * x))  # noqa: E731
    g = adcore.grad(f, argnums=0, backend="symbolic")
    p = Params(0.5)
    np.testing.assert_allclose(g(X, p), 0.5 * np.exp(0.5 * X), rtol=1e-14)  # d e^(w x)/dx = w e^(w x)
    p.w = -2.0
    np.testing.assert_allclose(g(X, p), -2.0 * np.exp(-2.0 * X), rtol=1e-14)
    assert_right(f, -2.0 * np.exp(-2.0 * X), X, p)


def test_zero_and_negative_zero_as_a_static_argument():
    f = lambda x, s: x * x * np.copysign(1.0, s)  # noqa: E731
    g = adcore.grad(f, argnums=0, backend="symbolic")
    assert g(2.0, 0.0) == 4.0  # d (±x^2)/dx at 2 = ±4
    assert g(2.0, -0.0) == -4.0
    assert g(2.0, 0.0) == 4.0
    assert both(f, 2.0, -0.0) == (-4.0, -4.0)


def test_a_threshold_a_comparison_reads():
    t = [0.0]
    f = lambda x: anp.sum(anp.where(x > t[0], x, 3.0 * x))  # noqa: E731
    g = adcore.grad(f, backend="symbolic")
    np.testing.assert_array_equal(g(X), [1.0, 3.0, 1.0])
    t[0] = 1.0
    np.testing.assert_array_equal(g(X), [3.0, 3.0, 1.0])
    assert_right(f, [3.0, 3.0, 1.0], X)


def test_np_random_inside_f_is_never_stale():
    # f runs more than once per call (traced, or replayed to check the cache), each time with
    # new numbers; the answer always belongs to one run: its value and its gradient agree
    f = lambda x: anp.sum(x * np.random.normal(size=3))  # noqa: E731
    gradients = []
    for _ in range(3):
        value, gradient = adcore.value_and_grad(f, backend="symbolic")(X)
        np.testing.assert_allclose(value, gradient @ X, rtol=1e-14)  # f(x) = c . x, df/dx = c
        gradients.append(gradient)
    assert not np.array_equal(gradients[1], gradients[2])


def test_a_change_seen_through_nested_symbolic_derivatives():
    c = [2.0]
    f = lambda x: anp.sum(c[0] * x**3)  # noqa: E731
    h = adcore.hessian(f, inner="symbolic", outer="symbolic")
    np.testing.assert_allclose(h(X), np.diag(6 * 2.0 * X), rtol=1e-15)  # d^2 (c x^3) = 6 c x
    before = derivations()
    h(X)
    assert derivations() == before
    c[0] = 5.0
    np.testing.assert_allclose(h(X), np.diag(6 * 5.0 * X), rtol=1e-15)
    np.testing.assert_allclose(
        adcore.hessian(f, inner="reverse", outer="forward")(X), np.diag(30 * X), rtol=1e-15
    )


# --- class 5: a constant array mutated in place -----------------------------------------------


@pytest.mark.parametrize("mode", ["elementwise", "full"])
def test_a_constant_mutated_between_calls(mode):
    k = np.array([1.0, 2.0, 3.0])
    if mode == "elementwise":
        f = lambda x: anp.sum(anp.sin(x * k))  # noqa: E731
    else:  # a matmul is not elementwise: one symbol per element
        f = lambda x: anp.sum(anp.sin(anp.stack([x, x, x]) @ k))  # noqa: E731
    g = adcore.grad(f, backend="symbolic")
    g(X)
    k *= 10
    if mode == "elementwise":
        expected = k * np.cos(X * k)
    else:
        expected = 3 * np.cos(X @ k) * k  # each row of stack([x, x, x]) @ k is x . k
    np.testing.assert_allclose(g(X), expected, rtol=1e-13)
    assert_right(f, expected, X)


def test_a_constant_mutated_inside_f_after_an_op_read_it():
    k = np.array([1.0, 2.0, 3.0])

    def f(x):
        y = anp.sum(x * k)
        k[:] = 10 * k  # in place, after the product read k: d/dx is k as it was, then 10 k
        return y + anp.sum(x * k)

    for _ in range(2):  # the second call is a replay of the recording
        k[:] = [1.0, 2.0, 3.0]
        np.testing.assert_array_equal(adcore.grad(f, backend="symbolic")(X), [11.0, 22.0, 33.0])


# --- a hit is still a hit -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "f, args",
    [
        (Scaled(2.0), (X,)),
        (lambda x, p: anp.sum(anp.exp(p.w * x)), (X, Params(0.5))),
        (lambda x: anp.sum(anp.where(x > 0.0, x, 3.0 * x) * np.arange(3.0)), (X,)),
        (lambda x: anp.sum(anp.stack([x, x]) @ np.ones((3, 2))), (X,)),
        (lambda x, s: x * x * np.copysign(1.0, s), (2.0, -0.0)),
    ],
    ids=["object", "argument object", "where", "full mode", "negative zero"],
)
def test_nothing_changed_is_a_hit(f, args):
    g = adcore.grad(f, argnums=0, backend="symbolic")
    first = g(*args)
    before = derivations()
    np.testing.assert_array_equal(g(*args), first)
    assert derivations() == before


def test_what_a_recording_cannot_compare_is_not_cached():
    # a range as an index: the recording has no content key for it, so every call derives
    g = adcore.grad(lambda x: anp.sum(x[range(2)] ** 2), backend="symbolic")
    for _ in range(2):
        before = derivations()
        np.testing.assert_array_equal(g(X), [1.0, -2.5, 0.0])  # d (x0^2 + x1^2) = (2 x0, 2 x1, 0)
        assert derivations() == before + 1


def test_a_function_that_now_raises_raises_and_the_next_call_works():
    state = {"fail": False}

    def f(x):
        if state["fail"]:
            raise KeyError("boom")
        return anp.sum(x * x)

    g = adcore.grad(f, backend="symbolic")
    g(X)
    state["fail"] = True
    with pytest.raises(KeyError, match="boom"):
        g(X)
    assert _stack() == []
    state["fail"] = False
    np.testing.assert_array_equal(g(X), 2 * X)


# --- class 12: NaN constants, refused by name ----------------------------------------------------


@pytest.mark.parametrize(
    "f, op",
    [
        (lambda x: anp.maximum(x, np.nan), "maximum"),
        (lambda x: x * np.nan, "multiply"),  # sympy's nan would give the derivative 0, not nan
        (lambda x: anp.sum(x * np.array([np.nan, 1.0, 2.0])), "multiply"),
        (lambda x: anp.sum(anp.where(x > np.nan, x, 2 * x)), "greater"),
        (lambda x: anp.sum(anp.clip(x, np.nan, 2.0)), "clip"),
    ],
    ids=["maximum", "multiply", "array", "comparison", "param"],
)
def test_a_nan_constant_is_refused_by_name(f, op):
    x = np.array([1.0, 2.0, 3.0])
    with pytest.raises(adcore.errors.InvalidValueError) as info:
        adcore.grad(lambda v: anp.sum(f(v)), backend="symbolic")(x)
    assert isinstance(info.value, ValueError)
    for word in ["'symbolic'", repr(op), "NaN", "reverse"]:
        assert word in str(info.value), word
    assert _stack() == []
    np.testing.assert_array_equal(
        adcore.grad(lambda v: anp.sum(anp.maximum(v, 2.0)), backend="symbolic")(x), [0, 0.5, 1]
    )


# --- value_key -----------------------------------------------------------------------------------


def test_value_key_tells_apart_what_python_equality_does_not():
    assert value_key(0.0) != value_key(-0.0)
    assert len({value_key(v) for v in (1, 1.0, True, np.float64(1.0), np.float32(1.0))}) == 5
    assert value_key(np.nan) == value_key(np.nan)  # the same bits: the same constant
    assert value_key(np.zeros(2)) != value_key(np.zeros((2, 1)))
    assert value_key((slice(1, None), Ellipsis)) == value_key((slice(1, None), Ellipsis))
    with pytest.raises(Unkeyable):
        value_key(object())
    with pytest.raises(Unkeyable):
        value_key(np.array([object()]))


def test_f_catching_the_replays_mismatch_is_still_a_miss():
    a = [2.0]

    def f(x):
        try:
            return x * a[0]
        except Exception:  # catches the replay's stop too, then does what the recording did
            return x * 2.0

    g = adcore.grad(f, backend="symbolic")
    assert g(1.5) == 2.0
    a[0] = 5.0
    assert g(1.5) == 5.0  # d (a x)/dx = a, as f computes now


# --- class 12: constants NumPy converts, which sympy read otherwise (raw TypeErrors before) ------

MASK = np.array([True, False, True])


@pytest.mark.parametrize(
    "f, expected",
    [
        (lambda x: anp.sum(x * MASK), [1.0, 0.0, 1.0]),  # elementwise mode: the mask became a symbol
        (lambda x: anp.sum(x.reshape(3, 1) * MASK), [2.0, 2.0, 2.0]),  # full mode
        (lambda x: anp.sum(x * True), [1.0, 1.0, 1.0]),
        (lambda x: anp.sum(anp.where(MASK, x, 0.0) * MASK), [1.0, 0.0, 1.0]),  # where's condition stays logic
        (lambda x: anp.sum(x * [1.0, 2.0, 3.0]), [1.0, 2.0, 3.0]),
        (lambda x: anp.sum(x * (1.0, 2.0, 3.0)), [1.0, 2.0, 3.0]),
    ],
    ids=["bool array", "bool array, full", "True", "where", "list", "tuple"],
)
def test_constants_take_the_form_numpy_gives_them(f, expected):
    assert_right(f, expected, X)


def test_a_bool_mask_keeps_float32():
    assert (
        adcore.grad(lambda x: anp.sum(x * MASK), backend="symbolic")(X.astype(np.float32)).dtype == np.float32
    )


def test_writing_into_a_gradient_leaves_the_cached_derivative_alone():
    w = np.array([1.0, 2.0, 3.0])
    g = adcore.grad(lambda x: anp.sum(w * x), backend="symbolic")
    first = g(X)
    first *= 10  # the caller owns it (class 7)
    np.testing.assert_array_equal(g(X), w)
    np.testing.assert_array_equal(w, [1.0, 2.0, 3.0])
