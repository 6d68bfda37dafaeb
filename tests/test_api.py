"""adcore.api: differentiate/grad/jacobian/value_and_grad/vjp/backends, their shapes, dtypes and errors."""

from __future__ import annotations

import gc
import sys

import numpy as np
import pytest

import adcore
from adcore.core import Trace, new_trace
from adcore.errors import InvalidValueError

X = np.array([0.5, -1.0, 2.0])


def _square_sum(x):
    return np.sum(x * x)


def _open_levels() -> int:
    """How many transformations are open in this thread (a new one sits one level above them)."""
    with new_trace(Trace) as probe:
        return probe.level - 1


def _check_clean_state() -> None:
    """No transformation is left open and a plain gradient is right: d/dx sum(x^2) = 2x."""
    assert _open_levels() == 0
    np.testing.assert_allclose(adcore.grad(_square_sum)(X), 2 * X)


# --- backends ------------------------------------------------------------------------


def test_backends_lists_reverse_sorted():
    names = adcore.backends()
    assert "reverse" in names  # the reverse plugin is installed in this checkout
    assert names == sorted(names)


def test_get_backend_returns_the_named_backend():
    backend = adcore.get_backend("reverse")
    assert isinstance(backend, adcore.Backend)
    assert backend.name == "reverse"


# --- shapes --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("out_shape", "arg_shape"),
    [((), ()), ((), (3,)), ((3,), ()), ((2, 3), (2, 3)), ((4,), (2, 3)), ((2, 1), (3,))],
)
def test_differentiate_shape_is_out_shape_plus_arg_shape(out_shape, arg_shape):
    c = np.arange(1.0, 1.0 + np.prod(out_shape, dtype=int)).reshape(out_shape)

    def f(x):
        return c * np.sum(x)  # out[i] = c[i] * sum(x), so d out[i] / d x[j] = c[i]

    x = np.ones(arg_shape)
    jac = adcore.differentiate(f, backend="reverse")(x)
    assert jac.shape == out_shape + arg_shape
    np.testing.assert_allclose(jac, np.multiply.outer(c, np.ones(arg_shape)))


def test_jacobian_is_differentiate():
    assert adcore.jacobian is adcore.differentiate


def test_jacobian_of_elementwise_sin_is_diagonal_cos():
    jac = adcore.jacobian(np.sin)(X)
    np.testing.assert_allclose(jac, np.diag(np.cos(X)))  # d sin(x_i)/d x_j = cos(x_i) [i == j]


def test_grad_of_python_float_is_0d_array():
    g = adcore.grad(lambda x: x**3)(2.0)
    assert np.shape(g) == ()
    assert g == pytest.approx(12.0)  # 3 x^2 at x = 2


# --- argnums -------------------------------------------------------------------------


def test_tuple_argnums_returns_a_tuple_in_order():
    grads = adcore.grad(lambda a, b: np.sum(a * b**2), argnums=(1, 0))(X, 3 * X)
    assert isinstance(grads, tuple)
    assert len(grads) == 2
    np.testing.assert_allclose(grads[0], 2 * X * 3 * X)  # d/db a b^2 = 2ab
    np.testing.assert_allclose(grads[1], (3 * X) ** 2)  # d/da a b^2 = b^2


def test_one_element_tuple_argnums_returns_a_one_element_tuple():
    grads = adcore.grad(_square_sum, argnums=(0,))(X)
    assert isinstance(grads, tuple)
    assert len(grads) == 1
    np.testing.assert_allclose(grads[0], 2 * X)


def test_jacobian_tuple_argnums_shapes():
    a, b = np.ones(2), np.ones(3)
    ja, jb = adcore.jacobian(lambda a, b: a[:, None] * b, argnums=(0, 1))(a, b)
    assert ja.shape == (2, 3, 2)
    assert jb.shape == (2, 3, 3)


def test_negative_argnums_counts_from_the_last_positional_argument():
    a, b = X, np.array([4.0, 5.0, 6.0])
    g = adcore.grad(lambda a, b: np.sum(a * b), argnums=-1)(a, b)
    np.testing.assert_allclose(g, a)  # d/db sum(a b) = a


