"""adcore.derivatives: Jacobians, gradients, jvp and vjp built once from each backend's small
contract (Backend.builds), the explicit Estimate result, and pullbacks that are differentiable."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_forward.backend import ForwardBackend
from adcore_reverse.backend import ReverseBackend

import adcore
import adcore.numpy as anp
from adcore import derivatives
from adcore.backend import running

RNG = np.random.default_rng(16)
A = RNG.normal(size=(3, 4))
X0 = RNG.normal(size=4)
W = RNG.normal(size=4)
CT = RNG.normal(size=3)
V = RNG.normal(size=4)


def f(x):
    """f(x) = A @ tanh(x): J = A diag(1 - tanh(x)^2), known in closed form."""
    return A @ anp.tanh(x)


def jac(x):
    return A * (1 - np.tanh(x) ** 2)


def _plugin(backend):
    class Plugin:
        @adcore.hookimpl
        def adcore_register_backends(self, register):
            register(backend)

    return Plugin()


# --- the contract: what a tracing backend is asked, and what the engine builds -----------------


class CountingForward(ForwardBackend):
    """forward under another name, recording the tangents' shapes each jvp gets."""

    name = "counting_forward"

    def __init__(self) -> None:
        self.seen: list[tuple] = []

    def jvp(self, f, args, tangents):
        self.seen.append(tuple(None if t is None else np.shape(t) for t in tangents))
        return super().jvp(f, args, tangents)


class CountingReverse(ReverseBackend):
    """reverse under another name, recording each pullback's `final` flag."""

    name = "counting_reverse"

    def __init__(self) -> None:
        self.finals: list[bool] = []

    def vjp(self, f, args, argnums):
        out, pullback = super().vjp(f, args, argnums)

        def counted(ct, final=False):
            self.finals.append(final)
            return pullback(ct, final=final)

        return out, counted


def test_a_jvp_backend_gets_a_batch_of_identity_rows_and_none_for_what_is_not_differentiated(register_plugin):
    be = CountingForward()
    register_plugin(_plugin(be), "counting_forward")
    b = np.array([0.5, 2.0])
    ja = adcore.jacobian(lambda a, b: a * anp.sum(b), argnums=1, backend="counting_forward")(X0, b)
    # one pass: a batch of 2 directions for b, None for everything else (a is not differentiated)
    assert len(be.seen) == 1 and sorted(map(str, be.seen[0])) == ["(2, 2)"] + ["None"] * (len(be.seen[0]) - 1)
    np.testing.assert_allclose(ja, np.outer(X0, np.ones(2)))  # d(a * sum b)/db = a 1^T


def test_a_vjp_backend_sweeps_once_for_a_scalar_and_once_per_output_element_unless_it_batches(
    register_plugin,
):
    be = CountingReverse()
    be.batches = False  # a backend whose sweep cannot run under vmap
    register_plugin(_plugin(be), "counting_reverse")
    g = adcore.grad(lambda x: anp.sum(anp.sin(x)), backend="counting_reverse")(X0)
    np.testing.assert_allclose(g, np.cos(X0))
    assert be.finals == [True]  # one sweep, told it is the last (the tape may be freed)
    be.finals.clear()
    np.testing.assert_allclose(adcore.jacobian(f, backend="counting_reverse")(X0), jac(X0))
    assert be.finals == [False, False, True]  # one per output element
    be.finals.clear()
    be.batches = True  # reverse's own: every row in one vmapped pullback (kept: not told it is the last)
    np.testing.assert_allclose(adcore.jacobian(f, backend="counting_reverse")(X0), jac(X0))
    assert be.finals == [False]


def test_a_backend_that_builds_no_known_way_is_refused_by_name_and_the_next_call_works(register_plugin):
    class Odd(ForwardBackend):
        name = "odd"
        builds = "sideways"

    register_plugin(_plugin(Odd()), "odd")
    with pytest.raises(
        adcore.UnsupportedByBackendError, match=r"'odd'.*'sideways'.*'jvp', 'vjp' or 'jacobian'"
    ):
        adcore.grad(lambda x: anp.sum(x), backend="odd")
    np.testing.assert_allclose(adcore.grad(lambda x: anp.sum(x * x))(X0), 2 * X0)


