"""vmap composed with the derivatives in every order: vmap(grad(f)), grad of a vmap-based f,
jacobian/hessian/hvp/jvp/vjp either way round, checkpoint, custom_jvp/custom_vjp (whose rule must
be the one used), on each backend that can be asked; each against a Python loop of the same
unbatched computation (tests/vmap_reference.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from vmap_reference import assert_same, looped

import adcore
import adcore.numpy as anp
from adcore import vmap
from adcore.vmap import VmapFallbackWarning

rng = np.random.default_rng(3434)
X = rng.normal(size=(4, 3))
V = rng.normal(size=(4, 3))
W = rng.normal(size=(3, 2))
T = rng.normal(size=(4, 2))
EXACT = ("reverse", "forward", "symbolic")  # the exact backends: to rounding against the loop


def f(x):
    return anp.sum(anp.sin(x) * x + anp.exp(-x * x))


def g(x):
    return anp.tanh(x) * x[0] + anp.cos(x)


def loss(w, x, t):
    return anp.sum((anp.tanh(x @ w) - t) ** 2)


def no_fallback(call):
    """call(), asserting vmap did not fall back to a loop over f."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", VmapFallbackWarning)
        return call()


# --- grad ------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", EXACT)
def test_vmap_of_grad(backend):
    df = adcore.grad(f, backend=backend)
    assert_same(no_fallback(lambda: vmap(df)(X)), looped(df, X), exact=False)


@pytest.mark.parametrize("backend", EXACT)
def test_grad_of_a_vmap_based_function(backend):
    got = no_fallback(lambda: adcore.grad(lambda X: anp.sum(vmap(f)(X)), backend=backend)(X))
    assert_same(got, looped(adcore.grad(f, backend=backend), X), exact=False)


def test_vmap_of_numeric_grad_is_the_loop_of_numeric_grad():
    df = adcore.grad(f, backend="numeric")
    with pytest.warns(VmapFallbackWarning):
        got = vmap(df)(X)
    assert_same(got, looped(df, X))  # numeric runs on plain values: vmap ran it once per example
    np.testing.assert_allclose(got, looped(adcore.grad(f), X), rtol=1e-6)  # an estimate


def test_numeric_grad_of_a_vmap_based_function():
    got = adcore.grad(lambda X: anp.sum(vmap(f)(X)), backend="numeric")(X)
    np.testing.assert_allclose(got, looped(adcore.grad(f), X), rtol=1e-6)  # an estimate


def test_numeric_grad_closing_over_a_batched_value_loops():
    y0 = np.ones(3)

    def per_example(x):
        return adcore.grad(lambda y: anp.sum(anp.sin(x * y)), backend="numeric")(y0)

    with pytest.warns(VmapFallbackWarning):
        got = vmap(per_example)(X)
    assert_same(got, looped(per_example, X))


@pytest.mark.parametrize("backend", EXACT)
def test_per_example_gradients_with_shared_parameters(backend):
    dloss = adcore.grad(loss, backend=backend)
    got = no_fallback(lambda: vmap(dloss, in_axes=(None, 0, 0))(W, X, T))
    assert_same(got, looped(dloss, W, X, T, in_axes=(None, 0, 0)), exact=False)


def test_per_example_gradients_of_a_pytree_and_argnums():
    params = {"w": W, "b": np.zeros(2)}

    def model_loss(p, x, t):
        return anp.sum((anp.tanh(x @ p["w"] + p["b"]) - t) ** 2)

    for df in (adcore.grad(model_loss), adcore.grad(model_loss, argnums=(0, 1))):
        got = no_fallback(lambda df=df: vmap(df, in_axes=(None, 0, 0))(params, X, T))
        assert_same(got, looped(df, params, X, T, in_axes=(None, 0, 0)), exact=False)


def test_value_and_grad_and_has_aux_under_vmap():
    vg = adcore.value_and_grad(f)
    assert_same(no_fallback(lambda: vmap(vg)(X)), looped(vg, X), exact=False)
    ga = adcore.grad(lambda x: (f(x), x * 3.0), has_aux=True)
    assert_same(no_fallback(lambda: vmap(ga)(X)), looped(ga, X), exact=False)