def test_argnums_leaves_other_arguments_plain():
    seen = []

    def f(a, b):
        seen.append(type(b))
        return np.sum(a * b)

    adcore.grad(f, argnums=0)(X, X)
    assert seen == [np.ndarray]


# --- dtypes --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_grad_keeps_the_input_dtype(dtype):
    x = X.astype(dtype)
    g = adcore.grad(lambda x: np.sum(np.sin(x) * 2.0))(x)
    assert g.dtype == dtype
    np.testing.assert_allclose(g, 2 * np.cos(x), rtol=1e-6)


def test_jacobian_keeps_float32():
    x = X.astype(np.float32)
    jac = adcore.jacobian(lambda x: x * x)(x)
    assert jac.dtype == np.float32


def test_float32_gradient_stays_float32_against_float64_constants():
    x = X.astype(np.float32)
    g = adcore.grad(lambda x: np.sum(x * np.float64(2.0)))(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, [2.0, 2.0, 2.0])


def test_value_and_grad_float32():
    x = X.astype(np.float32)
    value, g = adcore.value_and_grad(lambda x: np.sum(x * x))(x)
    assert np.result_type(value) == np.float32
    assert g.dtype == np.float32


# --- keyword arguments and constants -------------------------------------------------


def test_kwargs_pass_through_undifferentiated():
    seen = []

    def f(x, scale=1.0):
        seen.append(scale)
        return np.sum(x) * scale

    g = adcore.grad(f)(X, scale=3.0)
    np.testing.assert_allclose(g, [3.0, 3.0, 3.0])  # d/dx 3 sum(x) = 3
    assert seen == [3.0]  # a plain float, not a tracer


@pytest.mark.parametrize(
    "f",
    [lambda x: 3.0, lambda x: np.float64(3.0), lambda x: np.sum(x * 0.0), lambda x: 3],
    ids=["python-float", "numpy-scalar", "times-zero", "int"],
)
def test_output_independent_of_input_gives_zeros(f):
    g = adcore.grad(f)(X)
    assert g.shape == X.shape
    np.testing.assert_array_equal(g, np.zeros(3))


def test_constant_array_output_gives_zero_jacobian_of_right_shape_and_dtype():
    x = np.ones(3, dtype=np.float32)
    jac = adcore.jacobian(lambda x: np.ones((2, 2)))(x)
    assert jac.shape == (2, 2, 3)
    assert jac.dtype == np.float32
    np.testing.assert_array_equal(jac, 0.0)


def test_stop_gradient_gives_zeros():
    g = adcore.grad(lambda x: np.sum(adcore.ops.stop_gradient(x) * 2.0))(X)
    np.testing.assert_array_equal(g, np.zeros(3))


# --- value_and_grad and vjp ----------------------------------------------------------


def test_value_and_grad_returns_value_and_gradient():
    value, g = adcore.value_and_grad(_square_sum)(X)
    assert value == pytest.approx(np.sum(X * X))
    np.testing.assert_allclose(g, 2 * X)


def test_value_and_grad_evaluates_f_once():
    calls = []

    def f(x):
        calls.append(1)
        return np.sum(x)

    adcore.value_and_grad(f)(X)
    assert len(calls) == 1


@pytest.mark.parametrize("backend", ["reverse", "forward", "numeric", "symbolic", "source"])
def test_value_and_jacobian_is_numpys_value_and_the_jacobian(backend):
    a, b = np.array([0.5, 1.0, 2.0]), np.array([3.0, -1.0])

    def f(a, b):
        return np.sin(a)[:, None] * b

    value, (ja, jb) = adcore.value_and_jacobian(f, argnums=(0, 1), backend=backend)(a, b)
    assert value.dtype == np.float64 and np.array_equal(value, f(a, b))  # NumPy's, bit for bit
    expected = adcore.jacobian(f, argnums=(0, 1), backend=backend)(a, b)
    np.testing.assert_allclose(ja, expected[0], rtol=1e-7 if backend == "numeric" else 1e-15)
    np.testing.assert_allclose(jb, expected[1], rtol=1e-7 if backend == "numeric" else 1e-15)
    np.testing.assert_allclose(ja[:, 1, :], np.diag(np.cos(a) * b[1]), rtol=1e-7)  # out.shape + a.shape