def test_a_direct_backend_returning_a_wrong_shape_is_an_error_not_a_number(register_plugin):
    class Transposed(adcore.Backend):
        name = "transposed"

        def value_and_jacobian(self, f, args, argnums):
            out = f(*args)
            return out, tuple(np.zeros(np.shape(args[i]) + np.shape(out)) for i in argnums)

    register_plugin(_plugin(Transposed()), "transposed")
    with pytest.raises(adcore.InvalidOutputError, match=r"'transposed'.*shape \(4, 3\)"):
        adcore.jacobian(f, backend="transposed")(X0)
    np.testing.assert_allclose(adcore.jacobian(f)(X0), jac(X0))


def test_the_default_chunk_size_bounds_the_seed():
    assert derivatives.default_chunk_size(200) == 200  # bench_forward's size: one pass
    assert derivatives.default_chunk_size(0) == 1
    for n in (1, 2048, 2049, 10**5, 10**7):
        chunk = derivatives.default_chunk_size(n)
        assert 1 <= chunk <= max(n, 1)
        assert chunk * n <= max(derivatives.SEED_ENTRIES, n)


def test_a_large_input_is_done_in_several_passes_with_the_same_result(monkeypatch):
    passes = []
    original = derivatives._identity_rows

    def counting(start, stop, offset, size, arg):
        passes.append((start, stop))
        return original(start, stop, offset, size, arg)

    monkeypatch.setattr(derivatives, "_identity_rows", counting)
    monkeypatch.setattr(derivatives, "SEED_ENTRIES", 100)  # 10 directions per pass for n = 10
    x = np.linspace(-1, 1, 10)
    full = adcore.jacobian(lambda x: anp.sin(x) * anp.sum(x), backend="forward")(x)
    assert passes == [(0, 10)]
    monkeypatch.setattr(derivatives, "SEED_ENTRIES", 30)  # 3 per pass: 4 passes
    passes.clear()
    chunked = adcore.jacobian(lambda x: anp.sin(x) * anp.sum(x), backend="forward")(x)
    assert passes == [(0, 3), (3, 6), (6, 9), (9, 10)]
    np.testing.assert_array_equal(chunked, full)
    # d/dx_j sin(x_i) sum(x) = delta_ij cos(x_i) sum(x) + sin(x_i)
    np.testing.assert_allclose(full, np.diag(np.cos(x) * np.sum(x)) + np.sin(x)[:, None], rtol=1e-12)


@pytest.mark.parametrize("backend", ["forward", "reverse"])
def test_f_writing_into_what_it_is_differentiated_by_is_refused_on_every_tracing_backend(backend):
    x = X0.copy()

    def writes(v):
        x[0] = 7.0  # through a global naming the same array
        return anp.sum(v * v)

    with pytest.raises(adcore.StateChangedError, match=f"backend '{backend}': f wrote into"):
        adcore.grad(writes, backend=backend)(x)
    np.testing.assert_array_equal(x, X0)  # unchanged, and writable again
    x[1] = 3.0
    np.testing.assert_allclose(adcore.grad(lambda v: anp.sum(v * v), backend=backend)(X0), 2 * X0)


@pytest.mark.parametrize("backend", ["forward", "reverse", "symbolic", "numeric"])
def test_jvp_and_vjp_are_built_for_every_backend(backend):
    rtol = 1e-6 if backend == "numeric" else 1e-12
    out, tangent = adcore.jvp(f, (X0,), (V,), backend=backend)
    np.testing.assert_allclose(out, A @ np.tanh(X0), rtol=1e-12)
    np.testing.assert_allclose(tangent, jac(X0) @ V, rtol=rtol)
    out, vjp_fn = adcore.vjp(f, X0, backend=backend)
    (g,) = vjp_fn(CT)
    np.testing.assert_allclose(g, CT @ jac(X0), rtol=rtol)


# --- return_error: an explicit result type ---------------------------------------------------


def test_return_error_gives_an_estimate_that_unpacks_as_derivative_and_error():
    g = adcore.grad(lambda x: anp.sum(anp.exp(x)), backend="numeric", method="richardson", return_error=True)(
        X0
    )
    assert isinstance(g, adcore.Estimate)
    d, err = g
    assert np.all(np.abs(d - np.exp(X0)) <= err)  # d/dx sum(exp x) = exp x
    pair = adcore.jacobian(lambda x, y: x * y, argnums=(0, 1), backend="numeric", return_error=True)(X0, W)
    assert isinstance(pair.derivative, tuple) and isinstance(pair.error, tuple) and len(pair.error) == 2
    np.testing.assert_allclose(pair.derivative[1], np.diag(X0), rtol=1e-8)  # d(x*y)/dy = diag(x)