def test_vmap_of_grad_in_float32_keeps_float32():
    X32 = X.astype(np.float32)
    df = adcore.grad(f)
    got = no_fallback(lambda: vmap(df)(X32))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, looped(df, X32), rtol=1e-6)


def test_vmap_of_grad_of_an_integer_argument_is_the_usual_error():
    with pytest.raises(adcore.errors.InvalidInputError, match="int64"):
        vmap(adcore.grad(f))(np.arange(6).reshape(2, 3))


def test_nested_vmap_of_grad_and_grad_of_nested_vmap():
    Z = rng.normal(size=(2, 4, 3))
    df = adcore.grad(f)
    got = no_fallback(lambda: vmap(vmap(df))(Z))
    assert_same(got, looped(lambda z: looped(df, z), Z), exact=False)
    got = no_fallback(lambda: adcore.grad(lambda Z: anp.sum(vmap(vmap(f))(Z)))(Z))
    assert_same(got, looped(lambda z: looped(df, z), Z), exact=False)


def test_grad_inside_vmap_over_a_batched_closure():
    def per_example(x):
        return adcore.grad(lambda w: anp.sum(anp.tanh(x @ w)))(W)

    assert_same(no_fallback(lambda: vmap(per_example)(X)), looped(per_example, X), exact=False)


def test_vmap_of_grad_through_rules_with_shortcuts_stays_batched():
    # the rules' shortcuts (no zero, no nan, no tie: the cheap formula) are decided for the whole
    # batch: the general formula is right for every example when one example needs it
    Z = np.array([[1.0, 2.0, 3.0], [0.0, 2.0, 3.0], [0.0, 0.0, 3.0], [-1.0, 0.5, 2.0]])
    for fz in (
        lambda x: anp.prod(x),
        lambda x: anp.sum(anp.log(x * x + 1.0)),
        lambda x: anp.sum(x**2.5 * 0 + x**3),
    ):
        df = adcore.grad(fz)
        with np.errstate(invalid="ignore"):
            assert_same(no_fallback(lambda df=df: vmap(df)(Z)), looped(df, Z), exact=False)


# reverse mode keeps the positions a where or a step proved zero (structural zeros), so an inf or
# nan factor further down gives 0 there, not nan: under vmap every example must get what its own
# backward pass gives, whether it has such zeros or not (else vmap runs once per example)
STEP_FUNCTIONS = {
    "where log": lambda x: anp.sum(anp.where(x > 0, anp.log(anp.abs(x)), 0.0)),
    "relu of log, sliced": lambda x: anp.sum(anp.maximum(anp.log(anp.abs(x)), 0.0)[:2]),
    "sqrt where": lambda x: anp.sum(anp.where(x > 0, anp.sqrt(anp.abs(x)), x)),
    "clip of log": lambda x: anp.sum(anp.clip(anp.log(anp.abs(x)), -1.0, 1.0)),
    "max": lambda x: anp.max(anp.log(anp.abs(x)) * x),
    "where, reshaped": lambda x: anp.sum(anp.reshape(anp.where(x > 0, anp.log(anp.abs(x)), 0.0), (3, 1))),
    "two wheres": lambda x: anp.sum(
        anp.where(x > 0, anp.log(anp.abs(x)), 0.0) + anp.where(x < 1, anp.sqrt(anp.abs(x)), 0.0)
    ),
}
ROWS = np.array([[1.0, 2.0, 3.0], [0.0, 2.0, -1.0], [0.0, 0.0, 3.0], [-1.0, 0.5, 2.0], [2.0, -3.0, 0.0]])


@pytest.mark.parametrize("name", sorted(STEP_FUNCTIONS))
@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_vmap_of_grad_through_steps_is_each_examples_own(name, backend):
    df = adcore.grad(STEP_FUNCTIONS[name], backend=backend)
    for rows in ([0, 1, 2], [1, 2, 4], [0, 3, 4], [1, 3]):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", VmapFallbackWarning)  # rows whose zeros differ may loop
            assert_same(vmap(df)(ROWS[rows]), looped(df, ROWS[rows]), exact=False)