def test_value_and_jacobian_evaluates_f_once_and_takes_has_aux():
    calls = []

    def f(x):
        calls.append(1)
        return x * x, "aux"

    (value, aux), jac = adcore.value_and_jacobian(f, has_aux=True)(X)
    assert len(calls) == 1 and aux == "aux"
    np.testing.assert_allclose(value, X * X)
    np.testing.assert_allclose(jac, np.diag(2 * X))
    with pytest.raises(adcore.InvalidInputError, match="argnums"):
        adcore.value_and_jacobian(f, argnum=0)


def test_vjp_returns_output_and_a_tuple_of_cotangents():
    a, b = X, np.array([4.0, 5.0, 6.0])
    out, vjp_fn = adcore.vjp(lambda a, b: a * b, a, b)
    np.testing.assert_allclose(out, a * b)
    ct = np.array([1.0, 10.0, 100.0])
    ga, gb = vjp_fn(ct)
    np.testing.assert_allclose(ga, ct * b)  # (d out / d a)^T ct = ct * b
    np.testing.assert_allclose(gb, ct * a)


def test_vjp_fn_can_be_called_twice():
    out, vjp_fn = adcore.vjp(np.sin, X)
    first = vjp_fn(np.ones(3))[0]
    second = vjp_fn(2 * np.ones(3))[0]
    np.testing.assert_allclose(first, np.cos(X))
    np.testing.assert_allclose(second, 2 * np.cos(X))


def test_vjp_keeps_float32():
    x = X.astype(np.float32)
    out, vjp_fn = adcore.vjp(lambda x: x * x, x)
    assert out.dtype == np.float32
    assert vjp_fn(np.ones(3, np.float32))[0].dtype == np.float32


def test_vjp_rejects_a_cotangent_of_the_wrong_shape():
    _, vjp_fn = adcore.vjp(np.sin, X)
    with pytest.raises(ValueError, match=r"\(2,\).*\(3,\)"):
        vjp_fn(np.ones(2))


def test_vjp_rejects_integer_primals():
    with pytest.raises(adcore.InvalidInputError, match="int"):
        adcore.vjp(np.sin, np.arange(3))


# --- nesting -------------------------------------------------------------------------


def test_grad_of_grad():
    g2 = adcore.grad(adcore.grad(lambda x: x**3))(2.0)
    assert g2 == pytest.approx(12.0)  # d^2/dx^2 x^3 = 6x at x = 2


def test_nested_grad_does_not_confuse_perturbations():
    # Siskind & Pearlmutter's example: d/dx [x * d/dy (x + y)] = d/dx x = 1.
    g = adcore.grad(lambda x: x * adcore.grad(lambda y: x + y)(1.0))(1.0)
    assert g == pytest.approx(1.0)


# --- errors --------------------------------------------------------------------------


def _raises_inside(x):
    _ = x * 2.0
    raise RuntimeError("raised inside f")