def test_jvp_built_from_an_estimate_refuses_to_drop_its_error():
    with pytest.raises(adcore.InvalidInputError, match="no option 'return_error'"):
        adcore.jvp(f, (X0,), (V,), backend="numeric", return_error=True)
    with pytest.raises(adcore.InvalidInputError, match="vjp gives no error estimate"):
        adcore.vjp(f, X0, backend="numeric", return_error=True)
    np.testing.assert_allclose(adcore.vjp(f, X0, backend="numeric")[1](CT)[0], CT @ jac(X0), rtol=1e-6)


# --- differentiable pullbacks (item 3) ----------------------------------------------------------

INNER = ["reverse", "forward", "symbolic"]
OUTER = ["reverse", "forward"]


@pytest.mark.parametrize("outer", OUTER)
@pytest.mark.parametrize("inner", INNER)
def test_the_gradient_through_vjp_fn_with_respect_to_the_cotangent_is_j_w(inner, outer):
    _, vjp_fn = adcore.vjp(f, X0, backend=inner)
    # <vjp_fn(ct), w> = ct^T J w, so its gradient in ct is J w
    g = adcore.grad(lambda ct: anp.sum(vjp_fn(ct)[0] * W), backend=outer)(CT)
    np.testing.assert_allclose(g, jac(X0) @ W, rtol=1e-12)


@pytest.mark.parametrize("outer", OUTER)
@pytest.mark.parametrize("inner", INNER)
def test_the_gradient_through_vjp_fn_with_respect_to_the_primal_is_the_closed_form(inner, outer):
    def weighted(x):
        _, vjp_fn = adcore.vjp(f, x, backend=inner)
        return anp.sum(vjp_fn(CT)[0] * W)

    # <ct^T A diag(1 - tanh^2 x), w> = sum_j (ct^T A)_j (1 - tanh^2 x_j) w_j, whose x_j-derivative
    # is (ct^T A)_j w_j * (-2 tanh x_j (1 - tanh^2 x_j))
    t = np.tanh(X0)
    expected = (CT @ A) * W * (-2 * t * (1 - t**2))
    np.testing.assert_allclose(adcore.grad(weighted, backend=outer)(X0), expected, rtol=1e-12)


def rosenbrock(x):
    return anp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


@pytest.mark.parametrize("inner", INNER)
def test_vjp_of_vjp_is_the_hessian_product(inner):
    # autograd-style second order: the vjp of x -> grad f(x) (itself a vjp with ct = 1) along u is H u
    x = np.array([0.3, -0.7, 1.2, 0.5])
    u = np.array([1.0, -2.0, 0.5, 3.0])

    def gradient(x):
        return adcore.vjp(rosenbrock, x, backend=inner)[1](1.0)[0]

    _, second = adcore.vjp(gradient, x)
    np.testing.assert_allclose(second(u)[0], adcore.hessian(rosenbrock)(x) @ u, rtol=1e-12)


@pytest.mark.parametrize("inner", INNER)
def test_gauss_newton_product_from_jvp_and_vjp_fn(inner):
    _, jv = adcore.jvp(f, (X0,), (V,))
    _, vjp_fn = adcore.vjp(f, X0, backend=inner)
    np.testing.assert_allclose(vjp_fn(jv)[0], jac(X0).T @ jac(X0) @ V, rtol=1e-12)  # J^T (J v)


def test_a_plain_cotangent_is_cast_to_the_output_dtype_and_the_next_call_works():
    x = X0.astype(np.float32)
    _, vjp_fn = adcore.vjp(lambda x: anp.sin(x), x)
    (g,) = vjp_fn(np.ones(4, dtype=np.int64))
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, np.cos(x), rtol=1e-6)
    with pytest.raises(adcore.InvalidValueError, match=r"cotangent has shape \(3,\)"):
        vjp_fn(np.ones(3))
    np.testing.assert_allclose(vjp_fn(np.ones(4))[0], np.cos(x), rtol=1e-6)


@pytest.mark.parametrize("backend", ["forward", "reverse", "symbolic", "numeric"])
def test_an_empty_output_has_an_empty_jacobian_and_zero_cotangents(backend):
    def empty(x):
        return x[:0] * 2.0

    assert adcore.jacobian(empty, backend=backend)(X0).shape == (0, 4)
    _, vjp_fn = adcore.vjp(empty, X0, backend=backend)
    np.testing.assert_array_equal(vjp_fn(np.zeros(0))[0], np.zeros(4))  # no output weighs anything
    out, tangent = adcore.jvp(empty, (X0,), (V,), backend=backend)
    assert out.shape == tangent.shape == (0,)


