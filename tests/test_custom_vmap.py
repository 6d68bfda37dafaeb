"""custom_vjp / custom_jvp functions under vmap inside a derivative (adcore/custom_batching.py):
`grad(lambda X: sum(vmap(f)(X)))` makes one call of f's batched twin, whose rules are the user's
over the batch: the rule's value comes out (log1pexp at x = 1000, where the body's derivative is
nan), fwd/bwd/the jvp rule run once for the batch (not once per example, the loop rule), an input
every example shares gets the sum of their cotangents, and every result is the loop's."""

from __future__ import annotations

import gc
import warnings
from collections import Counter

import numpy as np
import pytest
from vmap_reference import assert_same, looped

import adcore
import adcore.numpy as anp
from adcore import custom_batching, plugins, vmap
from adcore.vmap import VmapFallbackWarning

BIG = np.array([1.0, 100.0, 1000.0])
RULES = np.array([1.0 - 1.0 / (1.0 + np.e), 1.0, 1.0])  # the rule's derivative; the body's is nan at 1000
rng = np.random.default_rng(3435)
X = rng.normal(size=(4, 3))
W = rng.normal(size=(3,))


def quiet(call):
    """call(), its overflows silent, asserting vmap did not fall back to a loop over f."""
    with np.errstate(over="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error", VmapFallbackWarning)
        return call()


def log1pexp_vjp(calls: Counter):
    @adcore.custom_vjp
    def f(x):
        return anp.log(1.0 + anp.exp(x))

    def fwd(x):
        calls["fwd"] += 1
        return f(x), x

    def bwd(x, g):
        calls["bwd"] += 1
        return (g * (1.0 - 1.0 / (1.0 + anp.exp(x))),)

    f.defvjp(fwd, bwd)
    return f


def log1pexp_jvp(calls: Counter):
    @adcore.custom_jvp
    def f(x):
        return anp.log(1.0 + anp.exp(x))

    @f.defjvp
    def rule(primals, tangents):
        calls["jvp"] += 1
        (x,), (t,) = primals, tangents
        return f(x), t * (1.0 - 1.0 / (1.0 + anp.exp(x)))

    return f


def grad_of_vmap(f, backend="reverse", **vmap_options):
    return adcore.grad(lambda X: anp.sum(vmap(f, **vmap_options)(X)), backend=backend)


# --- the rule is used, once for the batch --------------------------------------------------------


def test_grad_of_vmap_of_a_custom_vjp_runs_fwd_and_bwd_once_for_the_batch():
    calls = Counter()
    f = log1pexp_vjp(calls)
    got = quiet(lambda: grad_of_vmap(f)(BIG))
    np.testing.assert_allclose(got, RULES, rtol=1e-15)  # the rule's 1.0 at x = 1000, not the body's nan
    assert calls == {"fwd": 1, "bwd": 1}  # the loop rule would call each once per example (3)
    calls.clear()
    one = [quiet(lambda x=x: adcore.grad(f)(x)) for x in BIG]
    assert calls == {"fwd": 3, "bwd": 3}  # (what one call per example costs)
    assert_same(got, np.array(one))


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_grad_of_vmap_of_a_custom_jvp_runs_its_rule_as_often_as_for_one_example(backend):
    calls = Counter()
    f = log1pexp_jvp(calls)
    quiet(lambda: adcore.grad(f, backend=backend)(BIG[0]))
    once = calls["jvp"]
    calls.clear()
    got = quiet(lambda: grad_of_vmap(f, backend)(BIG))
    np.testing.assert_allclose(got, RULES, rtol=1e-15)
    assert calls["jvp"] == once  # not once per example
    assert_same(got, quiet(lambda: looped(adcore.grad(f, backend=backend), BIG)))