ERROR_CASES = [
    pytest.param(
        lambda: adcore.grad(_square_sum, backend="no_such_backend")(X),
        adcore.UnknownBackendError,
        KeyError,
        ["'no_such_backend'", "installed backends"],
        id="unknown-backend",
    ),
    pytest.param(
        lambda: adcore.grad(lambda x: x * 2.0)(X),
        adcore.NonScalarOutputError,
        TypeError,
        ["scalar", "(3,)", "jacobian"],
        id="non-scalar-grad",
    ),
    pytest.param(
        lambda: adcore.value_and_grad(lambda x: x * 2.0)(X),
        adcore.NonScalarOutputError,
        TypeError,
        ["scalar", "(3,)"],
        id="non-scalar-value-and-grad",
    ),
    pytest.param(
        lambda: adcore.grad(lambda x: np.sum(x))(np.array([1, 2, 3])),
        adcore.InvalidInputError,
        TypeError,
        ["argument 0", "int64", "float"],
        id="integer-array",
    ),
    pytest.param(
        lambda: adcore.grad(lambda x: x * x)(3),
        adcore.InvalidInputError,
        TypeError,
        ["argument 0", "int", "float"],
        id="python-int",
    ),
    pytest.param(
        lambda: adcore.grad(lambda a, b: np.sum(a * b), argnums=1)(X, np.array([1, 2, 3])),
        adcore.InvalidInputError,
        TypeError,
        ["argument 1", "int64"],
        id="integer-second-argument",
    ),
    pytest.param(
        lambda: adcore.grad(_square_sum, argnums=1)(X),
        adcore.InvalidArgnumsError,
        ValueError,
        ["argnums", "out of range", "1 positional"],
        id="argnums-too-large",
    ),
    pytest.param(
        lambda: adcore.grad(_square_sum, argnums=-2)(X),
        adcore.InvalidArgnumsError,
        ValueError,
        ["argnums", "out of range"],
        id="argnums-too-negative",
    ),
    pytest.param(
        lambda: adcore.grad(lambda a, b: np.sum(a * b), argnums=(0, 2))(X, X),
        adcore.InvalidArgnumsError,
        ValueError,
        ["argnums", "out of range", "2 positional"],
        id="argnums-tuple-out-of-range",
    ),
    pytest.param(
        lambda: adcore.grad(_square_sum, argnums=())(X),
        adcore.InvalidArgnumsError,
        ValueError,
        ["argnums", "non-empty"],
        id="argnums-empty",
    ),
    pytest.param(
        lambda: adcore.grad(_square_sum, argnums=0.0)(X),
        adcore.InvalidArgnumsError,
        ValueError,
        ["argnums", "int"],
        id="argnums-float",
    ),
    pytest.param(
        lambda: adcore.grad(3.0)(X),
        adcore.InvalidInputError,
        TypeError,
        ["function", "float"],
        id="non-callable",
    ),
    pytest.param(
        lambda: adcore.grad(lambda x: (np.sum(x), np.sum(x)))(X),
        adcore.NonScalarOutputError,
        TypeError,
        ["tuple", "one scalar output", "has_aux=True"],
        id="tuple-output",
    ),
    pytest.param(
        lambda: adcore.jacobian(lambda x: None)(X),
        adcore.InvalidOutputError,
        TypeError,
        ["None", "holds no array"],
        id="none-output",
    ),
    pytest.param(
        lambda: adcore.grad(lambda x: np.sum(np.histogram(x)[0]))(X),
        adcore.UnsupportedFunctionError,
        TypeError,
        ["numpy.histogram", "register"],
        id="np-histogram",
    ),
    pytest.param(
        # eigenvalues +-i: complex, as NumPy's (a real spectrum comes back real, as NumPy's does)
        lambda: adcore.grad(lambda x: np.sum(np.linalg.eig(x)[0]))(np.array([[0.0, -1.0], [1.0, 0.0]])),
        adcore.InvalidOutputError,
        TypeError,
        ["grad needs a real-valued function", "complex128", "holomorphic=True", "adcore.vjp"],
        id="np-linalg-eig-complex-output",
    ),
    pytest.param(
        lambda: adcore.grad(lambda x: np.sum(np.asarray(x)))(X),
        adcore.AdcoreError,
        TypeError,
        ["traced", "stop_gradient"],
        id="np-asarray",
    ),
]


@pytest.mark.parametrize(("call", "error", "builtin", "words"), ERROR_CASES)
def test_error_is_typed_says_what_is_wrong_and_leaves_state_clean(call, error, builtin, words):
    with pytest.raises(error) as info:
        call()
    assert isinstance(info.value, adcore.AdcoreError)
    assert isinstance(info.value, builtin)
    message = str(info.value)
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"
    _check_clean_state()


def test_unknown_backend_message_lists_every_installed_backend():
    with pytest.raises(adcore.UnknownBackendError) as info:
        adcore.differentiate(_square_sum, backend="nope")(X)
    for name in adcore.backends():
        assert name in str(info.value)