def test_vmap_of_grad_of_relu_layers_stays_batched():
    # each example has zeros in each step: the structural zeros are batched masks
    local = np.random.default_rng(8)
    w1, w2 = local.normal(size=(3, 8)), local.normal(size=(8, 2))
    data = local.normal(size=(16, 3))
    assert ((data @ w1) < 0).any(axis=1).all()  # (else those examples would have no zeros)

    def net_loss(w1, x):
        h = anp.maximum(x @ w1, 0.0)  # (8 units: every example has some below 0 here)
        return anp.sum((h @ w2) ** 2) + anp.sum(anp.abs(w1))

    dloss = adcore.grad(net_loss)
    got = no_fallback(lambda: vmap(dloss, in_axes=(None, 0))(w1, data))
    assert_same(got, looped(dloss, w1, data, in_axes=(None, 0)), exact=False)


SPD = np.stack([a @ a.T + 3.0 * np.eye(3) for a in rng.normal(size=(4, 3, 3))])
MATRIX_FUNCTIONS = {
    "det": lambda a: anp.linalg.det(a),
    "slogdet": lambda a: anp.linalg.slogdet(a)[1],
    "inv": lambda a: anp.sum(anp.linalg.inv(a)),
    "solve": lambda a: anp.sum(anp.linalg.solve(a, np.ones(3))),
    "cholesky": lambda a: anp.sum(anp.linalg.cholesky(a)),
    "eigh": lambda a: anp.sum(anp.linalg.eigh(a)[0] ** 2) + anp.sum(anp.linalg.eigh(a)[1][0] ** 2),
    "eigvalsh": lambda a: anp.sum(anp.linalg.eigvalsh(a) ** 3),
    "svd": lambda a: anp.sum(anp.linalg.svd(a)[1]),
    "qr": lambda a: anp.sum(anp.linalg.qr(a)[1] ** 2),
    "pinv": lambda a: anp.sum(anp.linalg.pinv(a)),
    "norm": lambda a: anp.linalg.norm(a),
    "cumprod": lambda a: anp.sum(anp.cumprod(a)),
}


@pytest.mark.parametrize("name", sorted(MATRIX_FUNCTIONS))
@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_vmap_of_grad_through_linear_algebra_stays_batched(name, backend):
    # the rules' checks for degenerate points (repeated or zero values, singular matrices) ask
    # every example at once instead of converting the batch
    df = adcore.grad(MATRIX_FUNCTIONS[name], backend=backend)
    assert_same(no_fallback(lambda: vmap(df)(SPD)), looped(df, SPD), exact=False)


# --- jacobian, hessian, hvp -------------------------------------------------------------------


@pytest.mark.parametrize("backend", EXACT)
def test_vmap_of_jacobian(backend):
    jac = adcore.jacobian(g, backend=backend)
    assert_same(no_fallback(lambda: vmap(jac)(X)), looped(jac, X), exact=False)


def test_vmap_of_numeric_jacobian_is_the_loop():
    jac = adcore.jacobian(g, backend="numeric")
    with pytest.warns(VmapFallbackWarning):
        got = vmap(jac)(X)
    assert_same(got, looped(jac, X))


@pytest.mark.parametrize("backend", (*EXACT, "numeric"))
def test_jacobian_of_vmap(backend):
    got = no_fallback(lambda: adcore.jacobian(vmap(g), backend=backend)(X))
    want = adcore.jacobian(lambda X: anp.stack([g(X[i]) for i in range(len(X))]), backend=backend)(X)
    if backend == "numeric":
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)
    else:
        assert_same(got, want, exact=False)
    # the blocks off the diagonal are 0: example i's output depends on example i only
    blocks = got.reshape(4, 3, 4, 3)
    for i in range(4):
        for j in range(4):
            if i != j:
                assert not blocks[i, :, j, :].any()


def test_vmap_of_hessian_and_hessian_of_a_vmap_based_function():
    hess = adcore.hessian(f)
    assert_same(no_fallback(lambda: vmap(hess)(X)), looped(hess, X), exact=False)
    got = no_fallback(lambda: adcore.hessian(lambda X: anp.sum(vmap(f)(X)))(X))
    want = np.zeros((4, 3, 4, 3))
    for i in range(4):
        want[i, :, i, :] = hess(X[i])
    assert_same(got, want, exact=False)


@pytest.mark.parametrize("inner", ["reverse", "forward"])
def test_vmap_of_hessian_by_each_inner_backend(inner):
    hess = adcore.hessian(f, inner=inner, outer="forward")
    assert_same(no_fallback(lambda: vmap(hess)(X)), looped(hess, X), exact=False)