def test_the_loop_rule_does_not_run(monkeypatch):
    from adcore import batch_trace

    def refused(op, *args):
        raise AssertionError(f"the loop rule ran for op {op.name}")

    monkeypatch.setattr(batch_trace, "looped", refused)
    for f, backend in [(log1pexp_vjp(Counter()), "reverse"), (log1pexp_jvp(Counter()), "forward")]:
        np.testing.assert_allclose(quiet(lambda f=f, b=backend: grad_of_vmap(f, b)(BIG)), RULES, rtol=1e-15)


@pytest.mark.parametrize("kind", ["vjp", "jvp"])
def test_vmap_of_grad_of_a_custom_function_runs_its_rule_once(kind):
    calls = Counter()
    f = log1pexp_vjp(calls) if kind == "vjp" else log1pexp_jvp(calls)
    got = quiet(lambda: vmap(adcore.grad(f))(BIG))
    np.testing.assert_allclose(got, RULES, rtol=1e-15)
    assert max(calls.values()) == 1


def test_a_repeated_call_makes_no_new_op():
    f = log1pexp_vjp(Counter())
    quiet(lambda: grad_of_vmap(f)(BIG))
    ops = set(plugins.get_registry().ops)
    quiet(lambda: grad_of_vmap(f)(BIG))
    quiet(lambda: grad_of_vmap(f, in_axes=1)(BIG[None, :]))  # other batch axes: the same twin
    assert set(plugins.get_registry().ops) == ops


def test_the_twin_and_its_op_are_freed_with_the_function():
    def used(f):
        quiet(lambda: grad_of_vmap(f)(BIG))
        return {f.op.name, custom_batching._twins[f].op.name}

    names = used(log1pexp_vjp(Counter()))
    gc.collect()
    log1pexp_vjp(Counter())  # registering another drops the freed ones
    assert not names & set(plugins.get_registry().ops)


# --- against the loop: shared inputs, pytrees, nondiff_argnums, axes ------------------------------


def scaled_product_vjp(calls: Counter):
    """f(w, x) = sum(sin(w * x)), with bwd's cotangents for both (w shared over the batch)."""

    @adcore.custom_vjp
    def f(w, x):
        return anp.sum(anp.sin(w * x))

    def fwd(w, x):
        calls["fwd"] += 1
        return f(w, x), (w, x, "a label", None)  # residual leaves that are no arrays, and None

    def bwd(res, g):
        calls["bwd"] += 1
        w, x, label, nothing = res
        assert label == "a label" and nothing is None
        c = g * anp.cos(w * x)
        return c * x, c * w

    f.defvjp(fwd, bwd)
    return f


def scaled_product_jvp():
    @adcore.custom_jvp
    def f(w, x):
        return anp.sum(anp.sin(w * x))

    @f.defjvp
    def rule(primals, tangents):
        (w, x), (tw, tx) = primals, tangents
        return f(w, x), anp.sum(anp.cos(w * x) * (tw * x + w * tx))

    return f


@pytest.mark.parametrize("make", [scaled_product_vjp, lambda calls: scaled_product_jvp()])
@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_a_shared_inputs_cotangent_sums_over_the_batch(make, backend):
    calls = Counter()
    f = make(calls)

    def batched_loss(w, X):
        return anp.sum(vmap(f, in_axes=(None, 0))(w, X))

    gw, gX = quiet(lambda: adcore.grad(batched_loss, argnums=(0, 1), backend=backend)(W, X))
    if backend == "reverse" and calls:
        assert calls == {"fwd": 1, "bwd": 1}
    per_example = [adcore.grad(f, argnums=(0, 1), backend=backend)(W, x) for x in X]
    np.testing.assert_allclose(gw, np.sum([p[0] for p in per_example], axis=0), rtol=1e-12)
    assert_same(gX, np.stack([p[1] for p in per_example]), exact=False)