def test_unknown_backend_message_suggests_a_close_name():
    with pytest.raises(adcore.UnknownBackendError, match="did you mean 'reverse'"):
        adcore.grad(_square_sum, backend="revers")(X)


def test_unknown_backend_option_is_an_error_naming_the_option():
    with pytest.raises(
        adcore.InvalidInputError, match="backend 'reverse' has no option 'no_such_option'"
    ) as info:
        adcore.grad(_square_sum, no_such_option=1)  # refused when the derivative is made, before any call
    assert isinstance(info.value, TypeError)
    _check_clean_state()


def test_a_misspelled_option_is_refused_with_the_backends_options_and_a_suggestion():
    with pytest.raises(
        adcore.InvalidInputError,
        match=r"'chunksize' \(did you mean 'chunk_size'\?\)\. Its options: chunk_size",
    ):
        adcore.jacobian(_square_sum, backend="forward", chunksize=4)
    with pytest.raises(
        adcore.InvalidInputError, match="'reverse' has no option 'chunk_size'. Its options: none"
    ):
        adcore.vjp(_square_sum, X, chunk_size=4)
    with pytest.raises(adcore.InvalidInputError, match="'forward' has no option 'chunk_size'"):
        adcore.jvp(_square_sum, (X,), (X,), chunk_size=4)  # one direction: no chunks to size
    # a backend's real option passes
    np.testing.assert_allclose(adcore.jacobian(_square_sum, backend="forward", chunk_size=2)(X), 2 * X)
    _check_clean_state()


def test_exception_inside_f_propagates_and_leaves_the_next_call_correct():
    with pytest.raises(RuntimeError, match="raised inside f"):
        adcore.grad(_raises_inside)(X)
    _check_clean_state()


def test_exception_inside_nested_f_leaves_the_next_call_correct():
    def outer(x):
        return adcore.grad(_raises_inside)(x)

    with pytest.raises(RuntimeError, match="raised inside f"):
        adcore.grad(outer)(2.0)
    _check_clean_state()


# --- scale ---------------------------------------------------------------------------


def test_a_long_chain_does_not_hit_the_recursion_limit():
    steps, c = 100_000, 1.0000001

    def f(x):
        for _ in range(steps):
            x = x * c
        return x

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1_000)  # far below the chain's length
    try:
        g = adcore.grad(f)(1.0)
    finally:
        sys.setrecursionlimit(limit)
    assert g == pytest.approx(c**steps, rel=1e-9)  # d/dx c^n x = c^n


def test_a_long_sin_chain_gives_the_product_of_cosines():
    steps, x0 = 100_000, 1.0

    def f(x):
        for _ in range(steps):
            x = np.sin(x)
        return x

    # chain rule: d x_n / d x_0 = prod_k cos(x_k) over the iterates x_0 .. x_{n-1}
    expected, x = 1.0, x0
    for _ in range(steps):
        expected *= np.cos(x)
        x = np.sin(x)
    assert adcore.grad(f)(x0) == pytest.approx(expected, rel=1e-9)


def test_memory_stays_flat_over_many_grad_calls():
    g = adcore.grad(lambda x: np.sum(np.sin(x) * x))
    x = np.linspace(-1.0, 1.0, 8)
    for _ in range(1_000):
        g(x)
    gc.collect()
    after_warmup = len(gc.get_objects())
    for _ in range(9_000):
        g(x)
    gc.collect()
    after_all = len(gc.get_objects())
    # live objects, counted (not the allocator's bytes): a call that left one tracer, node or
    # tape behind would add 9000 (appending each call's product to a list adds 2 per call)
    assert after_all - after_warmup < 1_000


# --- every backend: argnums naming one argument twice (issue 15, class 3) ----------------

BACKENDS = ["reverse", "forward", "numeric", "symbolic"]
# numeric estimates: its answers agree with the exact ones to about 1e-6 here
TOL = {"numeric": 1e-6}