def test_vmap_of_hvp_and_hvp_of_a_vmap_based_function():
    hvp = adcore.hvp(f)
    assert_same(no_fallback(lambda: vmap(hvp)(X, V)), looped(hvp, X, V), exact=False)
    got = no_fallback(lambda: adcore.hvp(lambda X: anp.sum(vmap(f)(X)))(X, V))
    assert_same(got, looped(hvp, X, V), exact=False)
    shared = no_fallback(lambda: vmap(hvp, in_axes=(0, None))(X, V[0]))
    assert_same(shared, looped(hvp, X, V[0], in_axes=(0, None)), exact=False)


# --- jvp, vjp ---------------------------------------------------------------------------------


def _jvp(x, v):
    return adcore.jvp(g, (x,), (v,))


def _vjp(x, ct):
    out, pullback = adcore.vjp(g, x)
    return out, pullback(ct)


def test_vmap_of_jvp_with_batched_tangents():
    assert_same(no_fallback(lambda: vmap(_jvp)(X, V)), looped(_jvp, X, V), exact=False)
    got = no_fallback(lambda: vmap(_jvp, in_axes=(None, 0))(X[0], V))  # one point, many directions
    assert_same(got, looped(_jvp, X[0], V, in_axes=(None, 0)), exact=False)


def test_jvp_of_vmap():
    out, tangent = no_fallback(lambda: adcore.jvp(vmap(g), (X,), (V,)))
    want_out, want_tangent = looped(_jvp, X, V)
    assert_same(out, want_out, exact=False)
    assert_same(tangent, want_tangent, exact=False)


def test_vmap_of_vjp_with_a_batched_cotangent():
    assert_same(no_fallback(lambda: vmap(_vjp)(X, V)), looped(_vjp, X, V), exact=False)
    got = no_fallback(lambda: vmap(_vjp, in_axes=(None, 0))(X[0], V))  # one point, many cotangents
    assert_same(got, looped(_vjp, X[0], V, in_axes=(None, 0)), exact=False)


def test_vmap_of_a_pullback_recorded_outside():
    _, pullback = adcore.vjp(g, X[0])
    assert_same(no_fallback(lambda: vmap(pullback)(V)), looped(pullback, V), exact=False)
    _, pullback = adcore.vjp(lambda x: {"s": anp.sin(x), "t": anp.sum(x * x)}, X[0])
    cts = {"s": V, "t": np.arange(4.0)}
    assert_same(no_fallback(lambda: vmap(pullback)(cts)), looped(pullback, cts), exact=False)


def test_vjp_of_vmap():
    out, pullback = no_fallback(lambda: adcore.vjp(vmap(g), X))
    (ct,) = pullback(V)
    want_out, (want_ct,) = looped(_vjp, X, V)
    assert_same(out, want_out, exact=False)
    assert_same(ct, want_ct, exact=False)


# --- checkpoint -------------------------------------------------------------------------------


def test_vmap_of_checkpoint():
    cf = adcore.checkpoint(f)
    assert_same(no_fallback(lambda: vmap(cf)(X)), looped(f, X))
    dcf = adcore.grad(cf)
    # the backward pass recomputes f on the batch and checks it against the kept output: batched
    assert_same(no_fallback(lambda: vmap(dcf)(X)), looped(adcore.grad(f), X), exact=False)
    got = no_fallback(lambda: adcore.grad(lambda X: anp.sum(vmap(cf)(X)))(X))
    assert_same(got, looped(adcore.grad(f), X), exact=False)


def test_vmap_of_checkpoint_still_refuses_a_changed_recomputation():
    state = {"calls": 0}

    def drifting(x):
        state["calls"] += 1
        return anp.sum(x * state["calls"])

    with pytest.raises(adcore.errors.StateChangedError):
        vmap(adcore.grad(adcore.checkpoint(drifting)))(X)


# --- custom rules: the rule is the one used ---------------------------------------------------

# autograd's and JAX's example: log(1 + exp(x)), whose body's derivative exp(x) / (1 + exp(x)) is
# inf / inf = nan at x = 1000, and whose rule 1 - 1 / (1 + exp(x)) gives 1.0 there
BIG = np.array([1.0, 100.0, 1000.0])
RULES = np.array([1.0 - 1.0 / (1.0 + np.e), 1.0, 1.0])