def test_pytree_arguments_with_prefix_in_axes():
    calls = Counter()

    @adcore.custom_vjp
    def layer(p, x):
        return anp.tanh(x @ p["w"] + p["b"])

    def fwd(p, x):
        calls["fwd"] += 1
        y = layer(p, x)
        return y, (p, x, y)

    def bwd(res, g):
        calls["bwd"] += 1
        p, x, y = res
        d = g * (1.0 - y * y)
        return {"w": anp.outer(x, d), "b": d}, d @ p["w"].T

    layer.defvjp(fwd, bwd)
    params = {"w": rng.normal(size=(3, 2)), "b": rng.normal(size=(5, 2))}  # a bias per example
    axes = ({"w": None, "b": 0}, 0)

    def loss(p, X):
        return anp.sum(vmap(layer, in_axes=axes)(p, X) ** 2)

    X5 = rng.normal(size=(5, 3))
    got = quiet(lambda: adcore.grad(loss, argnums=(0, 1))(params, X5))
    assert calls == {"fwd": 1, "bwd": 1}
    want = adcore.grad(lambda p, X: anp.sum(anp.tanh(X @ p["w"] + p["b"]) ** 2), argnums=(0, 1))(params, X5)
    assert_same(got, want, exact=False)


def test_nondiff_argnums_unbatched_go_through_the_rule():
    calls = Counter()

    @adcore.custom_vjp
    def clip_gradient(lo, hi, x):
        return x

    def bwd(lo, hi, res, g):
        calls["bwd"] += 1
        return (anp.clip(g, lo, hi),)

    clip_gradient.defvjp(lambda lo, hi, x: (x, None), bwd)
    clip_gradient = adcore.custom_vjp(clip_gradient.fun, nondiff_argnums=(0, 1))
    clip_gradient.defvjp(lambda lo, hi, x: (x, None), bwd)

    def loss(X):
        return anp.sum(5.0 * vmap(lambda x: clip_gradient(-1.0, 1.0, x))(X))

    got = quiet(lambda: adcore.grad(loss)(X))
    assert_same(got, np.ones_like(X))  # the rule: 5 clipped to 1
    assert calls["bwd"] == 1


def test_a_batched_nondiff_argument_loops_over_the_examples():
    @adcore.custom_vjp
    def power(n, x):
        return x**n

    power = adcore.custom_vjp(power.fun, nondiff_argnums=(0,))
    power.defvjp(lambda n, x: (x**n, x), lambda n, x, g: (g * n * x ** (n - 1),))
    n = np.array([1.0, 2.0, 3.0, 4.0])

    def loss(X):
        return anp.sum(vmap(power)(n, X))

    with pytest.warns(VmapFallbackWarning, match="nondiff_argnums"):
        got = adcore.grad(loss)(X)
    assert_same(got, np.stack([k * x ** (k - 1) for k, x in zip(n, X)]))
    with pytest.raises(adcore.errors.BatchedConversionError, match="nondiff_argnums"):
        vmap(power, fallback="error")(n, X)


@pytest.mark.parametrize("kind", ["vjp", "jvp"])
def test_batch_axes_other_than_the_first_and_nested_vmap(kind):
    f = log1pexp_vjp(Counter()) if kind == "vjp" else log1pexp_jvp(Counter())
    data = np.stack([BIG, BIG[::-1]])  # (2, 3)
    got = quiet(lambda: adcore.grad(lambda D: anp.sum(vmap(f, in_axes=1, out_axes=1)(D) * 2.0))(data))
    np.testing.assert_allclose(got, 2.0 * np.stack([RULES, RULES[::-1]]), rtol=1e-15)
    nested = vmap(vmap(f), in_axes=1)
    got = quiet(lambda: adcore.grad(lambda D: anp.sum(nested(D)))(data))
    np.testing.assert_allclose(got, np.stack([RULES, RULES[::-1]]), rtol=1e-15)


def test_bwd_returning_none_is_a_zero_cotangent():
    @adcore.custom_vjp
    def f(w, x):
        return w * x

    f.defvjp(lambda w, x: (w * x, w), lambda w, g: (None, g * w))
    gw, gX = quiet(
        lambda: adcore.grad(lambda w, X: anp.sum(vmap(f, in_axes=(None, 0))(w, X)), argnums=(0, 1))(W, X)
    )
    assert_same(gw, np.zeros(3))
    assert_same(gX, np.broadcast_to(W, X.shape) * 1.0)