def _cube_times(x, y):
    return x**3 * y  # d/dx = 3 x^2 y, d^2/dx^2 = 6 x y, d^2/dxdy = 3 x^2


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("argnums", [(0, 0), (0, -2), (-2, 0, 1, 0)])
def test_an_argument_named_twice_gets_its_full_derivative_at_each_place(backend, argnums):
    # JAX's answer: each position named in argnums gets d f / d args[position], whatever else is named
    full = {0: 3 * 2.0**2 * 5.0, 1: 2.0**3}  # at x = 2, y = 5
    rtol = TOL.get(backend, 1e-12)
    for make in (adcore.grad, adcore.jacobian):
        got = make(_cube_times, argnums=argnums, backend=backend)(2.0, 5.0)
        assert len(got) == len(argnums)
        np.testing.assert_allclose(got, [full[i % 2] for i in argnums], rtol=rtol)
    value, got = adcore.value_and_grad(_cube_times, argnums=argnums, backend=backend)(2.0, 5.0)
    assert value == pytest.approx(40.0)
    np.testing.assert_allclose(got, [full[i % 2] for i in argnums], rtol=rtol)
    _check_clean_state()


@pytest.mark.parametrize("backend", BACKENDS)
def test_repeated_argnums_give_separate_arrays(backend):
    g1, g2 = adcore.grad(_square_sum, argnums=(0, 0), backend=backend)(X)
    assert not np.shares_memory(g1, g2)
    g1 *= 0.0  # writing into one leaves the other as it was
    np.testing.assert_allclose(g2, 2 * X, rtol=TOL.get(backend, 1e-12))


def test_repeated_argnums_with_return_error_pair_each_derivative_with_its_error():
    # with return_error=True a tuple argnums gives (derivatives, errors), one of each per position
    (g1, g2), (e1, e2) = adcore.grad(_cube_times, argnums=(0, 0), backend="numeric", return_error=True)(
        2.0, 5.0
    )
    np.testing.assert_allclose([g1, g2], [60.0, 60.0], rtol=1e-6)  # 3 x^2 y at (2, 5)
    assert e1 == e2
    assert not np.shares_memory(e1, e2)
    value, (g, e) = adcore.value_and_grad(_cube_times, argnums=(1, -1), backend="numeric", return_error=True)(
        2.0, 5.0
    )
    assert value == pytest.approx(40.0)
    np.testing.assert_allclose(g, [8.0, 8.0], rtol=1e-6)  # x^3 at x = 2
    assert len(e) == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_hessian_with_an_argument_named_twice(backend):
    # analytic: H_xx = 6 x y = 60, H_xy = 3 x^2 = 12 at (2, 5)
    h = adcore.hessian(_cube_times, argnums=(0, 0, 1), backend=backend)(2.0, 5.0)
    expected = [[60.0, 60.0, 12.0], [60.0, 60.0, 12.0], [12.0, 12.0, 0.0]]
    np.testing.assert_allclose(np.array(h, dtype=float), expected, rtol=1e-5, atol=1e-5)
    h = adcore.hessian(_cube_times, argnums=(0, -2))(2.0, 5.0)
    np.testing.assert_allclose(np.array(h, dtype=float), [[60.0, 60.0], [60.0, 60.0]])


def test_hessian_refuses_a_bad_argnums_with_a_typed_error_and_the_next_call_works():
    with pytest.raises(adcore.InvalidArgnumsError, match="argnums"):
        adcore.hessian(_cube_times, argnums=0.0)(2.0, 5.0)
    with pytest.raises(adcore.InvalidArgnumsError, match="out of range"):
        adcore.hessian(_cube_times, argnums=(0, 2))(2.0, 5.0)
    assert adcore.hessian(_cube_times, argnums=(0,))(2.0, 5.0)[0][0] == pytest.approx(60.0)
    _check_clean_state()


# --- every backend: results the caller owns (issue 15, class 7) ---------------------------

W = np.array([4.0, -5.0, 6.0])


