"""adcore-scipy's batch rules (adcore_scipy.batch_rules) against a loop: each op's samples drawn three times
(a batch of three examples), the rule on the stacked inputs (batch axis first, second, last; each input
not batched in turn) against the op on each example, stacked; the same through adcore.vmap and under
grad; the ops left to the loop; and the rules' registration whichever order adcore-batching loads in,
or when it is blocked."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_scipy.batch_rules import BATCH_RULES
from adcore_scipy.linalg.ops import solve_sylvester
from adcore_scipy.signal.ops import signal_convolve
from batch_rule_cases import (
    assert_same,
    batch_rules_of,
    batches,
    cases,
    check,
    layouts,
    looped,
    registry_with_batching_loaded_after,
    registry_without_batching,
    vmapped,
)

import adcore
import adcore.numpy as anp
from adcore.errors import LinearAlgebraError
from adcore.plugins import get_registry

LEFT_TO_THE_LOOP = {"spd_inverse", "odeint"}


def _scipy_ops(elementwise: bool) -> list[str]:
    registry = get_registry()
    return sorted(n for n in registry.plugins["scipy"].ops if registry.ops[n].elementwise == elementwise)


def covered(name: str, dims: tuple, examples: list, params: dict) -> bool:
    """Whether the op's rule computes the call (else it is NotImplemented: the loop's)."""
    if name == "multivariate_normal_logpdf":
        return dims[2] is None
    if name == "solve_banded":
        return dims[0] is None
    if name == "signal_convolve":
        if None not in dims or params["method"] != "direct" or np.ndim(examples[0][0]) < 2:
            return False
        i = 0 if dims[0] is not None else 1
        shapes = [np.shape(x) for x in examples[0]]
        fits = all(m >= n for m, n in zip(shapes[i], shapes[1 - i]))
        return {"full": True, "same": i == 0, "valid": fits}[params["mode"]]
    return True


CASES = cases(sorted(BATCH_RULES), (np.float64, np.float32, np.complex128))


@pytest.mark.parametrize(("name", "dtype", "k"), CASES)
def test_rule_matches_the_loop(name: str, dtype: type, k: int) -> None:
    examples, params = batches(name, dtype)[k]
    # bit for bit: every rule computes each example's matrix, rows or columns as the op does alone
    for dims in layouts(examples):
        assert check(name, examples, params, dims) == covered(name, dims, examples, params), dims


@pytest.mark.parametrize(("name", "dtype", "k"), CASES)
def test_vmap_of_the_op_matches_the_loop(name: str, dtype: type, k: int) -> None:
    examples, params = batches(name, dtype)[k]
    for dims in layouts(examples):
        assert_same(vmapped(name, examples, dims, params), looped(name, examples, dims, params))


def test_every_op_of_the_plugin_has_a_rule_its_flag_or_is_left_to_the_loop() -> None:
    registry = get_registry()
    assert set(_scipy_ops(elementwise=False)) == set(BATCH_RULES) | LEFT_TO_THE_LOOP
    assert not set(registry.rules["batch"]) & (LEFT_TO_THE_LOOP | set(_scipy_ops(elementwise=True)))


@pytest.mark.parametrize("name", sorted(LEFT_TO_THE_LOOP))
def test_vmap_of_an_op_left_to_the_loop_is_the_loop(name: str) -> None:
    examples, params = batches(name, np.float64)[0]
    for dims in layouts(examples)[:1] + layouts(examples)[-1:]:
        assert_same(vmapped(name, examples, dims, params), looped(name, examples, dims, params))


def test_vmap_of_an_elementwise_special_function_needs_no_rule() -> None:
    import scipy.special

    x = np.random.default_rng(0).uniform(0.5, 3.0, (4, 3))
    out = adcore.vmap(lambda x: scipy.special.gammaln(x) * scipy.special.erf(x[::-1]))(x)
    assert_same(out, np.stack([scipy.special.gammaln(r) * scipy.special.erf(r[::-1]) for r in x]))


@pytest.mark.parametrize(
    ("shape", "taps", "covered"),
    [((16, 16), (3, 3), True), ((30, 30), (7, 7), False), ((4, 5, 6), (2, 2, 2), True)],
)
def test_convolve_auto_runs_what_scipy_chooses_for_one_example(shape, taps, covered) -> None:
    # direct for one 16x16 example by 3x3 (fft for the batch of 8 as one array: the rule asks for one
    # example's choice); fft for 30x30 by 7x7: the loop, whose each call runs SciPy's fft
    import scipy.signal

    rng = np.random.default_rng(4)
    xs, kernel = rng.standard_normal((8, *shape)), rng.standard_normal(taps)
    choice = scipy.signal.choose_conv_method(xs[0], kernel, mode="same")
    assert choice == ("direct" if covered else "fft")
    result = BATCH_RULES["signal_convolve"]((0, None), xs, kernel, mode="same", method="auto")
    assert (result is not NotImplemented) == covered
    out = adcore.vmap(lambda x: signal_convolve(x, kernel, mode="same", method="auto"))(xs)
    assert_same(out, np.stack([scipy.signal.convolve(x, kernel, mode="same") for x in xs]))


def test_a_stack_of_sylvester_equations_refuses_each_as_alone() -> None:
    # a well-posed equation at scale 1e-9 beside one at 1e6: the batch refused neither (it read the
    # stack's largest entry as every equation's scale, and refused the small one)
    a = np.stack([1e-9 * np.array([[2.0, 0.3], [0.1, 1.5]]), 1e6 * np.array([[3.0, 0.2], [0.4, 2.0]])])
    q = np.ones((2, 2, 2))
    out = adcore.vmap(solve_sylvester)(a, a, q)
    assert_same(out, np.stack([solve_sylvester.impl(x, x, y) for x, y in zip(a, q)]))
    singular = np.array([[1.0, 0.0], [0.0, -1.0]])  # eigenvalues 1 and -1: 1 + (-1) = 0
    with pytest.raises(LinearAlgebraError, match="solve_sylvester"):
        adcore.vmap(solve_sylvester)(np.stack([a[1], singular]), np.stack([a[1], singular]), q)


def _mvn_loss(mean, x, cov):
    from adcore_scipy.stats import multivariate_normal

    return -anp.sum(multivariate_normal.logpdf(x, mean, cov))


def test_per_example_gradients_through_the_rules_match_a_loop_of_grad() -> None:
    rng = np.random.default_rng(5)
    c = rng.standard_normal((3, 3))
    cov, mean, xs = c @ c.T + 3 * np.eye(3), rng.standard_normal(3), rng.standard_normal((4, 5, 3))
    batched = adcore.vmap(adcore.grad(_mvn_loss), in_axes=(None, 0, None))(mean, xs, cov)
    expected = np.stack([adcore.grad(_mvn_loss)(mean, x, cov) for x in xs])
    np.testing.assert_allclose(batched, expected, rtol=1e-12, atol=1e-12 * np.max(np.abs(expected)))
    a = rng.standard_normal((4, 3, 3)) / 2

    def loss(a):
        return anp.sum(anp.expm(a) ** 2)

    batched = adcore.vmap(adcore.grad(loss))(a)
    expected = np.stack([adcore.grad(loss)(x) for x in a])
    np.testing.assert_allclose(batched, expected, rtol=1e-12, atol=1e-12 * np.max(np.abs(expected)))


def test_grad_of_a_vmapped_loss_matches_the_summed_loop() -> None:
    rng = np.random.default_rng(6)
    ab, bs = rng.standard_normal((3, 6)), rng.standard_normal((4, 6))
    ab[1] += 4.0

    def loss(ab, b):
        from adcore_scipy.linalg import solve_banded

        return anp.sum(solve_banded((1, 1), ab, b) ** 2)

    total = adcore.grad(lambda ab: anp.sum(adcore.vmap(loss, in_axes=(None, 0))(ab, bs)))(ab)
    expected = sum(adcore.grad(loss)(ab, b) for b in bs)
    np.testing.assert_allclose(total, expected, rtol=1e-12, atol=1e-12 * np.max(np.abs(expected)))


# --- registration: the kind is adcore-batching's, the rules this plugin's own -----------------------------


def test_the_plugin_registers_its_batch_rules(clean_plugins) -> None:
    assert sorted(batch_rules_of(get_registry(), "scipy")) == sorted(BATCH_RULES)


def test_its_batch_rules_wait_for_adcore_batching_loading_after_it(register_plugin, monkeypatch) -> None:
    # the first stage, up to symbolic, loads past scipy; the kind "batch" is declared in the rest
    registry = registry_with_batching_loaded_after("scipy", "symbolic", register_plugin, monkeypatch)
    assert sorted(batch_rules_of(registry, "scipy")) == sorted(BATCH_RULES)
    a = np.stack([np.zeros((2, 2)), np.eye(2)])
    assert_same(adcore.vmap(anp.expm)(a), np.stack([np.eye(2), np.e * np.eye(2)]))


def test_its_batch_rules_are_set_aside_when_adcore_batching_is_blocked(clean_plugins, monkeypatch) -> None:
    registry = registry_without_batching("scipy", monkeypatch)
    assert not set(registry.rules["batch"]) & set(BATCH_RULES)
    a = np.random.default_rng(7).standard_normal((3, 2, 2))
    assert_same(adcore.vmap(anp.expm)(a), np.stack([anp.expm(x) for x in a]))  # the loop rule