# --- forward mode, higher order, float32 ----------------------------------------------------------


def test_jvp_and_jacobian_of_vmap_of_a_custom_jvp_use_the_rule():
    calls = Counter()
    f = log1pexp_jvp(calls)
    _, tangent = quiet(lambda: adcore.jvp(vmap(f), (BIG,), (np.ones(3),)))
    np.testing.assert_allclose(tangent, RULES, rtol=1e-15)
    jac = quiet(lambda: adcore.jacobian(vmap(f), backend="forward")(BIG))
    np.testing.assert_allclose(jac, np.diag(RULES), rtol=1e-15)
    jac = quiet(lambda: adcore.jacobian(vmap(f))(BIG))  # reverse: the transposed rule
    np.testing.assert_allclose(jac, np.diag(RULES), rtol=1e-15)


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_hessian_of_vmap_of_a_custom_jvp_is_the_loops(backend):
    @adcore.custom_jvp
    def softplus(x):
        return anp.log1p(anp.exp(x))

    @softplus.defjvp
    def rule(primals, tangents):
        (x,), (t,) = primals, tangents
        return softplus(x), adcore.ops.sigmoid(x) * t  # stable to second order

    x = X[0]
    got = quiet(lambda: adcore.hessian(lambda x: anp.sum(vmap(softplus)(x) * x), backend=backend)(x))
    want = adcore.hessian(lambda x: anp.sum(softplus(x) * x), backend=backend)(x)
    assert_same(got, want, exact=False)


def test_grad_of_vmap_of_a_custom_vjp_in_float32():
    f = scaled_product_vjp(Counter())
    w, X32 = W.astype(np.float32), X.astype(np.float32)
    gw, gX = quiet(
        lambda: adcore.grad(lambda w, X: anp.sum(vmap(f, in_axes=(None, 0))(w, X)), argnums=(0, 1))(w, X32)
    )
    assert gw.dtype == gX.dtype == np.float32
    per_example = [adcore.grad(f, argnums=(0, 1))(w, x) for x in X32]
    np.testing.assert_allclose(gw, np.sum([p[0] for p in per_example], axis=0), rtol=1e-5)
    assert_same(gX, np.stack([p[1] for p in per_example]), exact=False)


# --- a rule with control flow on a batched value: that part once per example -----------------------


def test_control_flow_in_bwd_runs_bwd_once_per_example():
    calls = Counter()

    @adcore.custom_vjp
    def square(x):
        return x * x

    def bwd(x, g):
        calls["bwd"] += 1
        if anp.sum(x) > 0:  # a branch on a batched residual
            return (2.0 * x * g,)
        return (-2.0 * x * g,)  # deliberately not the derivative: which branch ran shows

    square.defvjp(lambda x: (square(x), x), bwd)
    got = adcore.grad(lambda X: anp.sum(vmap(square)(X)))(X)  # no warning: only bwd loops
    want = np.stack([2.0 * x if np.sum(x) > 0 else -2.0 * x for x in X])
    assert_same(got, want)
    assert calls["bwd"] == 1 + len(X)  # the batched try, then once per example


