"""adcore.conformance.cases: the built-in composite cases, registered by the core catalogue, right on
every backend, and registered by plugins through adcore_register_cases."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
from adcore import plugins
from adcore.conformance import abilities, cases, engine
from adcore.conformance.cases import BUILTIN_CASES
from adcore.plugins import PluginWarning, get_registry

NAMES = [case.name for case in BUILTIN_CASES]
BY_NAME = {case.name: case for case in BUILTIN_CASES}
BACKENDS = [b for b in adcore.backends() if not adcore.get_backend(b).pattern]  # differentiators only
MAX_ELEMENTS = 30  # cases.py: the symbolic backend traces one symbol per element


def _rtol(backend: str) -> float:
    return 1e-6 if backend == "numeric" else 1e-10


def _assert_close(actual, expected, rtol: float) -> None:
    """Each derivative within rtol, relative to the largest entry of the expected one."""
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        want = np.asarray(want)
        assert np.shape(got) == want.shape
        scale = float(np.max(np.abs(want))) if want.size else 1.0
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)


def _derivatives(case: adcore.Case, backend: str, sample: adcore.Sample) -> tuple:
    return adcore.jacobian(case.fn, argnums=case.argnums, backend=backend)(*sample.args, **sample.params)


# interp, partition and unwrap pick elements by value, which symbolic (no numbers) refuses by name
REFUSING = {("np_interp", "symbolic"), ("np_partition", "symbolic"), ("np_unwrap", "symbolic")}


def _refused(name: str, backend: str) -> bool:
    """Whether the backend refuses the case; if so, that it does by its typed error, at every sample."""
    if (name, backend) not in REFUSING:
        return False
    case = BY_NAME[name]
    for sample in case.samples(np.random.default_rng(0), np.dtype("float64")):
        with pytest.raises(adcore.AdcoreError, match=f"backend '{backend}'"):
            _derivatives(case, backend, sample)
    return True


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# --- registered, with well-formed samples ----------------------------------------------------------


def test_every_builtin_case_is_registered_by_the_core_plugin(clean_plugins):
    registry = get_registry()
    for case in BUILTIN_CASES:
        assert registry.cases[case.name] is case
    assert registry.plugins["core"].cases == NAMES
    assert len(set(NAMES)) == len(NAMES)


def test_the_issue_asks_for_these_cases():
    # the issue: the seeds' worked examples, an MLP loss, softmax cross-entropy, a chain of 100
    # ops, broadcasting cases
    assert {"seed_example", "seed_tape", "mlp_loss", "softmax_cross_entropy", "chain_100"} <= set(NAMES)
    assert sum(name.startswith("broadcast_") for name in NAMES) >= 4


def test_each_case_is_documented():
    for case in BUILTIN_CASES:
        assert case.doc and "\n" not in case.doc.strip(), case.name


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", NAMES)
def test_samples_are_small_finite_and_in_the_requested_dtype(name, dtype):
    case = BY_NAME[name]
    samples = case.samples(np.random.default_rng(0), np.dtype(dtype))
    assert samples
    for sample in samples:
        assert all(0 <= i < len(sample.args) for i in case.argnums)
        for arg in sample.args:
            assert isinstance(arg, np.ndarray) and arg.dtype == np.dtype(dtype)
            assert np.all(np.isfinite(arg))
            assert arg.size <= MAX_ELEMENTS
        assert np.all(np.isfinite(case.fn(*sample.args, **sample.params)))


@pytest.mark.parametrize("name", NAMES)
def test_samples_depend_only_on_the_seed(name):
    # the engine reproduces a failure from its seed
    case = BY_NAME[name]
    first, again = (case.samples(np.random.default_rng(7), np.dtype("float64")) for _ in range(2))
    for a, b in zip(first, again, strict=True):
        for x, y in zip(a.args, b.args, strict=True):
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_relu_net_samples_keep_relu_away_from_its_kink(seed, dtype):
    for sample in BY_NAME["seed_relu_net"].samples(np.random.default_rng(seed), np.dtype(dtype)):
        w1, _, x, _ = sample.args
        assert np.min(np.abs(x @ w1)) >= cases.RELU_KINK_GAP


# --- every backend agrees ---------------------------------------------------------------------------


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "reverse"])
@pytest.mark.parametrize("name", NAMES)
def test_every_backend_agrees_with_reverse_in_float64(name, backend):
    case = BY_NAME[name]
    if _refused(name, backend):
        return
    for sample in case.samples(np.random.default_rng(0), np.dtype("float64")):
        expected = _derivatives(case, "reverse", sample)
        _assert_close(_derivatives(case, backend, sample), expected, _rtol(backend))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", NAMES)
def test_float32_samples_give_float32_derivatives(name, backend):
    case = BY_NAME[name]
    if _refused(name, backend):
        return
    sample = case.samples(np.random.default_rng(0), np.dtype("float32"))[-1]
    derivatives = _derivatives(case, backend, sample)
    assert len(derivatives) == len(case.argnums)
    assert all(d.dtype == np.float32 for d in derivatives)


# --- known values ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_seed_example_at_the_seeds_point(backend):
    # seeds 001 and 004: at (2, 5), df/dx1 = 1/x1 + x2 = 5.5, df/dx2 = x1 - cos x2 = 2 - cos 5
    grads = adcore.grad(cases.seed_example, argnums=(0, 1), backend=backend)(2.0, 5.0)
    _assert_close(grads, (5.5, 2 - np.cos(5.0)), _rtol(backend))


@pytest.mark.parametrize("backend", BACKENDS)
def test_seed_tape_at_the_seeds_point(backend):
    # seed 003 (应用示例): a = 10, b = 5, d = (a b)^2 prints "500.0 1000.0"
    grads = adcore.grad(cases.seed_tape, argnums=(0, 1), backend=backend)(10.0, 5.0)
    _assert_close(grads, (500.0, 1000.0), _rtol(backend))


@pytest.mark.parametrize("backend", BACKENDS)
def test_seed_sigmoid_derivative_is_z_times_one_minus_z(backend):
    # seed 001 (Sigmoid算子): dz/dx = (1 - z) z
    x = np.linspace(-4.0, 4.0, 5)
    z = 1 / (1 + np.exp(-x))
    _assert_close(
        (adcore.jacobian(cases.seed_sigmoid, backend=backend)(x),), (np.diag(z * (1 - z)),), _rtol(backend)
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_seed_softmax_jacobian_is_diag_z_minus_z_z_transposed(backend):
    # seed 001 (Softmax算子) derives the diagonal, (1 - z_i) z_i; off it, -z_i z_j
    x = np.array([0.3, -1.2, 2.0, 0.7])
    z = _softmax(x)
    jac = adcore.jacobian(cases.seed_softmax, backend=backend)(x)
    _assert_close((jac,), (np.diag(z) - np.outer(z, z),), _rtol(backend))
    np.testing.assert_allclose(np.diag(jac), z * (1 - z), rtol=_rtol(backend))


@pytest.mark.parametrize("backend", BACKENDS)
def test_softmax_cross_entropy_gradient_is_softmax_minus_labels_over_batch(backend):
    case = BY_NAME["softmax_cross_entropy"]
    for sample in case.samples(np.random.default_rng(1), np.dtype("float64")):
        logits, labels = sample.args
        expected = (_softmax(logits) - labels) / logits.shape[0]
        _assert_close(_derivatives(case, backend, sample), (expected,), _rtol(backend))


def _mlp_backprop(w1, b1, w2, b2, x, targets):
    """mlp_loss's gradients by hand: the chain rule layer by layer, as seed 002 §3.4 does."""
    hidden = np.tanh(x @ w1 + b1)
    residual = hidden @ w2 + b2 - targets
    d_out = 2 * residual / residual.size
    d_pre = (d_out @ w2.T) * (1 - hidden**2)
    return x.T @ d_pre, d_pre.sum(axis=0), hidden.T @ d_out, d_out.sum(axis=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_mlp_loss_gradient_matches_a_hand_written_backprop(backend):
    case = BY_NAME["mlp_loss"]
    for seed in range(3):
        (sample,) = case.samples(np.random.default_rng(seed), np.dtype("float64"))
        _assert_close(_derivatives(case, backend, sample), _mlp_backprop(*sample.args), _rtol(backend))


def _relu_net_backprop(w1, w2, x, labels):
    """seed_relu_net's gradients by hand, following seed 002 §3.4: the relu branch zeroes the
    gradient where its input is negative; weight decay adds 2 λ W."""
    pre = x @ w1
    hidden = np.maximum(pre, 0)
    d_logits = (_softmax(hidden @ w2) - labels) / x.shape[0]
    d_pre = (d_logits @ w2.T) * (pre > 0)
    decay = 2 * cases.WEIGHT_DECAY
    return x.T @ d_pre + decay * w1, hidden.T @ d_logits + decay * w2


@pytest.mark.parametrize("backend", BACKENDS)
def test_seed_relu_net_gradient_matches_the_seeds_backprop(backend):
    case = BY_NAME["seed_relu_net"]
    (sample,) = case.samples(np.random.default_rng(0), np.dtype("float64"))
    _assert_close(_derivatives(case, backend, sample), _relu_net_backprop(*sample.args), _rtol(backend))


# the chain's steps as (value, derivative), written out again independently of cases.py
_CHAIN_STEPS = (
    (np.sin, np.cos),
    (np.tanh, lambda v: 1 - np.tanh(v) ** 2),
    (lambda v: 1 / (1 + np.exp(-v)), lambda v: np.exp(-v) / (1 + np.exp(-v)) ** 2),
    (lambda v: 4 * v, lambda v: np.full_like(v, 4.0)),
    (lambda v: v - 2, np.ones_like),
    (np.expm1, np.exp),
    (np.log1p, lambda v: 1 / (1 + v)),
    (np.negative, lambda v: -np.ones_like(v)),
    (np.arctan, lambda v: 1 / (1 + v**2)),
    (np.negative, lambda v: -np.ones_like(v)),
)


def _chain_forward_mode(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """chain_100's value and derivative, carried forward together step by step (seed 001's dual numbers)."""
    value, tangent = x, np.ones_like(x)
    for step in range(100):
        f, df = _CHAIN_STEPS[step % len(_CHAIN_STEPS)]
        value, tangent = f(value), tangent * df(value)
    return value, tangent


@pytest.mark.parametrize("backend", BACKENDS)
def test_chain_100_matches_a_hand_written_forward_mode(backend):
    x = np.array([-1.5, -0.4, 0.1, 0.9])
    value, tangent = _chain_forward_mode(x)
    np.testing.assert_allclose(cases.chain_100(x), value, rtol=1e-12)  # so it is these 100 steps
    assert np.all(np.abs(tangent) > 1e-4)  # neither vanished ...
    assert np.all(np.abs(value) < 1)  # ... nor blew up
    jac = adcore.jacobian(cases.chain_100, backend=backend)(x)
    _assert_close((jac,), (np.diag(tangent),), _rtol(backend))


@pytest.mark.parametrize("backend", BACKENDS)
def test_broadcast_gradients_follow_the_seeds_reduced_sums(backend):
    # seed 001 (元素级运算, 矩阵级运算): with l = sum(c), ∇a = ReducedSum(∇c ⊗ b, dim=1),
    # ∇b = ∇c ⊗ a; for c = a × b, ∇a = ReducedSum(∇c × b^T, dim=0), ∇b = a^T × ∇c
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(2, 1)), rng.normal(size=(2, 2))
    grads = adcore.grad(lambda a, b: np.sum(cases.broadcast_multiply(a, b)), (0, 1), backend=backend)(a, b)
    _assert_close(grads, (b.sum(axis=1, keepdims=True), np.broadcast_to(a, (2, 2))), _rtol(backend))
    grads = adcore.grad(lambda a, b: np.sum(cases.broadcast_add(a, b)), (0, 1), backend=backend)(a, b)
    _assert_close(grads, (np.full((2, 1), 2.0), np.ones((2, 2))), _rtol(backend))
    a, b = rng.normal(size=(2, 1)), rng.normal(size=(4, 1, 3))
    grads = adcore.grad(lambda a, b: np.sum(a @ b), (0, 1), backend=backend)(a, b)
    d_c = np.ones((4, 2, 3))
    expected = ((d_c @ b.transpose(0, 2, 1)).sum(axis=0), a.T @ d_c)
    _assert_close(grads, expected, _rtol(backend))


# every built-in case passing on every backend is test_engine.py's full report, one item a subject


# --- cases from plugins ---------------------------------------------------------------------------------


def _double_sin(x):
    """2 sin x, a throwaway plugin's case."""
    return 2 * np.sin(x)


def _case_plugin(*registered):
    """A throwaway plugin registering each of `registered` as a case."""

    class CasePlugin:
        @adcore.hookimpl
        def adcore_register_cases(self, register):
            for case in registered:
                register(case)

    return CasePlugin()


def _sine_case(name: str = "plugin_double_sin") -> adcore.Case:
    draw = lambda rng, dtype: [adcore.Sample((rng.uniform(-2, 2, 3).astype(dtype),))]  # noqa: E731
    return adcore.Case(name, _double_sin, draw, doc=_double_sin.__doc__)


def test_a_plugin_registered_case_is_checked_like_a_builtin(register_plugin):
    case = _sine_case()
    registry = register_plugin(_case_plugin(case), "case_plugin")
    assert registry.cases["plugin_double_sin"] is case
    assert registry.plugins["case_plugin"].cases == ["plugin_double_sin"]
    assert plugins.failures() == {}
    report = engine.run(ops=[], cases=["plugin_double_sin"])
    assert report.ok
    # every installed backend's columns, the pattern backends' too
    assert {c.backend for c in report.cells} == set(abilities.columns(adcore.backends()))
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(adcore.jacobian(case.fn)(x), np.diag(2 * np.cos(x)))


def test_a_case_name_clashing_with_a_builtin_is_rejected_naming_both_plugins(register_plugin):
    with pytest.warns(PluginWarning, match="'clashing_cases'"):
        registry = register_plugin(
            _case_plugin(_sine_case("own_case"), _sine_case("mlp_loss")), "clashing_cases"
        )
    reason = plugins.failures()["clashing_cases"]
    for word in ("PluginError", "'mlp_loss'", "'core'", "'clashing_cases'"):
        assert word in reason, f"{word!r} not in {reason!r}"
    assert registry.cases["mlp_loss"] is BY_NAME["mlp_loss"]
    assert "own_case" not in registry.cases  # the whole plugin is rolled back


def test_two_plugins_registering_one_case_name_are_both_named(register_plugin):
    register_plugin(_case_plugin(_sine_case("shared_case")), "first_cases")
    with pytest.warns(PluginWarning):
        registry = register_plugin(_case_plugin(_sine_case("shared_case")), "second_cases")
    reason = plugins.failures()["second_cases"]
    assert "'first_cases'" in reason and "'second_cases'" in reason and "'shared_case'" in reason
    assert registry.plugins["first_cases"].cases == ["shared_case"]


def test_registering_something_other_than_a_case_is_rejected(register_plugin):
    with pytest.warns(PluginWarning, match="'not_a_case'"):
        register_plugin(_case_plugin(_double_sin), "not_a_case")
    reason = plugins.failures()["not_a_case"]
    assert "PluginError" in reason
    assert "register() takes an adcore.Case" in reason
    assert "_double_sin" in reason  # what was registered instead


def test_an_invalid_case_is_rejected_when_it_is_made():
    draw = BY_NAME["seed_tape"].samples
    with pytest.raises(ValueError, match="'mlp loss'.*identifier"):
        adcore.Case("mlp loss", _double_sin, draw)
    with pytest.raises(TypeError, match="'not_callable'"):
        adcore.Case("not_callable", "2 sin x", draw)


def test_a_plugin_making_an_invalid_case_is_reported_with_the_reason(register_plugin):
    class BadName:
        @adcore.hookimpl
        def adcore_register_cases(self, register):
            register(adcore.Case("9lives", _double_sin, BY_NAME["seed_tape"].samples))

    with pytest.warns(PluginWarning, match="'bad_case_name'"):
        registry = register_plugin(BadName(), "bad_case_name")
    assert "ValueError" in plugins.failures()["bad_case_name"]
    assert "'9lives'" in plugins.failures()["bad_case_name"]
    assert set(NAMES) <= set(registry.cases)  # the built-ins are unaffected