def _owned(result, *inputs) -> None:
    """result is a writable ndarray sharing memory with none of the inputs."""
    assert isinstance(result, np.ndarray)
    assert result.flags.writeable
    for x in inputs:
        assert not np.shares_memory(result, x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_derivatives_are_fresh_writable_arrays_that_do_not_change_the_next_call(backend):
    x, w = X.copy(), W.copy()
    rtol = TOL.get(backend, 1e-12)
    calls = {
        # d/dx sum(w x) = w: symbolic used to return a read-only view of the caller's w
        "grad w.x": (lambda: adcore.grad(lambda x, w: np.sum(w * x), backend=backend)(x, w), W),
        # d/dx sum(x) = 1: reverse used to return a read-only broadcast
        "grad sum": (lambda: adcore.grad(np.sum, backend=backend)(x), np.ones(3)),
        "jacobian": (lambda: adcore.jacobian(lambda x, w: w * x, backend=backend)(x, w), np.diag(W)),
        "value_and_grad": (lambda: adcore.value_and_grad(np.sum, backend=backend)(x)[1], np.ones(3)),
        "tuple argnums": (lambda: adcore.grad(lambda x, w: np.sum(w * x), (1, 0), backend)(x, w)[1], W),
        "jvp": (lambda: adcore.jvp(lambda x: w * x, (x,), (np.ones(3),), backend=backend)[1], W),
    }
    for name, (call, expected) in calls.items():
        first = call()
        _owned(first, x, w)
        np.testing.assert_allclose(first, expected, rtol=rtol, err_msg=name)
        first *= 0.1  # as an optimizer would: g *= lr
        first[...] = np.nan
        np.testing.assert_allclose(call(), expected, rtol=rtol, err_msg=name)  # cached programs untouched
    np.testing.assert_array_equal(x, X)
    np.testing.assert_array_equal(w, W)


@pytest.mark.parametrize("backend", BACKENDS)
def test_hessian_is_a_fresh_writable_array(backend):
    x = X.copy()
    first = adcore.hessian(_square_sum, backend=backend)(x)
    _owned(first, x)
    np.testing.assert_allclose(first, 2 * np.eye(3), atol=1e-5)  # d^2/dx^2 sum(x^2) = 2 I
    first[...] = np.nan
    np.testing.assert_allclose(adcore.hessian(_square_sum, backend=backend)(x), 2 * np.eye(3), atol=1e-5)


def test_vjp_results_are_fresh_writable_arrays():
    x, w = X.copy(), W.copy()
    out, vjp_fn = adcore.vjp(lambda x, w: np.sum(w * x), x, w)
    gx, gw = vjp_fn(1.0)
    _owned(gx, x, w)
    _owned(gw, x, w)
    gx[...] = np.nan
    np.testing.assert_allclose(vjp_fn(1.0)[0], W)  # d/dx sum(w x) = w, the pullback untouched
    out, vjp_fn = adcore.vjp(np.sum, x)
    g = vjp_fn(2.0)[0]
    _owned(g, x)
    g *= 0.5  # reverse's pullback of sum used to be a read-only broadcast
    np.testing.assert_allclose(g, np.ones(3))


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_value_of_the_identity_is_a_copy_not_the_callers_array(backend):
    # decided: the value a derivative call returns alongside never is the caller's input itself;
    # f = identity returns its argument, so the value is copied out
    x = np.array(1.5)
    value, g = adcore.value_and_grad(lambda x: x, backend=backend)(x)
    assert not np.shares_memory(value, x)
    value[...] = 0.0
    assert x == 1.5
    assert g == pytest.approx(1.0)
    if backend in ("reverse", "forward"):
        y = X.copy()
        out = adcore.jvp(lambda x: x, (y,), (np.ones(3),), backend=backend)[0]
        assert not np.shares_memory(out, y)
    y = X.copy()
    out, _ = adcore.vjp(lambda x: x, y)
    assert not np.shares_memory(out, y)


# --- bad calls: typed errors, and the next call works (issue 15, class 12) ---------------

MORE_ERROR_CASES = [
    pytest.param(
        lambda: adcore.grad(_square_sum, backend=None)(X),
        adcore.InvalidInputError,
        TypeError,
        ["backend must be the name", "NoneType", "reverse"],
        id="backend-none",
    ),
    pytest.param(
        lambda: adcore.grad(_square_sum, backend=5)(X),
        adcore.InvalidInputError,
        TypeError,
        ["backend must be the name", "int 5"],
        id="backend-int",
    ),
    pytest.param(
        lambda: adcore.jacobian(_square_sum, backend=["reverse"])(X),
        adcore.InvalidInputError,
        TypeError,
        ["backend must be the name", "list ['reverse']", "backend='reverse'"],
        id="backend-list",
    ),
    pytest.param(
        lambda: adcore.hessian(_square_sum, inner=["reverse"])(X),
        adcore.InvalidInputError,
        TypeError,
        ["backend must be the name", "list"],
        id="hessian-backend-list",
    ),
    pytest.param(
        lambda: adcore.vjp(np.sin, X)[1](np.ones(2)),
        InvalidValueError,
        ValueError,
        ["cotangent has shape (2,)", "output has shape (3,)"],
        id="vjp-cotangent-shape",
    ),
    pytest.param(
        lambda: adcore.vjp(np.sum, X)[1](np.ones(3)),
        InvalidValueError,
        ValueError,
        ["cotangent has shape (3,)", "output has shape ()"],
        id="vjp-cotangent-for-a-scalar",
    ),
    pytest.param(
        lambda: adcore.vjp(np.sin, X)[1]("abc"),
        adcore.InvalidInputError,
        TypeError,
        ["cotangent must be real numbers", "str"],
        id="vjp-cotangent-str",
    ),
    pytest.param(
        lambda: adcore.vjp(np.sin, X)[1](np.ones(3) * 1j),
        adcore.InvalidInputError,
        TypeError,
        ["cotangent must be real numbers", "complex128"],
        id="vjp-cotangent-complex",
    ),
]


@pytest.mark.parametrize(("call", "error", "builtin", "words"), MORE_ERROR_CASES)
def test_more_errors_are_typed_and_leave_state_clean(call, error, builtin, words):
    test_error_is_typed_says_what_is_wrong_and_leaves_state_clean(call, error, builtin, words)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("f", "words"),
    [
        (lambda x: "abc", ["returned str"]),
        (lambda x: np.array(["a", "b"]), ["dtype <U1", "numbers"]),
        (lambda x: np.sum(x) > 0, ["bool", "comparison", "anp.where"]),
        (lambda x: True, ["bool"]),
    ],
    ids=["str", "str-array", "comparison", "python-bool"],
)
def test_a_string_or_bool_output_is_refused_on_every_backend(backend, f, words):
    # a comparison is piecewise constant: refused (as JAX does) rather than a zero derivative
    for make in (adcore.grad, adcore.jacobian):
        with pytest.raises(adcore.InvalidOutputError) as info:
            make(f, backend=backend)(X)
        assert isinstance(info.value, TypeError)
        message = str(info.value)
        for word in words if backend != "numeric" else ["returned"]:  # numeric says where it probed f
            assert word in message, f"{word!r} not in {message!r}"
    np.testing.assert_allclose(adcore.grad(_square_sum, backend=backend)(X), 2 * X, rtol=1e-6)
    _check_clean_state()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_list_argument_is_a_pytree_on_every_backend(backend):
    # d/dx x0 * x1 = (x1, x0); a list is a pytree of two leaves, as in JAX, and so is its gradient
    g = adcore.grad(lambda x: x[0] * x[1], backend=backend)([2.0, 3.0])
    assert isinstance(g, list) and len(g) == 2
    np.testing.assert_allclose(g, [3.0, 2.0], rtol=1e-6)
    assert all(leaf.dtype == np.float64 and leaf.shape == () for leaf in g)  # Python floats: float64
    g = adcore.grad(lambda x, c: np.sum(x * np.asarray(c)), backend=backend)(X, [1.0, 2.0, 3.0])
    np.testing.assert_allclose(g, [1.0, 2.0, 3.0], rtol=1e-6)  # d/dx sum(x c) = c; c is not differentiated
    with pytest.raises(adcore.InvalidInputError, match=r"argument 0\[1\] has dtype int"):
        adcore.grad(lambda x: x[0] * x[1], backend=backend)([1.0, 2])  # ints have no derivative
    np.testing.assert_allclose(adcore.grad(_square_sum, backend=backend)(X), 2 * X, rtol=1e-6)