def test_control_flow_in_fwd_and_in_the_body():
    @adcore.custom_vjp
    def f(x):
        return x * 3.0 if float(anp.sum(x)) > 0 else x * 1.0  # the body converts: once per example

    def fwd(x):
        return f(x), (1.0 if float(anp.sum(x)) > 0 else 0.0)  # so does fwd

    f.defvjp(fwd, lambda r, g: (g * 10.0 * r,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VmapFallbackWarning)  # (vmap(f) alone loops over f)
        got = adcore.grad(lambda X: anp.sum(vmap(f)(X)))(X)
    want = np.stack([np.full(3, 10.0 if np.sum(x) > 0 else 0.0) for x in X])
    assert_same(got, want)


# --- without adcore-batching ------------------------------------------------------------------------


def test_without_adcore_batching_the_rule_is_still_used(clean_plugins, monkeypatch):
    monkeypatch.setenv("ADCORE_BLOCK_PLUGINS", "batching")
    plugins.reset()
    assert "batch" not in plugins.get_registry().kinds
    calls = Counter()
    f = log1pexp_vjp(calls)
    got = quiet(lambda: grad_of_vmap(f)(BIG))
    np.testing.assert_allclose(got, RULES, rtol=1e-15)
    assert calls == {"fwd": 1, "bwd": 1}  # the twin; the ops inside it loop, without batch rules


def test_a_residual_vmap_cannot_look_into_makes_fwd_run_once_per_example():
    calls = Counter()

    @adcore.custom_vjp
    def f(x):
        return anp.sum(anp.sin(x) * x)

    def fwd(x):
        calls["fwd"] += 1
        out, pullback = adcore.vjp(lambda x: anp.sum(anp.sin(x) * x), x)
        return out, pullback  # a closure over (a batch of) x

    f.defvjp(fwd, lambda pullback, g: pullback(g))
    got = quiet(lambda: adcore.grad(lambda X: anp.sum(vmap(f)(X) * 2.0))(X))
    assert_same(got, np.stack([2.0 * (np.cos(x) * x + np.sin(x)) for x in X]), exact=False)
    assert calls["fwd"] == 1 + len(X)  # the batched try, then once per example


# --- checkpoint: its twin recomputes the body over the batch -----------------------------------------


def test_grad_of_vmap_of_a_checkpointed_function_runs_its_body_twice_for_the_batch():
    calls = Counter()

    def f(x):
        calls["body"] += 1
        return anp.sum(anp.sin(x) * x)

    got = quiet(lambda: adcore.grad(lambda X: anp.sum(vmap(adcore.checkpoint(f))(X)))(X))
    assert calls["body"] == 2  # the forward pass and the backward pass's recomputation, each batched
    assert_same(got, np.stack([np.cos(x) * x + np.sin(x) for x in X]), exact=False)


def test_grad_of_vmap_of_a_checkpointed_function_still_refuses_a_changed_recomputation():
    state = {"calls": 0}

    def drifting(x):
        state["calls"] += 1
        return anp.sum(x * state["calls"])

    with pytest.raises(adcore.errors.StateChangedError):
        adcore.grad(lambda X: anp.sum(vmap(adcore.checkpoint(drifting))(X)))(X)


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_a_custom_jvp_with_nondiff_argnums_and_a_pytree_argument(backend):
    calls = Counter()

    @adcore.custom_jvp
    def weighted(scale, p):
        return scale * anp.sum(anp.sin(p["a"]) * p["b"])

    weighted = adcore.custom_jvp(weighted.fun, nondiff_argnums=(0,))

    @weighted.defjvp
    def rule(scale, primals, tangents):
        calls["jvp"] += 1
        ((p,), (t,)) = primals, tangents
        return weighted(scale, p), scale * anp.sum(
            anp.cos(p["a"]) * t["a"] * p["b"] + anp.sin(p["a"]) * t["b"]
        )

    P = {"a": X, "b": rng.normal(size=(3,))}  # b shared by the examples

    def loss(P):
        return anp.sum(vmap(lambda p: weighted(3.0, p), in_axes=({"a": 0, "b": None},))(P))

    got = quiet(lambda: adcore.grad(loss, backend=backend)(P))
    batched_calls = calls["jvp"]
    calls.clear()
    per_example = [adcore.grad(lambda p: weighted(3.0, p), backend=backend)({"a": a, "b": P["b"]}) for a in X]
    assert batched_calls * len(X) == calls["jvp"]  # the rule ran as often for the batch as for one example
    assert_same(got["a"], np.stack([p["a"] for p in per_example]), exact=False)
    np.testing.assert_allclose(got["b"], np.sum([p["b"] for p in per_example], axis=0), rtol=1e-12)