@adcore.custom_vjp
def log1pexp_vjp(x):
    return anp.log(1.0 + anp.exp(x))


log1pexp_vjp.defvjp(lambda x: (log1pexp_vjp(x), x), lambda x, g: (g * (1.0 - 1.0 / (1.0 + anp.exp(x))),))


@adcore.custom_jvp
def log1pexp_jvp(x):
    return anp.log(1.0 + anp.exp(x))


@log1pexp_jvp.defjvp
def _log1pexp_jvp_rule(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1pexp_jvp(x), t * (1.0 - 1.0 / (1.0 + anp.exp(x)))


def _quiet(call):
    with np.errstate(over="ignore", invalid="ignore"):
        return no_fallback(call)


def test_the_bodys_derivative_is_nan_where_the_rule_is_not():
    body = adcore.grad(lambda x: anp.log(1.0 + anp.exp(x)))
    assert np.isnan(_quiet(lambda: body(1000.0)))


@pytest.mark.parametrize(
    ("function", "backend"),
    [(log1pexp_vjp, "reverse"), (log1pexp_jvp, "reverse"), (log1pexp_jvp, "forward")],
)
def test_vmap_of_grad_of_a_custom_function_uses_its_rule(function, backend):
    got = _quiet(lambda: vmap(adcore.grad(function, backend=backend))(BIG))
    np.testing.assert_allclose(got, RULES, rtol=1e-15)
    assert_same(got, _quiet(lambda: looped(adcore.grad(function, backend=backend), BIG)))


@pytest.mark.parametrize(
    ("function", "backend"),
    [(log1pexp_vjp, "reverse"), (log1pexp_jvp, "reverse"), (log1pexp_jvp, "forward")],
)
def test_grad_of_a_vmapped_custom_function_uses_its_rule(function, backend):
    got = _quiet(lambda: adcore.grad(lambda x: anp.sum(vmap(function)(x)), backend=backend)(BIG))
    np.testing.assert_allclose(got, RULES, rtol=1e-15)


def test_vmap_of_a_custom_function_is_its_value():
    for function in (log1pexp_vjp, log1pexp_jvp):
        assert_same(_quiet(lambda function=function: vmap(function)(X)), looped(function, X))


def test_vmap_of_jvp_and_vjp_of_custom_functions_use_their_rules():
    tangents = np.ones(3)
    got = _quiet(lambda: vmap(lambda x, t: adcore.jvp(log1pexp_jvp, (x,), (t,))[1])(BIG, tangents))
    np.testing.assert_allclose(got, RULES, rtol=1e-15)
    got = _quiet(lambda: vmap(lambda x, c: adcore.vjp(log1pexp_vjp, x)[1](c)[0])(BIG, tangents))
    np.testing.assert_allclose(got, RULES, rtol=1e-15)


def test_a_custom_rule_with_control_flow_on_a_batched_value_falls_back():
    @adcore.custom_vjp
    def square(x):
        return x * x

    def bwd(x, g):
        if anp.sum(x) > 0:  # a branch on the batched residual: vmap runs once per example
            return (2.0 * x * g,)
        return (2.0 * x * g,)

    square.defvjp(lambda x: (square(x), x), bwd)
    with pytest.warns(VmapFallbackWarning):
        got = vmap(adcore.grad(lambda x: anp.sum(square(x))))(X)
    assert_same(got, 2.0 * X)


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_a_first_derivative_at_a_kink_under_vmap_is_not_refused_as_second_order(backend):
    # the rules refuse a second derivative at repeated eigenvalues or std = 0; a vmap's batch only
    # batches (core.differentiated looks beneath it), so vmap(grad) there is the loop's first derivative
    eig = lambda a: anp.sum(anp.linalg.eigvalsh(a) ** 2)  # noqa: E731
    A = np.stack([np.eye(3), np.diag([1.0, 2.0, 3.0])])
    expected = np.stack([adcore.grad(eig, backend=backend)(a) for a in A])
    np.testing.assert_allclose(adcore.vmap(adcore.grad(eig, backend=backend))(A), expected, rtol=1e-12)
    X = np.array([[1.0, 1.0, 1.0], [1.0, 2.0, 3.0]])
    expected = np.stack([adcore.grad(anp.std, backend=backend)(x) for x in X])
    np.testing.assert_allclose(adcore.vmap(adcore.grad(anp.std, backend=backend))(X), expected, rtol=1e-12)


def test_grad_through_vmap_outputs_that_do_not_depend_on_the_batch():
    w0 = np.array([1.0, 2.0, 3.0])
    # an unbatched output is broadcast over the batch: its gradient sums over the batch
    got = adcore.grad(lambda w: anp.sum(vmap(lambda x: w * 2.0)(X)))(w0)
    assert_same(got, np.full(3, 2.0 * len(X)))
    got = adcore.grad(lambda w: vmap(lambda x: (x * w, anp.sum(w)), out_axes=(0, None))(X)[1])(w0)
    assert_same(got, np.ones(3))

    def branchy(x, w):  # the loop fallback: out_axes=None for an output every example shares
        return (x * w if float(x[0]) > 0 else -x * w), anp.sum(w * w)

    batched = vmap(branchy, in_axes=(0, None), out_axes=(0, None))
    with pytest.warns(VmapFallbackWarning):
        got = adcore.grad(lambda w: batched(X, w)[1])(w0)
    assert_same(got, 2.0 * w0)
    got = adcore.grad(lambda w: anp.sum(batched(X, w)[0]))(w0)
    assert_same(got, np.sum([x if x[0] > 0 else -x for x in X], axis=0), exact=False)


def test_vmap_of_grad_of_complex_arguments():
    Z = X + 1j * V
    real_valued = adcore.grad(lambda z: anp.sum(anp.abs(z) ** 2 + anp.angle(z)))  # JAX's convention
    assert_same(no_fallback(lambda: vmap(real_valued)(Z)), looped(real_valued, Z), exact=False)
    holomorphic = adcore.grad(lambda z: anp.sum(z**3), holomorphic=True)
    with warnings.catch_warnings():  # its Cauchy-Riemann check scales by each example's values: loops
        warnings.simplefilter("ignore", VmapFallbackWarning)
        assert_same(vmap(holomorphic)(Z), looped(holomorphic, Z), exact=False)


# the elementwise rules' special points (an infinite logaddexp, hypot at 0, sinc at 0, NaN in fmax,
# non-finite values in nan_to_num, copysign's -0.0) in some examples and not in others
SPECIAL = np.array([[0.0, -np.inf, 1.0], [0.5, 2.0, -0.0], [np.nan, 0.0, np.inf], [1.0, -1.0, 3.0]])
SPECIAL_FUNCTIONS = {
    "logaddexp": lambda x: anp.sum(anp.logaddexp(x, 0.5 * x)),
    "hypot": lambda x: anp.sum(anp.hypot(x, 0.0 * x)),
    "sinc": lambda x: anp.sum(anp.sinc(x)),
    "fmax": lambda x: anp.sum(anp.fmax(x, 0.3)),
    "nan_to_num": lambda x: anp.sum(anp.nan_to_num(x) * 2.0),
    "copysign": lambda x: anp.sum(anp.copysign(x, x - 0.5)),
}


@pytest.mark.parametrize("name", sorted(SPECIAL_FUNCTIONS))
@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_vmap_of_grad_at_special_points_in_some_examples(name, backend):
    df = adcore.grad(SPECIAL_FUNCTIONS[name], backend=backend)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        # batched, or (reverse's structural zeros differing between examples, hypot's limits) the loop
        warnings.simplefilter("ignore", VmapFallbackWarning)
        assert_same(vmap(df)(SPECIAL), looped(df, SPECIAL), exact=False)
    with np.errstate(all="ignore"):  # away from the special points: batched
        assert_same(no_fallback(lambda: vmap(df)(SPECIAL[[1, 3]])), looped(df, SPECIAL[[1, 3]]), exact=False)


def test_linspace_with_a_traced_stop_whose_step_is_zero_in_one_example_is_the_loops():
    # its zero-step check asks every example at once (a swallowed conversion took y * step)
    f = lambda s: np.linspace(1.0, s, 4)  # noqa: E731
    stops = np.array([1.0, 2.0, 1.0, 1.0 + 1e-300])
    assert_same(vmap(f)(stops), np.stack([f(s) for s in stops]))
    jac = adcore.jacobian(f)
    assert_same(vmap(jac)(stops), np.stack([jac(s) for s in stops]))