def test_arrays_held_read_only_by_overlapping_calls_are_writable_again_after_the_last():
    # two calls (threads) differentiating views of one base: the first to end cannot make its
    # view writable while the other holds the base read-only (NumPy refuses); it must wait for it
    from adcore.derivatives import _freeze, _thaw

    base = np.arange(6.0)
    x, y = base[:3], base[3:]
    first, second = _freeze([x]), _freeze([y])
    assert not (x.flags.writeable or y.flags.writeable or base.flags.writeable)
    _thaw(first)
    assert not (x.flags.writeable or base.flags.writeable)  # the base is still held
    _thaw(second)
    assert x.flags.writeable and y.flags.writeable and base.flags.writeable
    frozen_by_user = np.arange(3.0)
    frozen_by_user.flags.writeable = False
    _thaw(_freeze([frozen_by_user]))
    assert not frozen_by_user.flags.writeable  # read-only before: read-only after


@pytest.mark.parametrize("backend", ["forward", "reverse"])
def test_a_derivative_under_vmap_has_its_arguments_dtype_where_the_rule_computes_in_float64(backend):
    # scipy's y1 rules compute a float32 argument's derivative in float64: the plain call casts it,
    # and so must a traced one, whose batch is what vmap returns (conformance's vmap column found it)
    pytest.importorskip("adcore_scipy")
    xs = np.linspace(1.0, 2.0, 6, dtype=np.float32).reshape(3, 2)
    jac = adcore.jacobian(adcore.ops.y1, backend=backend)
    batched = adcore.vmap(jac)(xs)
    assert batched.dtype == np.float32
    np.testing.assert_allclose(batched, np.stack([jac(x) for x in xs]), rtol=1e-6)


# --- the record of the derivatives in progress (adcore.backend.running) ---------------------


def _recording(seen):
    def g(x):
        seen.append(tuple((r.backend.name, r.backend.builds, r.repeats) for r in running()))
        return anp.sum(anp.sin(x))

    return g


def test_running_names_the_derivative_whose_f_runs_and_whether_f_runs_again():
    assert running() == ()
    for backend, options, expected in [
        ("reverse", {}, ("reverse", "vjp", False)),
        ("forward", {}, ("forward", "jvp", False)),
        ("forward", {"chunk_size": 1}, ("forward", "jvp", True)),  # one pass of f per input element
        ("numeric", {}, ("numeric", "jacobian", True)),  # finite differences evaluate f again
        ("symbolic", {}, ("symbolic", "jacobian", False)),
    ]:
        seen = []
        adcore.grad(_recording(seen), backend=backend, **options)(X0[:3])
        assert seen and all(s == (expected,) for s in seen), (backend, seen)
    assert running() == ()


def test_running_nests_outermost_first_and_is_left_clean_when_f_raises():
    seen = []
    adcore.hessian(_recording(seen))(X0[:2])  # forward over reverse
    assert seen[0] == (("forward", "jvp", False), ("reverse", "vjp", False))

    def fails(x):
        assert running()
        raise RuntimeError("f failed")

    for backend in ("reverse", "forward", "numeric"):
        with pytest.raises(RuntimeError, match="f failed"):
            adcore.grad(fails, backend=backend)(X0)
        assert running() == ()


def test_running_covers_f_not_a_pullback_run_later():
    seen = []
    out, pullback = adcore.vjp(_recording(seen), X0)
    assert seen == [(("reverse", "vjp", False),)] and running() == ()
    assert np.allclose(pullback(1.0)[0], np.cos(X0))
    seen.clear()
    adcore.jvp(_recording(seen), (X0,), (V,))
    assert seen == [(("forward", "jvp", False),)]


def test_a_forward_gradient_of_a_scalar_records_no_transpose_or_reshape_when_its_shape_is_the_arguments():
    """A scalar output's tangents are the gradient's entries in order: inside an outer reverse trace the
    gradient is the tangent itself (nested descents ran two no-op ops per inner call), and a gradient
    whose argument has more axes is still reshaped; both differentiate again to the right number."""
    from adcore_reverse.tensor import Tensor

    def cube_sum(v):
        return np.sum(v**3)

    for x0 in (np.array([1.0, 2.0]), np.array([[1.0, 2.0], [3.0, 4.0]])):
        x = Tensor(x0, requires_grad=True)
        g = adcore.grad(cube_sum, backend="forward")(x)
        assert g.shape == x0.shape and np.allclose(g.value, 3 * x0**2)
        assert (g.op == "reshape") == (x0.ndim > 1) and g.op != "transpose"
        np.sum(g).backward()
        assert np.allclose(x.grad, 6 * x0)
